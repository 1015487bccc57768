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

// The clock the kernel stamps file times from: its coarse clock, up to a
// tick (1 to 10 ms) behind the wall clock. A file changed after this was
// read carries a time at or after it; one changed earlier in the same tick
// carries the same time, so the two cannot be told apart by time.
inline int64_t fileClockNowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return nanos(ts);
}

// Whether a file whose latest time is `changedNs` may have changed at or
// after `sinceNs`, a fileClockNowNs() reading: it was stamped in that tick
// or later. A time of whole seconds is taken as one a file system rounded
// down (FAT keeps two seconds).
inline bool mayHaveChangedSince(int64_t changedNs, int64_t sinceNs) {
  int64_t grain = changedNs % 1000000000 == 0 ? 2000000000 : 0;
  return changedNs + grain >= sinceNs;
}

} // namespace linkd
