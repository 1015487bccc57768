// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Runs one archiver command (llvm-ar, llvm-ranlib or llvm-lib command line)
// in the current process, as the stock tool would: same outputs, same
// stdout, same diagnostics with the same program name, same exit status. It
// never returns.
//
// llvm-lib is LLVM's own driver (llvm::libDriverMain, exported by libLLVM),
// called exactly as the llvm-lib executable calls it. llvm-ar and llvm-ranlib
// have no library entry point; their command lines are implemented here
// (ar_command_line.cpp, member_list.cpp, archive_update.cpp,
// archive_listing.cpp, mri_script.cpp) over LLVM's archive reader and writer.
// Like the stock tool, it registers every target's MC layer and asm parser
// first: bitcode members with module-level inline asm need them for the
// symbol table.
//
// Callers are a forked link child (daemon/linkd-lld/zygote.cpp) and `linkd-lld link
// --flavor ar|ranlib|lib`, the local fallback.
#pragma once

#include "link/flavor.h"

#include <string>
#include <vector>

namespace linkd::archive {

struct ArchiverInvocation {
  Flavor flavor = Flavor::Unspecified; // Ar, Ranlib or Lib
  std::vector<std::string> argv;       // as invoked, argv[0] included
  bool stderrIsColorTty = false;
  // False in a link child whose client sent no stdin: an MRI script then
  // exits with kNeedsStdinStatus instead of reading an empty one.
  bool stdinAvailable = true;
};

[[noreturn]] void runArchiverAndExit(const ArchiverInvocation &inv);

} // namespace linkd::archive
