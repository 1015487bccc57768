// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The members of the archive an update writes, in order.
//
// Members come from files on disk and from the existing archive. A file's
// member name is its base name, or for a thin archive its path relative to
// the archive (absolute paths stay absolute). An existing member keeps its
// header (unless deterministic mode zeroes dates and owners). Archives given
// as members are flattened where llvm-ar flattens them: always with the L
// modifier, and for thin archives when the nested archive is thin itself.
//
// The update walks the existing members once, deciding each one's fate from
// the first command-line name that matches it (by base name, or by full path
// with P and for thin archives): kept; deleted (d; with N only its count-th
// match); moved to the insertion point (m, and r with a/b/i); or replaced by
// the file (r; with u only if the file is not older than the member). A name
// is used up by its first match, except with N. Then the members moved aside
// go to the insertion point (after or before [relpos], else the end), and the
// names nothing matched become new members there, ahead of the moved ones.
// q appends every name, L flattening archives.
#pragma once

#include "archive/ar_command_line.h"
#include "archive/archiver_context.h"

#include "llvm/Object/ArchiveWriter.h"

#include <vector>

namespace linkd::archive {

// The member for file `path` (its contents loaded), named as above.
llvm::NewArchiveMember memberFromFile(ArchiverContext &ctx,
                                      const ArCommand &cmd,
                                      llvm::StringRef path);

// Appends file `path`; with `flatten`, an archive's members instead.
void appendFile(ArchiverContext &ctx, const ArCommand &cmd,
                std::vector<llvm::NewArchiveMember> &members,
                llvm::StringRef path, bool flatten);

// Appends an existing member; with `flatten`, the members of an archive it
// refers to (thin archives).
void appendOldMember(ArchiverContext &ctx, const ArCommand &cmd,
                     std::vector<llvm::NewArchiveMember> &members,
                     const llvm::object::Archive::Child &child, bool flatten);

// True if the member name `a` and the path `b` name the same member.
bool sameMemberName(const ArCommand &cmd, llvm::StringRef a, llvm::StringRef b);

// The members after `cmd.operation` (d, m, q, r, s) on `old` (null: a new
// archive).
std::vector<llvm::NewArchiveMember> planMembers(ArchiverContext &ctx,
                                                const ArCommand &cmd,
                                                llvm::object::Archive *old);

} // namespace linkd::archive
