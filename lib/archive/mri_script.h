// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// llvm-ar's MRI scripts (`ar -M <script`), as llvm-ar 19 runs them.
//
// The script is read line by line; anything after ';' or '*' is a comment,
// and blank lines are skipped (but counted for error messages, which read
// "error: script line N: ..."). A line is a command (case-insensitive) and an
// argument, which may be quoted:
//   CREATE a.a / CREATETHIN a.a   the archive to write (one per script)
//   ADDMOD f.o                    add a file
//   ADDLIB b.a                    add an archive's members
//   DELETE f.o                    drop the members added so far by that name
//   SAVE                          write the archive at the end of the script
//   END                           nothing (later lines still run)
// Without SAVE nothing is written. The archive is always new: an existing
// file of that name is replaced, never read.
#pragma once

#include "archive/ar_command_line.h"
#include "archive/archiver_context.h"

namespace linkd::archive {

// Reads the script from stdin and runs it with the options given before -M
// (--thin, --format). Ends the process.
[[noreturn]] void runMriScript(ArchiverContext &ctx, ArCommand &cmd);

} // namespace linkd::archive
