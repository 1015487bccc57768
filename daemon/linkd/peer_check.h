// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Who may talk to the daemon on its Unix socket: processes of its own user.
//
// The socket lives in a 0700 directory, but that is one chmod away from
// being open, and a squatted or shared directory is another user's to open.
// So every connection's peer is asked for its credentials (SO_PEERCRED)
// before gRPC sees a byte of it: a process of another uid is refused (root
// only when the daemon itself is root), logged with its uid and pid. The
// refused client is told by its own side (client/autostart.cpp checks the
// socket's owner) and links locally.
#pragma once

#include <string>

namespace linkd {

// "" if the peer of connected Unix socket `fd` may be served; else why not.
std::string refusePeer(int fd);

// A listening Unix socket at `path` (mode 0600, an old file replaced); -1
// and `error` on failure.
int listenUnix(const std::string &path, std::string *error);

} // namespace linkd
