// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The linker a local link runs when no daemon can be had, for the thin
// client and for liblinkd alike: the caller's choice (an option, then
// $LINKD_FALLBACK_LINKER), else the linkd-lld installed with linkd (the
// daemon's own LLD, so both modes give the same bytes), else stock LLD on
// PATH. The last is what a wheel has on a machine without linkd: adopting
// linkd there costs no more than running the stock linker, which is what
// the caller did before. Stock LLD is run with the caller's argv[0] (its
// diagnostics' prefix comes from that name) and `-flavor F` first (it knows
// only its own names: not ld.linkd, not iree-lld).
#pragma once

#include "link/flavor.h"

#include <optional>
#include <string>
#include <vector>

namespace linkd {

struct LocalLinker {
  std::string path;
  bool linkdLld = false; // `linkd-lld link --flavor F --argv0 A -- ARGS`
};

// A regular file this process may execute.
bool executableFile(const std::string &path);

// An executable `name` in a directory of $PATH (unset: the usual
// /usr/local/bin:/usr/bin:/bin) that is not this very program (a PATH
// `ld.lld` may be a symlink to the client), or "".
std::string programOnPath(const std::string &name);

// `chosen`: the caller's option ("" if none). `ownLld`: where linkd-lld
// would be. nullopt with `error` naming every place looked at.
std::optional<LocalLinker> findLocalLinker(Flavor flavor,
                                           const std::string &chosen,
                                           const std::string &ownLld,
                                           std::string &error);

// argv for the linker, from `argv` (argv[0] = the caller's tool name).
// `view`: linkd-lld's `--view DIR` (daemon/linkd-lld/local_view.h).
std::vector<std::string>
localLinkerArgv(const LocalLinker &linker, Flavor flavor,
                const std::vector<std::string> &argv,
                const std::vector<std::string> &rewriteSpecs = {},
                const std::string &view = {});

} // namespace linkd
