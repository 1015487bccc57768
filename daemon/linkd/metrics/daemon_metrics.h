// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a daemon (and a farm node) tells Prometheus: its counters, gauges and
// latency histograms in the text exposition format, under Prometheus's
// naming rules (`linkd_` prefix, `_total` counters, base units: seconds,
// bytes; labels with bounded values only).
//
// The counters are `linkd stats --json`'s (the same numbers under other
// names, docs/usage.md has the table), so a scrape and `linkd stats` agree;
// the gauges and histograms are the running daemon's. Any source may be
// absent (no cache, no farm, not a node, no daemon at all for `linkd
// metrics` reading the cache directory): its metrics are then left out.
// `linkd metrics` asks a running daemon over its socket (MetricsService).
#pragma once

#include "linkd/v1/metrics.grpc.pb.h"

#include <cstdint>
#include <functional>
#include <string>

namespace linkd {

class CacheStats;
class LocalStore;
class RemoteTiers;
class OffloadTarget;
class LinkService;
class FarmService;

struct MetricsSources {
  const CacheStats *stats = nullptr;
  LocalStore *store = nullptr;
  uint64_t storeMaxBytes = 0;
  RemoteTiers *remote = nullptr;
  OffloadTarget *farm = nullptr;
  const LinkService *service = nullptr; // a running daemon
  const FarmService *node = nullptr;    // a farm node
  std::string lldVersion;
  int64_t startTimeSeconds = 0; // Unix time the daemon started; 0: none
};

std::string renderMetrics(const MetricsSources &s);

// The Metrics call on the daemon's socket (`linkd metrics`): what `render`
// gives, the text metrics_listen serves.
class MetricsService final : public v1::LinkdMetrics::Service {
public:
  explicit MetricsService(std::function<std::string()> render)
      : render(std::move(render)) {}
  grpc::Status Metrics(grpc::ServerContext *, const v1::MetricsRequest *,
                       v1::MetricsReply *reply) override {
    reply->set_text(render());
    return grpc::Status::OK;
  }

private:
  std::function<std::string()> render;
};

} // namespace linkd
