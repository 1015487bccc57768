// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The user behind a TCP connection from this machine: the uid that owns the
// peer's socket, asked of the kernel's socket table (NETLINK_SOCK_DIAG, an
// exact lookup by the connection's two ends, as `ss -e` does). A per-user
// daemon's metrics say what its user builds and when; on loopback every
// local user is a peer, so the endpoint serves its own user's scrapes and
// refuses the others' unless metrics_allow names loopback.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace linkd {

// The uid owning the other end of connected TCP socket `fd` when that end
// is a socket of this machine (a loopback peer); nothing otherwise (`why`
// says what failed).
std::optional<uid_t> loopbackPeerUid(int fd, std::string *why);

} // namespace linkd
