// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Local fallback: when the daemon cannot be used, the link still happens, in
// this process's place, through `linkd-lld link` (the same embedded LLD, so
// the same bytes and diagnostics). exec replaces the client, so stdout, stderr
// and the exit status are LLD's own.
#pragma once

#include "config/runtime_paths.h"
#include "link/flavor.h"

#include <optional>
#include <string>
#include <vector>

namespace linkd {

// Prints "linkd: warning: <reason>; linking locally" ("archiving locally"
// for the archivers), unless LINKD_QUIET=1: every time for a `lasting` cause
// (nothing changes until someone fixes it, and every link is local and
// uncached meanwhile), else once until the daemon is back (a marker file next
// to the socket).
void warnFallback(const RuntimePaths &paths, Flavor flavor,
                  const std::string &reason, bool lasting = false);

// Ends the process by `sig` with its default action (the status a shell
// shows as 128 + sig, a core dump where the system makes one), as the stock
// tool that crashed would have ended.
[[noreturn]] void dieOfSignal(int sig);

// Never returns. `argv`: argv[0] and the linker's arguments. `stdinData`:
// stdin as the client already read it (an MRI script), given to the local
// run as its stdin. `rewriteSpecs`: --linkd-rewrite's files (absolute),
// rewritten locally before the link.
[[noreturn]] void
execLocalLink(Flavor flavor, const std::vector<std::string> &argv,
              const std::optional<std::string> &stdinData = std::nullopt,
              const std::vector<std::string> &rewriteSpecs = {});

// The daemon binary: $LINKD_BIN, else `linkd` next to this executable,
// else `linkd` on PATH (the wheel's client on a machine with the .deb);
// "" if none is installed.
std::string daemonBinary();

} // namespace linkd
