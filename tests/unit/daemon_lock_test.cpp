// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's lifetime lock (config/daemon_lock.h): asking whether it is
// held never takes it, so a daemon starting while `linkd stop` asks finds it
// free.
#include "config/daemon_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace linkd {
namespace {

std::string tempLockPath() {
  char templ[] = "/tmp/linkd-lock-test.XXXXXX";
  EXPECT_NE(mkdtemp(templ), nullptr);
  return std::string(templ) + "/d.lock";
}

TEST(DaemonLock, HeldIsSeenAndAskingDoesNotTakeIt) {
  std::string path = tempLockPath();
  EXPECT_FALSE(daemonLockHeld(path)); // no file yet
  int fd = takeDaemonLock(path);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(daemonLockHeld(path));
  EXPECT_EQ(takeDaemonLock(path), -1); // a second daemon is refused
  close(fd);
  // Asked many times, as `linkd stop` does while it waits: a daemon
  // starting meanwhile still takes the lock every time.
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(daemonLockHeld(path));
    int again = takeDaemonLock(path);
    ASSERT_GE(again, 0) << "round " << i;
    EXPECT_TRUE(daemonLockHeld(path));
    close(again);
  }
}

TEST(DaemonLock, TheFileSaysWhoHoldsIt) {
  std::string path = tempLockPath();
  int fd = takeDaemonLock(path);
  ASSERT_GE(fd, 0);
  char buf[32] = {};
  ASSERT_GT(pread(fd, buf, sizeof(buf) - 1, 0), 0);
  EXPECT_EQ(std::atol(buf), static_cast<long>(getpid()));
  close(fd);
}

} // namespace
} // namespace linkd
