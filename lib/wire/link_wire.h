// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The thin client's wire to its local daemon: the Protobuf messages of
// proto/linkd/v1/linkd.proto (LinkRequest, LinkReply), framed over the
// daemon's own Unix socket, without gRPC.
//
// gRPC cost the client more than a trivial link costs mold: a 20 MB static
// binary, two connects (a probe, then the channel), gRPC's threads and an
// HTTP/2 handshake, ~2.6 ms of CPU per link (docs/design.md, "The local
// wire"). The framed wire is one connect, one write, and reads until
// LinkDone. gRPC stays on the same socket for everything else (`linkd
// status`, `stats`, the remote API): the daemon tells the two apart by the
// first four bytes a client sends (kMagic; an HTTP/2 client starts with
// "PRI ").
//
//   client                                  daemon
//   kMagic, {'Q', LinkRequest}         -->
//                                      <--  {'r', LinkReply} ...  (output,
//                                           notices, then LinkDone)
//                                      <--  {'e', message}: the daemon could
//                                           not take the request (the client
//                                           links locally)
//
// Frames are lib/kernel/kernel_wire.h's: u32 little-endian length, payload;
// the payload's first byte is the type. The client never half-closes: the
// daemon reads a hang-up as a cancel (Ctrl-C, a killed build).
#pragma once

#include "linkd/v1/linkd.pb.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace linkd::wire {

constexpr std::string_view kMagic = "LKD1";

enum MsgType : char {
  MsgRequest = 'Q',
  MsgReply = 'r',
  MsgError = 'e',
};

// A request frame larger than this is refused: argv, environment and stdin
// of a link (an MRI script) fit many times over.
constexpr uint32_t kMaxRequestBytes = 64u << 20;

// The magic and the request in one write.
bool sendRequest(int fd, const v1::LinkRequest &req);
// One reply frame (type MsgReply), or an error frame.
bool sendReply(int fd, const v1::LinkReply &reply);
bool sendError(int fd, std::string_view message);

// The next frame from the daemon: a reply (true, `reply` set) or an error
// (true, `error` set). False on EOF, a timeout (0: none), or a malformed
// frame.
bool readReply(int fd, uint32_t timeoutMs, v1::LinkReply &reply,
               std::string &error);
// The request after the magic (already consumed); "" or why not.
std::string readRequest(int fd, uint32_t timeoutMs, v1::LinkRequest &req);

} // namespace linkd::wire
