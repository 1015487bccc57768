// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Switches set through the environment (LINKD_DISABLE, LINKD_NOCACHE,
// LINKD_QUIET): on when set to anything but empty or "0".
#pragma once

#include <cstdlib>
#include <cstring>

namespace linkd {

inline bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

} // namespace linkd
