// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A module's identity that survives stripping, for finding its link record
// (docs/audit.md) after `strip`/`objcopy` changed its bytes: the ELF
// build-id (NT_GNU_BUILD_ID, which gcc and Debian's clang ask for by
// default) or the CodeView record of a PE image's debug directory (lld's
// --build-id, the MinGW driver's default). The daemon stores a record under
// this id as well as under the output's digest; the audit looks the id up
// first, then the digest. LLVM-free: the daemon (no LLVM) reads it too.
#pragma once

#include <string>
#include <string_view>

namespace linkd::audit {

// "elf-build-id:<hex>", "pe-codeview:<guid hex>-<age>", or empty (no id, or
// not a module we can read).
std::string moduleBuildId(std::string_view bytes);

} // namespace linkd::audit
