// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The state of a PE module that linkd did not link, from its PDB: what
// link.exe and lld-link write for /DEBUG (CMake's Debug and RelWithDebInfo
// default), nearly always shipped or kept next to the DLLs. A PDB lists the
// module's globals (S_GDATA32, S_GTHREAD32), file statics and function
// statics (S_LDATA32, S_LTHREAD32, in their compiland's symbol stream), each
// with its section and the compiland (object) that defined it.
//
// A PDB is found where the debugger looks: the path in the module's
// CodeView debug directory, that file's name next to the module, then in
// each --search directory. It is used only if its GUID and age are the
// module's (a PDB of another build of the same DLL describes other
// addresses and maybe other state). The C runtime's and the linker's own
// compilands (MSVCRT, vcruntime, UCRT, lld's "* Linker *") are left out, as
// the link record leaves out the toolchain's inputs.
//
// Every byte of a PDB is hostile: LLVM's native reader bounds its reads
// and reports errors, which end the reading with a reason, never a crash.
#pragma once

#include "daemon/linkd-lld/audit/module_reader.h"

#include <string>
#include <string_view>
#include <vector>

namespace linkd::audit {

// For a PE module, the state its matching PDB lists, applied to `m` like a
// link record; the PDB's path, or empty. `mismatch` then says why the
// first PDB found was not used (another build's, unreadable). `blind` is
// set when the PDB was used but cannot vouch for "no state" (applyRecord).
std::string usePdb(ModuleInfo &m, const std::vector<std::string> &searchDirs,
                   std::string *mismatch, std::string *blind);

// The state a PDB file lists, as link-record symbols (for the fuzzer and
// tests); false and `error` if it does not parse.
bool pdbStateSymbols(const std::string &path, std::string_view expectedId,
                     std::vector<RecordedSymbol> &out, std::string *error);
// The same for bytes in memory (the fuzzer); an empty `expectedId` checks
// no GUID.
bool pdbStateSymbolsFromBytes(const std::string &name, std::string_view bytes,
                              std::string_view expectedId,
                              std::vector<RecordedSymbol> &out,
                              std::string *error);

} // namespace linkd::audit
