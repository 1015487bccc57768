// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What `linkd audit` knows about a program's modules, and the search for
// state that ends up in more than one copy at run time.
//
// A module's state definitions each say whether the loader binds every user
// of the name to one copy ("shared": an exported, interposable ELF
// definition; an exported definition of an ELF executable, which comes first
// in the search order; a flat-namespace Mach-O export) or whether the module
// keeps its own ("private", with the reason: hidden, local, protected,
// bound at link time by -Bsymbolic or --dynamic-list, a DLL's own copy, a
// two-level-namespace image). All shared copies of a name are one instance;
// each private copy is one more. A name with two or more instances in the
// closure is a finding. The LLVM-free half of the audit: the module readers
// (daemon/linkd-lld/audit/) fill these structures.
#pragma once

#include <string>
#include <vector>

namespace linkd::audit {

struct StateDef {
  std::string name;    // as in the symbol table
  std::string display; // demangled, or the name
  char kind = 'D';     // D data, B bss, T thread-local
  bool shared = false; // the loader binds all users to one copy
  // The source file's stem ("rt" for rt.c, rt.o, libx.a(rt.c.o)) where
  // known: file-local state only pairs with copies from a file of that name
  // (two libraries' own `static int initialized` are not one runtime).
  std::string fileStem;
  std::string why; // why this copy is (or is not) kept apart
  // ELF: a private copy the program never reaches, its accessors being
  // bound by the loader to another module's (`why` says whose). Not an
  // instance; listed as one copy at run time.
  bool interposed = false;
};

struct AuditModule {
  std::string path;
  std::string format;      // "ELF", "PE", "Mach-O"
  std::string how;         // "program", "DT_NEEDED of X via RUNPATH", "named"
  std::string source;      // "symbol table", "link record", "exports only"
  bool inspectable = true; // false: only its exports could be seen
  bool system = false;     // the system's library: exports are enough
  std::vector<StateDef> defs;
};

// A module the loader would load that the audit could not: not found, not
// readable, for another machine. `incomplete` unless it is a system DLL.
struct NotFollowed {
  std::string text; // "NAME (needed by X): why"
  bool incomplete = true;
};

struct Copy {
  size_t module = 0; // index into the module list
  const StateDef *def = nullptr;
};

struct Finding {
  std::string runtime; // "halide_*", "Halide::Runtime::Internal"
  std::string name, display, fileStem;
  char kind = 'D';
  size_t instances = 0;
  std::vector<Copy> copies;
};

// Patterns of intentional copies (--allow FILE): one glob a line, matched
// against the symbol, its demangled name and its runtime; '#' comments.
struct AllowList {
  std::vector<std::string> patterns;
  bool allows(const Finding &f) const;
};
bool parseAllowList(const std::string &text, AllowList &out,
                    std::string *error);

// The runtime a state symbol belongs to: its namespace (without the last
// component) for C++ names, "prefix_*" for C names.
std::string runtimeOf(const std::string &display);
// "rt" for "dir/rt.c", "rt.o", "lib.a(rt.c.o)".
std::string fileStemOf(std::string_view file);
// The stem of a link record's input, for pairing file-local state: as
// fileStemOf, but a compiler driver's temporary object (/tmp/rt-a1b2c3.o
// from clang, /tmp/ccXyZ123.o from GCC) gives its source's stem ("rt") or
// none (""), not a name that differs on every build.
std::string recordedStemOf(std::string_view input);
// A variable's qualified name from its MSVC demangling, as a PDB names it:
// "struct Q * __ptr64 ns::queue" -> "ns::queue", "struct Q `int __cdecl
// bind(int)'::`2'::own" -> "bind::own"; any other name as it is.
std::string plainVariableName(std::string_view demangled);

// Findings ordered by runtime, then name; allowed ones are left out and
// counted in `allowed`.
std::vector<Finding> findDuplicates(const std::vector<AuditModule> &modules,
                                    const AllowList &allow, size_t *allowed);

// What the audit found, for the report and the exit status.
struct Report {
  std::string program;
  std::vector<AuditModule> modules;
  std::vector<Finding> findings;
  size_t allowed = 0;
  std::vector<NotFollowed> notFollowed;

  // Modules of the closure the audit could not see into (not inspectable,
  // not readable, not found), each named: a clean result is then not one.
  std::vector<std::string> incomplete() const;
};

// The exit status (docs/audit.md): 1 duplicated state found, 3 incomplete
// (unless `allowIncomplete`), else 0. Bad input (2) never gets here.
inline constexpr int kExitFound = 1;
inline constexpr int kExitIncomplete = 3;
int exitStatus(const Report &r, bool allowIncomplete);

std::string formatText(const Report &r);
std::string formatJson(const Report &r);

} // namespace linkd::audit
