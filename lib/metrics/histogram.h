// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A latency histogram with fixed buckets, as Prometheus histograms are:
// cumulative counts per upper bound, a sum and a count. Observing is a few
// relaxed atomic additions (a link path pays nanoseconds for it); reading
// takes a snapshot that a concurrent observation may make a bucket ahead of
// the count, which Prometheus tolerates between scrapes and which the next
// scrape repairs.
//
// The bounds span what a daemon sees: a cache lookup is tens of
// microseconds, a hit a few milliseconds, a big link minutes.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace linkd {

class LatencyHistogram {
public:
  // Upper bounds in seconds (+Inf is implied).
  static constexpr std::array<double, 18> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
      0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    120};

  void observeMicros(uint64_t micros) {
    double s = static_cast<double>(micros) / 1e6;
    size_t i = 0;
    while (i < kBounds.size() && s > kBounds[i])
      ++i;
    buckets[i].fetch_add(1, std::memory_order_relaxed);
    sumMicros.fetch_add(micros, std::memory_order_relaxed);
    count.fetch_add(1, std::memory_order_relaxed);
  }

  struct Snapshot {
    std::array<uint64_t, kBounds.size() + 1> cumulative{}; // last: +Inf
    double sumSeconds = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const {
    Snapshot s;
    uint64_t running = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
      running += buckets[i].load(std::memory_order_relaxed);
      s.cumulative[i] = running;
    }
    s.count = running; // consistent with the buckets, whatever `count` says
    s.sumSeconds =
        static_cast<double>(sumMicros.load(std::memory_order_relaxed)) / 1e6;
    return s;
  }

private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets{};
  std::atomic<uint64_t> sumMicros{0};
  std::atomic<uint64_t> count{0};
};

} // namespace linkd
