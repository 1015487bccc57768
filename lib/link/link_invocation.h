// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One linker invocation as the daemon sees it, independent of the wire
// format: what the cache keys on and what the link child runs.
#pragma once

#include "link/flavor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace linkd {

struct LinkInvocation {
  Flavor flavor = Flavor::Unspecified;
  std::vector<std::string> argv;          // argv[0] included
  std::string cwd;                        // absolute
  std::map<std::string, std::string> env; // only the flavor's variables
  uint32_t umask = 022;
  bool stderrIsColorTty = false;
  // The base dir the client was given (LINKD_BASE_DIR or its config file),
  // absolute; empty: the daemon's own.
  std::string baseDir;
  // Each --linkd-rewrite=FILE, absolute, in order; empty: none.
  std::vector<std::string> rewriteSpecs;
  // The client's stdin, when it sent it (an llvm-ar MRI script).
  std::optional<std::string> stdinData;
};

} // namespace linkd
