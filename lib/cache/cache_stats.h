// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Cache counters, as `linkd stats` shows them.
//
// Every link request is counted exactly once as a hit, a miss, uncacheable
// (with its reason) or an error (the daemon could not run it); `requests` is
// their sum plus links with caching turned off. Archive requests (ar.linkd,
// ranlib.linkd, lib.linkd) are counted the same way in counters of their own
// (archive_requests, archive_hits, ...), so link figures stay link figures;
// what the store did (results stored, bytes, time saved) is shared. The
// counters persist in
// <cache_dir>/stats (key=value lines) so they survive daemon restarts, until
// `linkd stats --zero`.
#pragma once

#include "store/local_store.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace linkd {

enum class RequestKind { Link, Archive };

class CacheStats {
public:
  explicit CacheStats(std::string file) : file(std::move(file)) {}
  void load();
  void save();
  void zero();

  void countHit(uint64_t savedMicros, uint64_t bytesRead,
                RequestKind kind = RequestKind::Link);
  void countMiss(RequestKind kind = RequestKind::Link);
  void countUncacheable(const std::string &reason,
                        RequestKind kind = RequestKind::Link);
  void countError(RequestKind kind = RequestKind::Link);
  void countDisabled(RequestKind kind = RequestKind::Link);
  void countStored(uint64_t bytes);
  // `reason`: LinkCache's (its kind, before ": ", is counted).
  void countNotStored(const std::string &reason);
  void countCorrupt();
  // Adds to a named counter (evictions, corrupt_entries: from the store).
  void addCounter(const char *name, uint64_t n);
  // The last miss's explanation, for `linkd stats` (kept in memory only).
  void noteMiss(const std::string &output, const std::string &why);
  // Raises a named counter to `n` if it is lower (a peak).
  void raiseCounter(const char *name, uint64_t n);

  // JSON object with the integer fields requests, hits, misses, uncacheable,
  // errors, evictions, store_bytes, store_entries and more, and the archive
  // counters archive_requests, archive_hits, archive_misses,
  // archive_uncacheable, archive_errors, archive_cache_disabled,
  // archive_uncacheable_reasons, and the kernel library's kernel_links,
  // kernel_hits, kernel_misses, ... (docs/kernels.md).
  std::string json(const StoreUsage &usage, uint64_t maxBytes,
                   const std::map<std::string, uint64_t> &extra = {}) const;
  // For people: the sections in use (archive requests, rewritten inputs,
  // remote tiers, farm, errors only when counted), all of them with `all`;
  // why results were not stored, by kind.
  std::string text(const StoreUsage &usage, uint64_t maxBytes,
                   const std::map<std::string, uint64_t> &extra = {},
                   bool all = false) const;

  // Every counter by its `linkd stats --json` name, and the uncacheable
  // reasons by kind (the metrics endpoint renders these).
  struct Snapshot {
    std::map<std::string, uint64_t> counters;
    std::map<std::string, uint64_t> uncacheableReasons;
    std::map<std::string, uint64_t> archiveUncacheableReasons;
    uint64_t get(const std::string &name) const {
      auto it = counters.find(name);
      return it == counters.end() ? 0 : it->second;
    }
  };
  Snapshot snapshot() const;

private:
  std::string file;
  mutable std::mutex mu;
  std::map<std::string, uint64_t> counters;           // by name
  std::map<std::string, uint64_t> uncacheableReasons; // by reason
  std::map<std::string, uint64_t> archiveUncacheableReasons;
  std::string lastMiss; // "output: why"
  uint64_t get(const std::string &name) const;
  void add(const std::string &name, uint64_t n);
  void count(RequestKind kind, const char *outcome);
};

// `s` as a JSON string literal, quotes included.
std::string jsonString(const std::string &s);

} // namespace linkd
