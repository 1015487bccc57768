// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's end of the thin client's framed wire (lib/wire/link_wire.h):
// one connection, one Link request, its replies, then the connection closes.
// The request takes the same path as a gRPC Link call (link_request.cpp);
// only the transport differs. A client that hangs up cancels its link, as a
// cancelled gRPC call does.
#pragma once

#include "daemon/linkd/service/link_service.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>

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

// The connections the accept loop has given a thread, each until its thread
// is done with it. Capped, so that a flood of connections (a runaway script,
// a hostile process of the same user) cannot take every thread the user may
// have; the rest are turned away. A stopping daemon hangs up those still
// open, which cancels their links the way gRPC's Shutdown cancels its calls,
// and waits for their threads before it tears down what they use.
class Connections {
public:
  explicit Connections(size_t cap) : cap(cap) {}
  // Counts `fd` in; false (and nothing counted) when `cap` are open.
  bool admit(int fd);
  // `fd` is no longer the daemon's to hang up: it is about to be closed, or
  // was handed to gRPC. Call before either.
  void disown(int fd);
  // The thread of an admitted connection is done with the daemon.
  void leave();
  size_t open() const;
  // Hangs up every connection still owned and waits up to `timeout` for all
  // admitted threads to leave; false if some did not.
  bool hangUpAll(std::chrono::milliseconds timeout);

private:
  const size_t cap;
  mutable std::mutex mu;
  std::condition_variable left;
  size_t count = 0;
  std::set<int> owned;
};

} // namespace linkd
