// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// An incremental relink in the link child (docs/incremental.md): when the
// link is the same as this output's last one but for objects whose new
// versions move nothing (lib/incremental/patcher.h), the last output is
// patched; else LLD links in full, with -Map and --dependency-file into the
// output's state directory, and the state is kept for the next time. In
// verify mode LLD links in full beside every patch, writes the output, and
// the patch is compared with it.
//
// The state, one directory per output under the daemon's plan
// (<state_dir>/<hash of the working directory and the output>):
//   output     the last output: a second name of the user's output file
//              (a copy where the state is on another file system)
//   spare      the output before it, and spare.edits: what made the last
//              one from it (see IncrementalLink::publish)
//   spare.ready-<identity>[.chunks]
//              after a full link: a copy of its output and the chunk
//              hashes behind its build-id, made once the client had its
//              answer (incremental/ready_spare.h), for the first patch
//   prepare.lock  held while they are made
//   chunks     the chunk hashes behind the last output's build-id
//   map        its link map
//   manifest   argv, environment, umask, and each input's identity
//              (LLD's dependency file: path, size, mtime, ctime, inode),
//              with the copy of each object input
//   objects/N  the objects as the last link read them
// The outcome goes to the plan's result file, one line for the daemon:
//   patched objects=N bytes=B relocations=R write=W micros=T
//   full kind=K reason=...       (and the link ran in full)
//   verified micros=T | verify_differs offset=O   (verify mode)
// Exits the process with the link's status.
#pragma once

#include "daemon/linkd-lld/lld_entry.h"
#include "incremental/patcher.h"
#include "linkd/v1/linkd.pb.h"

#include <string>
#include <vector>

namespace linkd {

// `to`: a copy of `from` (the kernel copies, sharing blocks where the
// file system can) with the edits over it, through a temporary in LLD's
// form (journaled) and a rename, with LLD's output mode; "" or why not.
// `keepAs`: a second name of the new file, made before the rename where
// the file system allows.
std::string writePatchedCopy(const std::string &from, const std::string &to,
                             const std::vector<incremental::Edit> &edits,
                             const std::string &keepAs = "");
// Only the edits, over `path` itself; "" or why not.
std::string writeEditsInPlace(const std::string &path,
                              const std::vector<incremental::Edit> &edits);

[[noreturn]] void runIncrementalLinkAndExit(const v1::LinkRequest &req,
                                            const LldInvocation &inv);

} // namespace linkd
