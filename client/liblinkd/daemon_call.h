// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// liblinkd's way through the daemon: connect to its blob socket, send the
// link with the inputs' digests, upload only the inputs the daemon asks for,
// read the result. One connection per call, so calls on many threads are
// concurrent links with no lock between them.
#pragma once

#include "client/liblinkd/kernel_request.h"
#include "config/runtime_paths.h"

namespace linkd::kernel {

enum class DaemonCall {
  Done,        // `out.result` holds LLD's answer
  NoDaemon,    // nothing listens on the blob socket (start one, retry)
  Unavailable, // no daemon to be had, or it could not run the link: link
               // locally
  Failed,      // timed out or broke mid-link: `out.error` (no retry)
};

DaemonCall linkThroughDaemon(const RuntimePaths &paths, const Request &req,
                             Outcome &out);

// Health: true and `reply` when the daemon answered.
bool daemonHealth(const RuntimePaths &paths, HealthMsg &reply,
                  std::string &error);

// A connected socket to the blob listener, or -1 (errno set). A socket
// that is not this user's (the file's owner, or the peer's uid by
// SO_PEERCRED) is refused: -1, errno EPERM, and why in `untrusted`.
int connectBlobSocket(const RuntimePaths &paths,
                      std::string *untrusted = nullptr);

} // namespace linkd::kernel
