// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a relocatable ELF object is to a link whose output is thrown away,
// without the name of the source file it was compiled from.
//
// A probe (`cc -shared -Wl,--gc-sections conf$$.c -o /dev/null`, musl's
// configure) compiles a source file whose name changes with every run, and
// the compiler copies that name into an STT_FILE symbol: the object differs
// from run to run in that string alone. With the output discarded, the
// link's answer is its diagnostics and exit status, and LLD reads the
// STT_FILE name for one thing only: a diagnostic's last-resort source
// location ("referenced by conf123.c"). So such an input is keyed by this
// identity (every section, header and symbol, names as strings, STT_FILE
// names left out) and the STT_FILE names are kept for the store, which
// refuses a result whose diagnostics contain one (link_cache.h).
//
// Only the layout compilers write: ELF64 little-endian ET_REL, one
// SHT_SYMTAB whose string table nothing else but section names uses.
// Anything else, or anything out of bounds, is nullopt: the caller keys the
// file by its bytes.
#pragma once

#include "digest/digest.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

struct ObjectIdentity {
  Digest digest;
  std::vector<std::string> fileSymbols; // the STT_FILE names left out
  Digest bytes;                         // SHA-256 of the bytes identified
};

std::optional<ObjectIdentity> identityWithoutFileSymbols(std::string_view elf);

// The file at `path` read (a regular file of at most `maxBytes`) and
// identified; nullopt when it cannot be.
std::optional<ObjectIdentity>
fileIdentityWithoutFileSymbols(const std::string &path,
                               size_t maxBytes = size_t{4} << 20);

} // namespace linkd
