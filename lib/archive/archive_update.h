// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Writing an archive: the updates (d, m, q, r), an MRI script's SAVE, and
// adding a symbol table (s, ranlib).
//
// The bytes come from LLVM's archive writer (llvm::writeArchive: a temporary
// file beside the archive, renamed over it), called exactly as llvm-ar 19
// calls it, so the output is llvm-ar's. What is decided here is what llvm-ar
// decides before that call:
//   * thin or not: an existing thin archive stays thin; a regular one cannot
//     become thin;
//   * the format: --format if given (only gnu can be thin); else a thin
//     archive is GNU, an existing archive keeps its kind (but a BSD archive
//     whose first new member is Mach-O becomes Darwin, and a GNU archive
//     without a symbol table whose first new member is COFF becomes COFF),
//     and a new archive takes the kind of its first member's object format,
//     or the host's default when it has none.
//   * `s` on an archive that has a symbol table does nothing.
#pragma once

#include "archive/ar_command_line.h"
#include "archive/archiver_context.h"

#include "llvm/Object/ArchiveWriter.h"

#include <memory>
#include <vector>

namespace linkd::archive {

// Writes `cmd.archive`: the members planned from `old` (null: none) and the
// command, or `scriptMembers` if given (an MRI script's). `cmd` may become
// thin (an existing thin archive).
void writeUpdatedArchive(ArchiverContext &ctx, ArCommand &cmd,
                         llvm::object::Archive *old,
                         std::unique_ptr<llvm::MemoryBuffer> oldBuffer,
                         std::vector<llvm::NewArchiveMember> *scriptMembers);

// `s` / ranlib: gives `old` a symbol table if it has none.
void addSymbolTable(ArchiverContext &ctx, ArCommand &cmd,
                    llvm::object::Archive &old);

} // namespace linkd::archive
