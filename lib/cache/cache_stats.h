// Cache counters, as `linkd stats` shows them.
//
// Every link request is counted exactly once as a hit, a miss, uncacheable
// (with its reason) or an error (the daemon could not run it); `requests` is
// their sum plus links with caching turned off. The counters persist in
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

class CacheStats {
public:
  explicit CacheStats(std::string file) : file(std::move(file)) {}
  void load();
  void save();
  void zero();

  void countHit(uint64_t savedMicros, uint64_t bytesRead);
  void countMiss();
  void countUncacheable(const std::string &reason);
  void countError();
  void countDisabled();
  void countStored(uint64_t bytes);
  void countNotStored();
  void countCorrupt();
  // Adds to a named counter (evictions, corrupt_entries: from the store).
  void addCounter(const char *name, uint64_t n);

  // JSON object with the integer fields requests, hits, misses, uncacheable,
  // errors, evictions, store_bytes, store_entries and more.
  std::string json(const StoreUsage &usage, uint64_t maxBytes,
                   const std::map<std::string, uint64_t> &extra = {}) const;
  std::string text(const StoreUsage &usage, uint64_t maxBytes,
                   const std::map<std::string, uint64_t> &extra = {}) const;

private:
  std::string file;
  mutable std::mutex mu;
  std::map<std::string, uint64_t> counters;          // by name
  std::map<std::string, uint64_t> uncacheableReasons; // by reason
  uint64_t get(const char *name) const;
  void add(const char *name, uint64_t n);
};

} // namespace linkd
