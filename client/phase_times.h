// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// LINKD_CLIENT_TIMES=<file>: the client appends one line per link through
// the daemon with the CLOCK_MONOTONIC times (ns) of its phases, for
// bench/run.sh's breakdown of a small link (bench/README.md):
//
//   main connected sent first_reply done
//
// main: main() entered; connected: the daemon's socket connected (after an
// autostart, if any); sent: the request written; first_reply: the first
// frame read; done: LinkDone read. Unset (the default), it costs one getenv.
#pragma once

#include <cstdint>

namespace linkd {

struct PhaseTimes {
  int64_t main = 0, connected = 0, sent = 0, firstReply = 0, done = 0;
  static int64_t now();
  // Appends the line when LINKD_CLIENT_TIMES names a file.
  void report() const;
};

} // namespace linkd
