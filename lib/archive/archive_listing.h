// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The operations that read an archive without changing it: t (list), p
// (print members to stdout) and x (extract members into files), with their
// output exactly as llvm-ar 19 prints it.
//
// Without names every member is visited in order; with names only the first
// member matching each name (with N, its count-th match), and a name nothing
// matched is an error ("'x.o' was not found") after the others are done.
//   t    one name per line; a thin archive's relative names get the archive's
//        directory in front; O adds " 0x<offset of the data>"; v prefixes
//        "rw-r--r-- uid/gid   size Mon dd hh:mm yyyy " (local time)
//   p    the member's bytes; v prefixes "Printing <name>"
//   x    writes ./<base name> (or --output DIR/<base name>) with the member's
//        mode for a new file; o sets its modification time to the member's;
//        v prints "x - <path>"; thin archives cannot be extracted
#pragma once

#include "archive/ar_command_line.h"
#include "archive/archiver_context.h"

namespace linkd::archive {

void readArchive(ArchiverContext &ctx, ArCommand &cmd,
                 llvm::object::Archive &archive);

} // namespace linkd::archive
