// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/phase_times.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace linkd {

int64_t PhaseTimes::now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void PhaseTimes::report() const {
  const char *path = std::getenv("LINKD_CLIENT_TIMES");
  if (!path || !*path)
    return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  char line[160];
  int n = std::snprintf(line, sizeof(line), "%lld %lld %lld %lld %lld\n",
                        static_cast<long long>(main),
                        static_cast<long long>(connected),
                        static_cast<long long>(sent),
                        static_cast<long long>(firstReply),
                        static_cast<long long>(done));
  (void)!write(fd, line, static_cast<size_t>(n)); // one write: whole lines
  close(fd);
}

} // namespace linkd
