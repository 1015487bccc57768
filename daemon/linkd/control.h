// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd status`, `stop`, `stats`, `config`, `cache`: small gRPC clients of
// a running daemon (stats, config and cache also work without one).
#pragma once

#include <optional>
#include <string>

namespace linkd {

int printStatus(bool json);
int stopDaemon();
// `linkd rewrite ...` through the running daemon's Rewrite RPC (cached like a
// link). nullopt: no daemon (or LINKD_DISABLE=1); run it locally.
std::optional<int> rewriteThroughDaemon(int argc, char **argv);
// `linkd stats [--json] [--zero] [--all]`: from the running daemon, or
// straight from the cache directory when none runs (creating nothing).
struct StatsOptions {
  bool json = false, zero = false, all = false;
};
int printStats(const StatsOptions &opts);
// `linkd config`: the running daemon's settings and their sources, else
// those a daemon started now would have; config-file mistakes on stderr.
int printConfig(int argc, char **argv);
// `linkd metrics`: the running daemon's Prometheus text, else the cache
// directory's counters in the same form (no daemon gauges).
int printMetrics();
// `linkd cache clear|trim`.
int cacheControl(const std::string &op);

} // namespace linkd
