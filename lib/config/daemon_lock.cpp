// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "config/daemon_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace linkd {
namespace {

// The whole file, exclusively.
struct flock wholeFile(short type) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = 0;
  l.l_len = 0;
  return l;
}

} // namespace

int takeDaemonLock(const std::string &path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  struct flock l = wholeFile(F_WRLCK);
  // Also flock, the lock of linkd 0.1.0's daemons: during an upgrade a
  // daemon of either version still finds the other's (the two kinds of lock
  // never see each other).
  if (fcntl(fd, F_OFD_SETLK, &l) != 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) == 0)
    (void)!write(fd, pid.data(), pid.size());
  return fd;
}

bool daemonLockHeld(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  // F_OFD_GETLK asks whether a write lock could be had: F_UNLCK if so. A
  // read-only descriptor may ask about a write lock.
  struct flock l = wholeFile(F_WRLCK);
  bool held = fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
  close(fd);
  return held;
}

} // namespace linkd
