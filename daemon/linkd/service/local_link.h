// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's end of the thin client's framed wire (lib/wire/link_wire.h):
// one connection, one Link request, its replies, then the connection closes.
// The request takes the same path as a gRPC Link call (link_request.cpp);
// only the transport differs. A client that hangs up cancels its link, as a
// cancelled gRPC call does.
#pragma once

#include "daemon/linkd/service/link_service.h"

#include "daemon/linkd/service/connection_limits.h"

#include <string_view>

namespace linkd {

enum class Protocol {
  Framed, // the framed wire's magic (consumed)
  Other,  // anything else, left unread: gRPC's HTTP/2 preface
  Gone,   // closed, nothing within the wait, or not a protocol we speak
};

// What a new connection speaks, from its first bytes (waits up to
// `timeoutMs` for them).
Protocol sniffProtocol(int fd, int timeoutMs);

// Serves the one request of a framed connection (after its magic). The
// caller closes `fd`.
void serveLocalLink(LinkService &service, int fd);

// Tells a connection the daemon will not serve it why (an error frame, best
// effort) and closes it; its client links locally.
void turnAway(int fd, std::string_view why);

} // namespace linkd
