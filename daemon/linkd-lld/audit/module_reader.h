// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Reads one module of a program (an ELF executable or shared object, a PE
// image, a Mach-O executable or dylib) through LLVM Object: what it needs
// loaded (DT_NEEDED and run paths, PE imports, LC_LOAD_DYLIB and LC_RPATH),
// its exports, and the mutable state it defines, each definition with
// whether the loader binds it to one copy (audit/audit_model.h).
//
// Every field comes from a file we did not write: offsets and sizes are
// checked against the file before use, and a module that does not parse is
// an error naming it, never a crash.
#pragma once

#include "audit/audit_model.h"
#include "audit/state_record.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace llvm {
class MemoryBuffer;
namespace object {
class COFFObjectFile;
class COFFSymbolRef;
} // namespace object
} // namespace llvm

namespace linkd::audit {

struct ModuleInfo {
  std::string path;
  std::string format;  // ELF, PE, Mach-O
  std::string machine; // e.g. "x86-64", compared between modules
  bool executable = false;
  // What it loads, as the file names it, and where it says to look.
  std::vector<std::string> needed;
  std::vector<std::string> rpath,
      runpath;                 // ELF DT_RPATH / DT_RUNPATH, Mach-O LC_RPATH
  std::string soname;          // ELF DT_SONAME
  bool hasSymbolTable = false; // definitions beyond the exports are visible
  std::vector<StateDef> defs;  // from the symbol table, else exports only
  // Facts for applying a link record (stripped modules).
  std::set<std::string> exportedState; // exported names of state symbols
  std::set<std::string> dynRelocated;  // ELF: named by a dynamic relocation
  bool symbolic = false;               // ELF: DF_SYMBOLIC / DT_SYMBOLIC
  // ELF functions, for the loader's interposition (modelInterposition):
  // defined and exported (default or protected), exported with default
  // visibility (interposable), and every one defined (the symbol table's,
  // else the exports), the toolchain's own left out.
  // Hashed: W1 defines some 10^5 functions.
  std::unordered_set<std::string> exportedFuncs, interposableFuncs,
      definedFuncs;
  // ELF without a symbol table: what leads to its separate debug file.
  std::string buildId;       // module_id.h's form, "elf-build-id:<hex>"
  std::string pdbPath;       // PE: the CodeView record's PDB path
  std::string debugLinkName; // .gnu_debuglink
  uint32_t debugLinkCrc = 0;
};

// The loader's binding across an ELF closure, `modules` in its search order
// (the program, then breadth first; plugins after): a private copy of state
// whose accessors — the functions its module shares with the module of an
// earlier copy, and its functions of the same runtime — are all exported,
// interposable and bound by the loader to an earlier module's is never
// reached (StateDef::interposed, with which module binds them); a shared
// copy's reason names the module whose copy the loader binds.
void modelInterposition(std::vector<ModuleInfo *> &modules);

// Modules are read whole; none real comes near this.
inline constexpr uint64_t kMaxModuleBytes = uint64_t(4) << 30;

// Whether `path` names a regular file (following symbolic links).
bool isRegularFile(const std::string &path);

// The whole of a regular file of at most kMaxModuleBytes (a module, a PDB,
// a debug file), or null and `error` ("PATH: reason").
std::unique_ptr<llvm::MemoryBuffer> readModuleFile(const std::string &path,
                                                   std::string *error);

// The source file a COFF ".file" symbol names (its aux records), or nullopt
// if `sym` is not one or its aux records run past the symbol table (LLVM
// bounds them only in debug builds).
std::optional<std::string>
coffFileRecordName(const llvm::object::COFFObjectFile &obj,
                   const llvm::object::COFFSymbolRef &sym);

// nullopt and `error` ("PATH: reason") when the file cannot be read.
std::optional<ModuleInfo> readModule(const std::string &path,
                                     std::string *error);
// The same for bytes already in memory, named `path` (the fuzzer).
std::optional<ModuleInfo> readModuleBytes(const std::string &path,
                                          std::string_view bytes,
                                          std::string *error);

// For an ELF module without a symbol table, its separate debug file (GDB's
// search: /usr/lib/debug/.build-id/xx/rest.debug and the same under each
// of `searchDirs` and next to the module, debuginfod's client cache
// ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client/<id>/debuginfo);
// then the .gnu_debuglink name next to the module, in its .debug/, under
// /usr/lib/debug/<module's directory>/ and in each of `searchDirs`). The
// first that is the module's (same build-id; without one, the CRC-32 the
// debug link names) gives the module's symbol table: `m` is updated and its
// path returned. Empty if none; `mismatch` then says why the first
// candidate found was not used (another module's file, a stale CRC).
std::string useSeparateDebugFile(ModuleInfo &m,
                                 const std::vector<std::string> &searchDirs,
                                 std::string *mismatch);

// Replaces `m.defs` by the state symbols linkd recorded when it linked the
// module, judged by what the module still shows (its exports).
// Empty, or why the record cannot say that the module holds no state.
// `from` names the source in each PE copy's reason.
std::string applyRecord(ModuleInfo &m,
                        const std::vector<RecordedSymbol> &record,
                        const char *from = "linkd's link record");

} // namespace linkd::audit
