// The link child's side of its report (lib/child/child_report.h): the
// moments it reaches each phase, noted as it goes, and the report itself,
// sent from _exit (daemon/linkd-lld/access_recorder.cpp interposes it) over
// the ordered output channel. Process-global by necessity, like the other
// libc hooks of a link child: _exit has no context to carry. Without an
// ordered channel (farm and blob links, `linkd-lld link`) nothing is sent.
#pragma once

namespace linkd::child_report {

// The child has its request; `prestarted`: it was a pre-forked child.
void noteRequest(bool prestarted);
// The tool (LLD, the archiver, the rewriter) starts.
void noteTool();
// A rename succeeded: LLD commits its output by renaming the temporary.
void noteOutput();
// On the way out with `status`: sends the report (once).
void sendOnExit(int status);

} // namespace linkd::child_report
