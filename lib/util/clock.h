// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Elapsed time as the logs and counters give it, and now as records and
// stores keep it.
#pragma once

#include <chrono>
#include <cstdint>

namespace linkd {

// Microseconds since `begin` on the monotonic clock.
inline uint64_t microsSince(std::chrono::steady_clock::time_point begin) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::steady_clock::now() - begin)
          .count());
}

// Now on the wall clock, in nanoseconds since the epoch.
inline int64_t wallNanosNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Now on the wall clock, in seconds since the epoch.
inline int64_t unixSecondsNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace linkd
