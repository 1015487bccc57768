// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// File timestamps as the cache compares them, and the "racy" rule shared by
// the stat cache and the held input descriptors: a file (or directory)
// changed within `window` of the moment it was looked at could change again
// within the file system's timestamp granularity without a visible
// difference, so what was seen then is not trusted later (git's index rule).
#pragma once

#include "util/clock.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace linkd {

inline int64_t nanos(const timespec &t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

inline bool racyAt(int64_t mtimeNs, int64_t ctimeNs, int64_t now,
                   int64_t window) {
  return now - mtimeNs < window || now - ctimeNs < window;
}

inline bool racyAt(const struct stat &st, int64_t now, int64_t window) {
  return racyAt(nanos(st.st_mtim), nanos(st.st_ctim), now, window);
}

// How far a file's times may lag the wall clock: the kernel stamps them
// from its coarse clock, up to one tick (CLOCK_REALTIME_COARSE's
// resolution, 1 to 10 ms) behind. A file stamped less than that before an
// instant may have changed after it.
inline int64_t fileClockLagNs() {
  static const int64_t lag = [] {
    timespec ts{};
    int64_t ns =
        clock_getres(CLOCK_REALTIME_COARSE, &ts) == 0 ? nanos(ts) : 10000000;
    return std::clamp<int64_t>(ns, 1000000, 20000000);
  }();
  return lag;
}

} // namespace linkd
