// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A ready spare: a copy of an incremental state's output, made by the
// link child of a full link after its client has the answer, so that the
// first patch after a full link writes its edits into a file of its own
// instead of copying the output then (docs/incremental.md).
//
// The copy is named after the identity of the file it copies (inode, size,
// modification and change times), so a link child takes it only for the
// output its manifest records: one made from an output that has since been
// replaced or written keeps a name no state asks for, and goes with the
// next full link (removeReadySpares). A copy is complete once it has its
// name (written, synced, renamed).
#pragma once

#include <cstdint>
#include <string>

struct stat;

namespace linkd::incremental {

// The file name, in a state directory, of a ready spare of the output
// whose identity is this.
std::string readySpareName(uint64_t ino, uint64_t size, int64_t mtimeNs,
                           int64_t ctimeNs);
std::string readySpareName(const struct stat &st);
// Beside it, the chunk hashes behind that output's build-id (the patch
// checks them against it).
inline std::string readyChunksName(const std::string &readySpare) {
  return readySpare + ".chunks";
}

// Copies `stateDir`/output to its ready spare: "" or why not (the output
// is gone, the disk is full). `outdated`: not made because the output was
// written or replaced during the copy (another link came first).
std::string makeReadySpare(const std::string &stateDir, bool &outdated);

// Removes every ready spare in `stateDir`, and any copy in progress.
void removeReadySpares(const std::string &stateDir);

} // namespace linkd::incremental
