// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One call of liblinkd as the rest of the library sees it: the tool's flavor
// (decided as stock LLD decides it), argv with argv[0], the inputs with
// their SHA-256, the options; and what came of it.
#pragma once

#include "kernel/kernel_wire.h"
#include "link/flavor.h"
#include "linkd/linkd.h"

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
  uint32_t flags = 0; // LINKD_NO_CACHE, LINKD_NO_AUTOSTART, ...
  uint32_t timeoutMs = 0;
  std::string fallbackLinker; // the caller's choice for a local link, or ""
  bool noCache() const { return flags & LINKD_NO_CACHE; }
};

struct Outcome {
  std::optional<ResultMsg> result; // the link ran (whatever LLD said)
  std::string error;               // else why not
  linkd_status status = LINKD_OK;  // when `result` is empty: which failure
  bool local = false;
};

// An outcome without a result: `status` and why.
inline Outcome failedWith(linkd_status status, std::string why) {
  Outcome o;
  o.status = status;
  o.error = std::move(why);
  return o;
}

// The linkd binaries: $LINKD_BIN (the daemon), else next to the library
// (<libdir>/../bin/linkd, else <libdir>/linkd: the build tree's bin/ and
// lib/ are siblings, as an installation's are), else on PATH (a wheel's
// library on a machine with the .deb's daemon); "" if none.
std::string daemonBinaryForLibrary();
std::string lldBinaryForLibrary(); // linkd-lld, found the same way

} // namespace linkd::kernel
