// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's lifetime lock (RuntimePaths::daemonLock): held by the one
// daemon serving a socket from before it listens until it has stopped.
//
// An open-file-description lock (fcntl F_OFD_SETLK), not flock: others can
// ask whether it is held (F_OFD_GETLK) without taking it. `linkd stop` waits
// for a daemon to finish by asking; taking and releasing the lock to find
// out (as it did with flock, every 100 ms) made the lock briefly someone
// else's, so a daemon starting in that instant found it taken, said "a
// daemon is already serving" and exited. A client that autostarted such a
// daemon asks the same question to tell "another daemon is starting" from a
// daemon that could not start (client/autostart.cpp). The daemon takes a
// flock as well, so that 0.1.0's daemons, which know only that, still see it.
#pragma once

#include <string>

namespace linkd {

// Opens and locks `path` for the life of the process (the descriptor is
// close-on-exec: the zygote and link children do not hold it). -1 if
// another process holds it, or the file cannot be opened.
int takeDaemonLock(const std::string &path);

// Whether some process holds the lock now (false if the file is missing).
bool daemonLockHeld(const std::string &path);

} // namespace linkd
