// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "link/daemon_constraints.h"

#include <cstdlib>
#include <string_view>

namespace linkd {

std::optional<std::string> mustLinkLocally(const Flavor flavor,
                                           const std::vector<std::string> &argv) {
  if (std::getenv("LLVM_OVERRIDE_PRODUCER"))
    return "LLVM_OVERRIDE_PRODUCER is set";
  if (flavor == Flavor::Elf) {
    for (size_t i = 1; i < argv.size(); ++i) {
      std::string_view a = argv[i];
      if (a.starts_with("--error-handling-script") ||
          a.starts_with("-error-handling-script"))
        return "--error-handling-script needs the full environment";
    }
  }
  return std::nullopt;
}

} // namespace linkd
