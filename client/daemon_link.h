// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One link through the daemon: send the request, copy the streamed stdout and
// stderr to ours as it arrives, return LLD's exit status.
#pragma once

#include "client/client_args.h"
#include "client/phase_times.h"
#include "link/flavor.h"

#include <optional>
#include <string>

namespace linkd {

struct DaemonLinkResult {
  // Set when the link ran to completion in the daemon: LLD's exit status.
  std::optional<int> exitCode;
  // Set when the tool crashed in the daemon (SIGABRT, SIGSEGV, ...; its
  // crash report already replayed): the client dies of the same signal, as
  // the stock tool would have, and does not run the link again.
  int crashSignal = 0;
  // Otherwise why not; the caller links locally.
  std::string failure;
};

// `fd`: a connection to the daemon (connectDaemon, autostart.h), read and
// written on the framed wire (lib/wire/link_wire.h).
// `times`: sent, firstReply and done are filled in.
DaemonLinkResult linkThroughDaemon(int fd, Flavor flavor,
                                   const ClientArgs &args, PhaseTimes &times);

} // namespace linkd
