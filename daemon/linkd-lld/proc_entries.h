// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The entries of a /proc directory of this process (its threads, its
// descriptors), read with raw system calls: in a link child the libc calls
// are interposed (access_recorder.h), and these reads are not the link's.
#pragma once

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace linkd {

// Calls `f(number)` for each numeric entry of `dir`; false if it cannot be
// read.
template <typename F> bool forEachNumberedEntry(const char *dir, F f) {
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, dir,
                                    O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd < 0)
    return false;
  struct Entry {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
  };
  alignas(8) char buf[4096];
  long n;
  while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
    for (long off = 0; off < n;) {
      auto *e = reinterpret_cast<Entry *>(buf + off);
      if (e->name[0] >= '0' && e->name[0] <= '9')
        f(std::atoi(e->name), fd);
      off += e->reclen;
    }
  syscall(SYS_close, fd);
  return n == 0;
}

} // namespace linkd
