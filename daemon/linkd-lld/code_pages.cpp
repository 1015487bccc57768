// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/code_pages.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstring>

namespace linkd {

void dropCodePages() {
  FILE *maps = std::fopen("/proc/self/maps", "r");
  if (!maps)
    return;
  char line[4096];
  while (std::fgets(line, sizeof(line), maps)) {
    unsigned long start = 0, end = 0;
    char perms[8] = {};
    int pathStart = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms,
                    &pathStart) < 3)
      continue;
    const char *path = line + pathStart;
    if (std::strcmp(perms, "r-xp") != 0 || path[0] != '/')
      continue;
    madvise(reinterpret_cast<void *>(start), end - start, MADV_DONTNEED);
  }
  std::fclose(maps);
}

} // namespace linkd
