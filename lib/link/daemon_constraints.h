// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Links the daemon cannot run exactly as a stock linker process would.
//
// The link child inherits the daemon's process, not the client's, so a few
// rare inputs would see a different world: LLVM reads LLVM_OVERRIDE_PRODUCER
// once when libLLVM loads (in the daemon, not per link), and ELF's
// --error-handling-script runs a program with the linker's whole environment.
// Such links run locally, quietly: they are correct, just not accelerated.
#pragma once

#include "link/flavor.h"

#include <optional>
#include <string>
#include <vector>

namespace linkd {

// Why this invocation must be linked locally, or nullopt if the daemon can
// run it. Looks at the arguments as given (response files not expanded).
std::optional<std::string> mustLinkLocally(const Flavor flavor,
                                           const std::vector<std::string> &argv);

} // namespace linkd
