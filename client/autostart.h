// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Finding a daemon, and starting one when none answers.
//
// `make -j32` on a cold machine runs 32 clients at once; exactly one of them
// must start the daemon. Clients serialise on a lock file next to the socket:
// the holder checks again, starts `linkd serve` detached (new session, stdio
// to the log, no inherited descriptors) and waits until the socket accepts
// connections; the others then find it running. The daemon's own lifetime
// lock makes a second daemon impossible even without this lock.
#pragma once

#include "config/runtime_paths.h"

#include <string>
#include <string_view>

namespace linkd {

// ensureDaemon's answer when there is no daemon binary to start (a wheel's
// client or library on a machine without linkd): the caller links locally
// without a warning, since nothing is broken.
inline constexpr std::string_view kNoDaemonInstalled =
    "no linkd daemon is installed (looked for $LINKD_BIN, linkd beside the "
    "client and on PATH)";

// True if something accepts connections on the socket.
bool daemonAnswers(const std::string &socketPath);

// A connection to the daemon on paths.socketPath, starting one if none
// answers (ensureDaemon): one connect when it runs, no probe. -1 and why
// not in `error` (with `lasting` as for ensureDaemon).
int connectDaemon(const RuntimePaths &paths, std::string &error,
                  bool *lasting = nullptr);

// Ensures a daemon serves paths.socketPath. Returns an empty string on
// success, else why not (the caller falls back to a local link); `lasting`
// (optional) tells whether the cause stays until someone fixes it (the
// socket directory's owner or mode, a daemon that cannot run or dies at
// start-up) rather than passing (a daemon that was slow to start).
std::string ensureDaemon(const RuntimePaths &paths, bool *lasting = nullptr);
// The same with the daemon binary to start (liblinkd finds it beside
// itself, not beside the executable that loaded it).
std::string ensureDaemon(const RuntimePaths &paths,
                         const std::string &daemonBin, bool *lasting = nullptr);

} // namespace linkd
