// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link child's side of the ordered output channel (lib/child/
// ordered_output.h): writes to fds 1 and 2 become records on one pipe, so the
// daemon, the cache and the client see stdout and stderr in the order the
// tool wrote them.
//
// LLVM writes its streams (llvm::outs(), llvm::errs(), the crash handler,
// report_fatal_error) with ::write, which libLLVM imports: the executable
// defines write and writev (as daemon/linkd-lld/access_recorder.h does the
// file calls), and libLLVM binds to them. glibc's stdio writes with its own
// internal write, so the child's stdout and stderr FILEs are replaced by
// streams that write through the channel too. Process-global by necessity
// (a libc hook has no context), set once in the link child before the tool
// starts; the zygote and `linkd-lld link` never turn it on.
#pragma once

#include <string>

namespace linkd {

// From now on, writes to fds 1 and 2 go to `channelFd` as records.
void startOrderedOutput(int channelFd);

// The end of a link in a reusable worker (link_worker.h): stdio is flushed
// and fds 1 and 2 are plain descriptors again until the next start.
void stopOrderedOutput();

// Writes the child's report (lib/child/child_report.h) as one record, after
// everything written so far. False without a channel.
bool writeOrderedReport(const std::string &payload);

} // namespace linkd
