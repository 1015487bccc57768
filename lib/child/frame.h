// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Framing of the daemon <-> zygote control channel (a SOCK_STREAM socket
// pair). Each frame: u32 payload length, u32 kind, u64 link id, payload;
// file descriptors ride along with the frame as SCM_RIGHTS. Internal to one
// binary, so it is not versioned.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace linkd {

enum class FrameKind : uint32_t {
  Spawn = 1,   // daemon -> zygote: serialized LinkRequest + fds {stdout, stderr}
  Started = 2, // zygote -> daemon: the child's pid
  Exited = 3,  // zygote -> daemon: ExitRecord
  Failed = 4,  // zygote -> daemon: the child could not be started (message)
  Hello = 5,   // zygote -> daemon, once at start: LLD's version string
  // As Spawn, and the last fd is the ordered output channel
  // (lib/child/ordered_output.h), the child's fd 5.
  SpawnOrdered = 6,
  // As SpawnOrdered, from a caller that sends Release (below) when it is
  // done with the link's pid: the child may then serve further links (a
  // reusable worker, daemon/linkd-lld/link_worker.h).
  SpawnReusable = 7,
  // worker -> zygote, on the worker's own socket: the link `id` is over and
  // the worker waits for another.
  Idle = 8,
  // daemon -> zygote: the daemon has the report of link `id` and will not
  // signal its pid again; the worker may take another link.
  Release = 9,
};

struct Frame {
  FrameKind kind{};
  uint64_t id = 0;
  std::string payload;
  std::vector<int> fds;
  void closeFds();
};

enum class FrameStatus { Ok, Eof, Error };

bool sendFrame(int fd, FrameKind kind, uint64_t id, const std::string &payload,
               const std::vector<int> &fds);
FrameStatus recvFrame(int fd, Frame &out);

struct ExitRecord {
  int32_t pid = 0;
  int32_t waitStatus = 0;
  uint64_t userMicros = 0;
  uint64_t sysMicros = 0;
  uint64_t maxRssKib = 0;
};
std::string encodeExit(const ExitRecord &r);
ExitRecord decodeExit(const std::string &payload);
std::string encodeStarted(int32_t pid);
int32_t decodeStarted(const std::string &payload);

} // namespace linkd
