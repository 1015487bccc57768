// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The wire between a sandboxed link child on a farm node and the node's
// daemon: the child's file-system calls become questions, the daemon's
// answers come from the client's view of its file system
// (lib/view/sandbox_view.h).
//
// Transport: a SOCK_SEQPACKET socket pair, one message per question and per
// answer, so LLD's threads serialise on a lock in the child and never
// interleave. Question: one op byte, then the client path (absolute, as the
// link spelled it relative to the client's cwd), NUL, and for Rename the
// second path, NUL; for Chmod the mode in decimal, NUL. Answer: a SandboxReply
// followed by the real path on the node to use (empty when there is none).
// Header-only and free of LLVM and gRPC: both sides include it.
#pragma once

#include <cstdint>

namespace linkd::sandbox {

enum Op : char {
  OpStat = 'S',   // does it exist, and what is it (stat/access/realpath)
  OpRead = 'R',   // open for reading: the real file to open
  OpWrite = 'W',  // open for writing (create): the real file to open
  OpRename = 'N', // rename within the link's view
  OpUnlink = 'U', // remove from the link's view
  OpChmod = 'H',  // change the mode of a file the link wrote
};

enum Kind : char {
  KindFile = 'F',   // a regular file; real path follows (for R/W)
  KindDir = 'D',    // a directory; real path of an empty stand-in follows
  KindAbsent = 'A', // errno in err (ENOENT / ENOTDIR)
  KindError = 'E',  // errno in err
  KindOk = 'O',     // rename/unlink/chmod done
};

struct SandboxReply {
  char kind = KindError;
  int32_t err = 0;
  uint32_t mode = 0;
  uint64_t size = 0;
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t mtimeNs = 0;
};

constexpr int kSandboxFd = 4; // the child's end of the socket pair

// Keys the node sets in its copy of the request's environment map (never
// exported to the link): the directories Landlock leaves open, and whether a
// kernel without Landlock makes the link fail.
constexpr const char *kReadDirKey = "__LINKD_SANDBOX_READ";
constexpr const char *kWriteDirKey = "__LINKD_SANDBOX_WRITE";
constexpr const char *kRequireKey = "__LINKD_SANDBOX_REQUIRE";

} // namespace linkd::sandbox
