// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/metrics/daemon_metrics.h"

#include "cache/cache_stats.h"
#include "daemon/linkd/farm_client/farm_client.h"
#include "daemon/linkd/farm_node/farm_service.h"
#include "daemon/linkd/service/link_service.h"
#include "metrics/prometheus_text.h"
#include "store/local_store.h"
#include "store/remote_tiers.h"

#include <map>

namespace linkd {
namespace {

double d(uint64_t n) { return static_cast<double>(n); }

// Requests by kind and outcome, with the `linkd stats` counter of each.
void requests(PrometheusText &m, const CacheStats::Snapshot &s) {
  const char *help = "Requests by kind (link, archive, kernel) and cache "
                     "outcome (hit, miss, uncacheable, off, error)";
  struct Kind {
    const char *label, *prefix;
  };
  for (Kind k : {Kind{"link", ""}, Kind{"archive", "archive_"},
                 Kind{"kernel", "kernel_"}}) {
    std::string p = k.prefix;
    for (auto [outcome, key] :
         {std::pair{"hit", "hits"}, std::pair{"miss", "misses"},
          std::pair{"uncacheable", "uncacheable"},
          std::pair{"off", "cache_disabled"}, std::pair{"error", "errors"}})
      m.counter("linkd_requests_total", help, d(s.get(p + key)),
                {{"kind", k.label}, {"outcome", outcome}});
  }
  // Reasons, folded to bounded label values (a reason naming a file counts
  // under its kind of reason).
  const char *rhelp = "Uncacheable requests by kind and reason";
  for (auto [kind, reasons] :
       {std::pair{"link", &s.uncacheableReasons},
        std::pair{"archive", &s.archiveUncacheableReasons}}) {
    std::map<std::string, uint64_t> folded;
    for (const auto &[reason, n] : *reasons)
      folded[boundedLabel(reason)] += n;
    for (const auto &[reason, n] : folded)
      m.counter("linkd_uncacheable_requests_total", rhelp, d(n),
                {{"kind", kind}, {"reason", reason}});
  }
}

void store(PrometheusText &m, const CacheStats::Snapshot &s,
           const MetricsSources &src) {
  m.counter("linkd_results_stored_total",
            "Link results written to the local store",
            d(s.get("results_stored")));
  const std::string notStored = "not_stored_reason.";
  std::map<std::string, uint64_t> folded;
  for (const auto &[k, n] : s.counters)
    if (k.starts_with(notStored))
      folded[boundedLabel(k.substr(notStored.size()))] += n;
  for (const auto &[reason, n] : folded)
    m.counter("linkd_results_not_stored_total",
              "Successful links whose result was not stored, by reason", d(n),
              {{"reason", reason}});
  m.counter("linkd_stored_bytes_total", "Bytes of results stored",
            d(s.get("bytes_written")));
  m.counter("linkd_served_bytes_total",
            "Bytes of outputs served from the cache on hits",
            d(s.get("bytes_read")));
  m.counter("linkd_time_saved_seconds_total", "Link time the cache hits saved",
            d(s.get("time_saved_micros")) / 1e6);
  m.counter("linkd_evictions_total", "Store entries evicted",
            d(s.get("evictions")));
  m.counter("linkd_corrupt_entries_total",
            "Store entries found corrupt (each was a miss)",
            d(s.get("corrupt_entries")));
  m.counter("linkd_corrupt_hits_total",
            "Cache hits whose result could not be used",
            d(s.get("corrupt_hits")));
  if (src.store) {
    StoreUsage u = src.store->usage();
    m.gauge("linkd_store_bytes", "Bytes in the local store", d(u.bytes));
    m.gauge("linkd_store_entries", "Link results in the local store",
            d(u.entries));
    m.gauge("linkd_store_max_bytes", "The local store's size cap (max_size)",
            d(src.storeMaxBytes));
  }
}

void remote(PrometheusText &m, RemoteTiers *tiers) {
  RemoteCounters none;
  std::map<std::string, uint64_t> c =
      tiers ? tiers->counters().snapshot() : none.snapshot();
  struct Row {
    const char *name, *key, *help;
  };
  for (Row r :
       {Row{"linkd_remote_hits_total", "remote_hits",
            "Remote tier lookups that found the entry"},
        {"linkd_remote_misses_total", "remote_misses",
         "Remote tier lookups that did not"},
        {"linkd_remote_errors_total", "remote_errors",
         "Remote tier requests that failed"},
        {"linkd_remote_timeouts_total", "remote_timeouts",
         "Remote tier requests that timed out"},
        {"linkd_remote_read_bytes_total", "remote_bytes_read",
         "Bytes read from remote tiers"},
        {"linkd_remote_written_bytes_total", "remote_bytes_written",
         "Bytes written to remote tiers"},
        {"linkd_remote_writes_total", "remote_writes", "Remote tier writes"},
        {"linkd_remote_writes_dropped_total", "remote_writes_dropped",
         "Remote writes dropped (queue full)"},
        {"linkd_remote_rejected_total", "remote_rejected",
         "Remote entries rejected (bad or missing signature, or written for "
         "another key)"},
        {"linkd_remote_corrupt_total", "remote_corrupt",
         "Remote blobs whose content did not match their digest"},
        {"linkd_remote_breaker_trips_total", "remote_breaker_trips",
         "Times a remote tier's circuit breaker opened"},
        {"linkd_remote_skipped_total", "remote_skipped_breaker_open",
         "Remote requests skipped while a breaker was open"},
        {"linkd_remote_backfills_total", "remote_backfills",
         "Remote entries copied into the local store"},
        {"linkd_remote_refills_total", "remote_refills",
         "Entries and blobs written to a tier that missed them, from the "
         "next tier"},
        {"linkd_remote_healed_total", "remote_healed",
         "Corrupt remote blobs replaced with the right bytes"}})
    m.counter(r.name, r.help, d(c[r.key]));
  if (tiers) {
    for (const auto &[name, open] : tiers->breakers())
      m.gauge("linkd_remote_breaker_open",
              "1 while the tier's circuit breaker is open", open ? 1 : 0,
              {{"tier", name}});
    for (const RemoteTiers::TierCounts &t : tiers->tierCounts())
      for (const auto &[outcome, n] : t.outcomes)
        m.counter("linkd_remote_tier_requests_total",
                  "Requests to each remote tier by outcome (a hit whose "
                  "blob proved corrupt counts as hit and corrupt)",
                  static_cast<double>(n),
                  {{"tier", t.name}, {"outcome", outcome}});
  }
}

void farmClient(PrometheusText &m, OffloadTarget *farm) {
  FarmCounters none;
  std::map<std::string, uint64_t> c =
      farm ? farm->counters().snapshot() : none.snapshot();
  struct Row {
    const char *name, *key, *help;
  };
  for (Row r : {Row{"linkd_farm_offloads_total", "farm_offloaded",
                    "Links offloaded to the farm"},
                {"linkd_farm_fallbacks_total", "farm_fallbacks",
                 "Offloads that failed and were linked locally"},
                {"linkd_farm_not_offloadable_total", "farm_not_offloadable",
                 "Links the farm sandbox could not run (linked locally)"},
                {"linkd_farm_rejected_total", "farm_rejected",
                 "Farm answers refused (an output the link could not write)"},
                {"linkd_farm_retries_total", "farm_retries",
                 "Offloads retried on another node"},
                {"linkd_farm_upload_bytes_total", "farm_bytes_up",
                 "Bytes sent to farm nodes"},
                {"linkd_farm_download_bytes_total", "farm_bytes_down",
                 "Bytes received from farm nodes"},
                {"linkd_farm_blobs_uploaded_total", "farm_blobs_uploaded",
                 "Input blobs uploaded to farm nodes"},
                {"linkd_farm_blobs_skipped_total", "farm_blobs_skipped",
                 "Input blobs the node already had"},
                {"linkd_farm_round_trips_total", "farm_round_trips",
                 "Questions farm nodes asked"}})
    m.counter(r.name, r.help, d(c[r.key]));
  m.counter("linkd_farm_remote_link_seconds_total",
            "Time offloaded links took on the nodes",
            d(c["farm_remote_link_micros"]) / 1e6);
  m.gauge("linkd_farm_oldest_offload_seconds",
          "Age of the oldest offload under way (0: none)",
          farm ? farm->oldestOffloadSeconds() : 0);
}

void service(PrometheusText &m, const LinkService &s) {
  m.gauge("linkd_jobs", "Links that may run at once (jobs)", s.jobs());
  m.gauge("linkd_active_links",
          "Requests being served (looked up, queued, linking)",
          s.activeLinks());
  m.gauge("linkd_queued_links", "Links waiting for a job slot",
          s.queuedLinks());
  m.gauge("linkd_idle_workers",
          "Job slots free: a link arriving now starts at once", s.freeSlots());
  const char *help = "Links the daemon ran (from a job slot to the answer) "
                     "or offloaded (the whole offload)";
  m.histogram("linkd_link_duration_seconds", help,
              s.timings().localLinks.snapshot(), {{"where", "local"}});
  m.histogram("linkd_link_duration_seconds", help,
              s.timings().farmLinks.snapshot(), {{"where", "farm"}});
  m.histogram("linkd_lookup_duration_seconds",
              "Cache lookups (key to hit or miss)",
              s.timings().lookups.snapshot());
}

void node(PrometheusText &m, const FarmService &n) {
  FarmService::Counts c = n.counts();
  m.gauge("linkd_node_serving",
          "1 while the farm node accepts offloads, 0 while it drains",
          n.isDraining() ? 0 : 1);
  m.counter("linkd_node_links_total", "Offloaded links the node accepted",
            d(c.links));
  const char *help = "Offloads the node refused, by reason";
  m.counter("linkd_node_rejected_total", help, d(c.rejectedUnauthenticated),
            {{"reason", "unauthenticated"}});
  m.counter("linkd_node_rejected_total", help, d(c.rejectedLimit),
            {{"reason", "token_limit"}});
  m.counter("linkd_node_rejected_total", help, d(c.rejectedDraining),
            {{"reason", "draining"}});
  m.gauge("linkd_node_jobs", "Offloaded links that may run at once", c.jobs);
  m.gauge("linkd_node_active_links", "Offloaded links in progress", c.active);
  m.gauge("linkd_node_queued_links", "Offloaded links waiting for a job slot",
          c.queued);
  m.gauge("linkd_node_idle_workers", "The node's free job slots", c.freeSlots);
  m.gauge("linkd_node_store_bytes", "Bytes in the node's input blob store",
          d(c.storeBytes));
  m.histogram("linkd_node_link_duration_seconds",
              "Offloaded links, from the first message to the answer",
              n.linkTimes().snapshot());
}

} // namespace

std::string renderMetrics(const MetricsSources &src) {
  PrometheusText m;
  m.gauge("linkd_build_info", "linkd's and LLD's versions", 1,
          {{"version", LINKD_VERSION}, {"lld_version", src.lldVersion}});
  if (src.startTimeSeconds)
    m.gauge("linkd_start_time_seconds", "When the daemon started (Unix time)",
            d(static_cast<uint64_t>(src.startTimeSeconds)));
  if (src.stats) {
    CacheStats::Snapshot s = src.stats->snapshot();
    requests(m, s);
    store(m, s, src);
  }
  remote(m, src.remote);
  farmClient(m, src.farm);
  if (src.service)
    service(m, *src.service);
  if (src.node)
    node(m, *src.node);
  return m.str();
}

} // namespace linkd
