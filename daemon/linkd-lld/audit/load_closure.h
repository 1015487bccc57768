// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The modules a program's loader would map: the program, then breadth
// first what each module needs, found the way its loader looks.
//   ELF (glibc ld.so): a name with '/' as given; else DT_RPATH of the module
//     and of the modules that loaded it (only without DT_RUNPATH),
//     LD_LIBRARY_PATH, DT_RUNPATH of the module, the default directories;
//     $ORIGIN is the loading module's directory; a candidate for another
//     machine is skipped, as ld.so does; a loaded SONAME is not loaded again.
//   PE: the program's directory, then each --search directory, names
//     compared without case; api-ms-win-* sets and DLLs found in none of
//     them are system DLLs (not followed).
//   Mach-O: @executable_path, @loader_path, @rpath (LC_RPATH of the loading
//     chain), absolute install names; else the name's file in --search.
// Modules named on the command line (dlopen/LoadLibrary plugins) are roots
// too, with their own closures.
#pragma once

#include "daemon/linkd-lld/audit/module_reader.h"

#include <string>
#include <vector>

namespace linkd::audit {

struct ClosureOptions {
  std::string program;
  std::vector<std::string> named; // plugins
  std::vector<std::string> searchDirs;
  std::string ldLibraryPath; // the environment's LD_LIBRARY_PATH
};

struct LoadedModule {
  ModuleInfo info;
  std::string how;          // "program", "named", "DT_NEEDED of X (RUNPATH)"
  size_t loader = SIZE_MAX; // index of the module that needed it
  // Found in the loader's default directories (ELF): the system's own
  // library, which is stripped by its distribution and whose exported state
  // the loader binds to one copy; without symbols it is not "incomplete".
  bool system = false;
};

struct Closure {
  std::vector<LoadedModule> modules;
  std::vector<NotFollowed> notFollowed; // "NAME (needed by X): why"
  std::vector<std::string> errors;      // modules that could not be read
};

// A Windows system DLL (kernel32.dll, msvcrt.dll, ucrtbase.dll, the MSVC
// redistributables, ...): never in the program's directory, one copy in
// the process; not following it leaves the audit complete.
bool isWindowsSystemDll(const std::string &name);

Closure loadClosure(const ClosureOptions &opts);

} // namespace linkd::audit
