// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link child's side of its report (lib/child/child_report.h): the
// moments it reaches each phase, noted as it goes, and the report itself,
// sent from _exit (daemon/linkd-lld/access_recorder.cpp interposes it) over
// the ordered output channel. Process-global by necessity, like the other
// libc hooks of a link child: _exit has no context to carry. Without an
// ordered channel (farm and kernel links, `linkd-lld link`) nothing is sent.
#pragma once

#include <cstdint>

namespace linkd::child_report {

// The child has its request; `prestarted`: it was a pre-forked child;
// `linksBefore`: links this process served before (a reusable worker,
// link_worker.h). Starts a new report: what the last one said is dropped.
void noteRequest(bool prestarted, uint32_t linksBefore = 0);
// The tool (LLD, the archiver, the rewriter) starts.
void noteTool();
// A rename to `to` succeeded: LLD commits its output by renaming the
// temporary.
void noteOutput(const char *to);
// The last path noteOutput saw since the request, "" if none (or if it was
// too long to keep).
const char *lastOutput();
// On the way out with `status`, or at the end of a link in a reusable
// worker: sends the report (once per request). True if this call sent it
// whole (a worker whose report did not reach the daemon must not go on: the
// daemon then waits for its exit).
bool sendOnExit(int status);
// After the report: the rest of the exit (the address space's teardown) runs
// at the lowest priority, behind the next link (every thread of the process:
// whichever exits last frees the memory).
void yieldTheExit();

} // namespace linkd::child_report
