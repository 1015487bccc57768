// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Elapsed time as the logs and counters give it.
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

} // namespace linkd
