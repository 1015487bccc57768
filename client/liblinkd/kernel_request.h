// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One call of liblinkd as the rest of the library sees it: the tool's flavor
// (decided as stock LLD decides it), argv with argv[0], the inputs with
// their SHA-256, the options; and what came of it.
#pragma once

#include "kernel/kernel_wire.h"
#include "link/flavor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd::kernel {

struct Input {
  std::string name;
  std::string_view data; // the caller's bytes, not copied
  std::string sha256;    // raw
};

struct Request {
  Flavor flavor = Flavor::Elf;
  std::vector<std::string> argv; // argv[0] = the tool
  std::vector<Input> inputs;
  bool noCache = false;
  uint32_t timeoutMs = 0;
};

struct Outcome {
  std::optional<ResultMsg> result; // the link ran (whatever LLD said)
  std::string error;               // else why not
  bool local = false;
};

// The linkd binaries next to the library: $LINKD_BIN (the daemon), else
// <libdir>/../bin/linkd, else <libdir>/linkd (the build tree's bin/ and
// lib/ are siblings, as an installation's are).
std::string daemonBinaryForLibrary();
std::string lldBinaryForLibrary(); // linkd-lld beside the library's bin/

} // namespace linkd::kernel
