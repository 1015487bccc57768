// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a link child does with its request, in the order it does it: the
// per-request set-up (descriptors, signal mask, umask, the client's
// environment and cwd, the rewrite plan, the access recorder, the
// temporaries journal, the sandbox), then the tool (LLD, an archiver, the
// rewriter). Used by a child forked for its request, by a pre-forked spare
// once its request arrived (zygote.cpp), and by a reusable worker for each
// of its links (link_worker.h).
#pragma once

#include "audit/state_record.h"
#include "child/frame.h"
#include "daemon/linkd-lld/lld_entry.h"
#include "linkd/v1/linkd.pb.h"

namespace linkd {

// The fixed descriptor numbers of a link child (placeChildFds).
constexpr int kRecordFdNumber = 3;
constexpr int kJournalFdNumber = 6; // above ordered::kChildFd
// A reusable worker's socket to the zygote; every other descriptor above
// the journal's is closed at set-up.
constexpr int kWorkerFdNumber = 7;

// What the request came with, as descriptors of this process (-1: none).
// `recordFd`: report file accesses there (the cache wants them).
// `sandboxFd` (farm nodes, with a record fd): the link sees the client's
// file system through the node's daemon (daemon/linkd-lld/sandbox_child.h).
// `orderedFd`: stdout and stderr writes go there as ordered records
// (daemon/linkd-lld/ordered_writer.h).
// `journalFd`: the daemon's temporaries journal (access_recorder.h).
struct LinkChannels {
  int outFd = -1;
  int errFd = -1;
  int recordFd = -1;
  int sandboxFd = -1;
  int orderedFd = -1;
  int journalFd = -1;
  bool keepWorkerFd = false; // a reusable worker's (kWorkerFdNumber)
};

// The Landlock confinement a sandboxed request asks for (the keys the
// daemon sets in its environment map, lib/child/sandbox_protocol.h): the
// directories it may read and write, and whether a kernel without
// Landlock fails the link. `sandboxed` false for a link outside it.
struct SandboxConfinement {
  bool sandboxed = false;
  std::string readDir, writeDir, require;
  bool operator==(const SandboxConfinement &) const = default;
};
SandboxConfinement sandboxConfinement(const v1::LinkRequest &req,
                                      const LinkChannels &ch);

// A Spawn frame's descriptors as the link's channels, with the zygote's
// `journalFd`: false if the frame does not carry stdout, stderr (and, for
// SpawnOrdered and SpawnReusable, the ordered channel last) with at most two
// more.
bool channelsOf(const Frame &frame, int journalFd, LinkChannels &ch);

// All of the per-request set-up, up to the tool. A set-up error ends the
// process with its message on stderr.
void setUpLinkChild(const v1::LinkRequest &req, const LinkChannels &ch);
// The link as LLD will run it; with a record fd, the audit's map option is
// added where `records` (stateRecordPolicy, read before the client's
// environment replaced the zygote's) wants it (state_record_child.h).
LldInvocation lldInvocation(const v1::LinkRequest &req, const LinkChannels &ch,
                            audit::RecordPolicy records);
// The tool, to the end of the process.
[[noreturn]] void runTool(const v1::LinkRequest &req, const LinkChannels &ch,
                          audit::RecordPolicy records);
// Both, in a child that serves exactly this request.
[[noreturn]] void becomeLinker(const v1::LinkRequest &req,
                               const LinkChannels &ch);

} // namespace linkd
