// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "archive/ar_help.h"

namespace linkd::archive {
namespace {

// Everything after the usage lines, as llvm-ar-19 --help prints it.
constexpr const char *kArOptions =
    "\n"
    "OPTIONS:\n"
    "  --format              - archive format to create\n"
    "    =default            -   default\n"
    "    =gnu                -   gnu\n"
    "    =darwin             -   darwin\n"
    "    =bsd                -   bsd\n"
    "    =bigarchive         -   big archive (AIX OS)\n"
    "    =coff               -   coff\n"
    "  --plugin=<string>     - ignored for compatibility\n"
    "  -h --help             - display this help and exit\n"
    "  --output              - the directory to extract archive members to\n"
    "  --rsp-quoting         - quoting style for response files\n"
    "    =posix              -   posix\n"
    "    =windows            -   windows\n"
    "  --thin                - create a thin archive\n"
    "  --version             - print the version and exit\n"
    "  -X{32|64|32_64|any}   - object mode (only for AIX OS)\n"
    "  @<file>               - read options from <file>\n"
    "\n"
    "OPERATIONS:\n"
    "  d - delete [files] from the archive\n"
    "  m - move [files] in the archive\n"
    "  p - print contents of [files] found in the archive\n"
    "  q - quick append [files] to the archive\n"
    "  r - replace or insert [files] into the archive\n"
    "  s - act as ranlib\n"
    "  t - display list of files in archive\n"
    "  x - extract [files] from the archive\n"
    "\n"
    "MODIFIERS:\n"
    "  [a] - put [files] after [relpos]\n"
    "  [b] - put [files] before [relpos] (same as [i])\n"
    "  [c] - do not warn if archive had to be created\n"
    "  [D] - use zero for timestamps and uids/gids (default)\n"
    "  [h] - display this help and exit\n"
    "  [i] - put [files] before [relpos] (same as [b])\n"
    "  [l] - ignored for compatibility\n"
    "  [L] - add archive's contents\n"
    "  [N] - use instance [count] of name\n"
    "  [o] - preserve original dates\n"
    "  [O] - display member offsets\n"
    "  [P] - use full names when matching (implied for thin archives)\n"
    "  [s] - create an archive index (cf. ranlib)\n"
    "  [S] - do not build a symbol table\n"
    "  [T] - deprecated, use --thin instead\n"
    "  [u] - update only [files] newer than archive contents\n"
    "  [U] - use actual timestamps and uids/gids\n"
    "  [v] - be verbose about actions taken\n"
    "  [V] - display the version and exit\n";

constexpr const char *kRanlibOptions =
    "\n"
    "OPTIONS:\n"
    "  -h --help             - Display available options\n"
    "  -V --version          - Display the version of this program\n"
    "  -D                    - Use zero for timestamps and uids/gids "
    "(default)\n"
    "  -U                    - Use actual timestamps and uids/gids\n"
    "  -X{32|64|32_64|any}   - Specify which archive symbol tables should be "
    "generated if they do not already exist (AIX OS only)\n";

} // namespace

void printArHelp(llvm::raw_ostream &out, llvm::StringRef stem) {
  out << "OVERVIEW: LLVM Archiver\n\n"
      << "USAGE: " << stem
      << " [options] [-]<operation>[modifiers] [relpos] [count] <archive> "
         "[files]\n"
      << "       " << stem << " -M [<mri-script]\n"
      << kArOptions;
}

void printRanlibHelp(llvm::raw_ostream &out, llvm::StringRef stem) {
  out << "OVERVIEW: LLVM ranlib\n\nGenerate an index for archives\n\n"
      << "USAGE: " << stem << " archive...\n"
      << kRanlibOptions;
}

} // namespace linkd::archive
