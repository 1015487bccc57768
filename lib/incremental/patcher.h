// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Incremental relinks, the patch (docs/design.md, "Incremental relinks"):
// the previous output with one input object replaced by its new version,
// written in place of a full link when the new object changes nothing LLD
// decides from the whole link.
//
// This step patches edits that move nothing: every section of the object
// keeps its size and every symbol its value and size (a changed constant,
// a changed initializer, a different comparison), so the layout, the
// symbol table, .eh_frame and the dynamic relocations of the output stay
// as LLD made them. The patch writes each changed section at the place
// LLD's map gives it and re-applies that section's relocations, then
// recomputes the build-id. How LLD resolved each reference is read off the
// previous link (the old object's relocations against the old output):
// the address behind a PLT or GOT entry, a string's place in a merged
// section, a relaxed GOT load, the tombstone written for a discarded
// section. A reference the old link does not explain, to a symbol the
// map does not place either, is a reason for a full link, never a guess.
// Checked against LLD: the tests link the same inputs in full and compare
// every byte.
#pragma once

#include "incremental/link_map.h"
#include "incremental/relink_check.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace linkd::incremental {

struct PatchInputs {
  llvm::MemoryBufferRef oldOutput; // the previous link's output
  const LinkMap *map = nullptr;    // that link's map
  std::string objectName;          // the object, as the map names it
  llvm::MemoryBufferRef oldObject; // what the previous link read
  llvm::MemoryBufferRef newObject; // what this link reads instead
  // The hashes of the previous output's 1 MiB chunks behind its build-id
  // (a PatchResult's chunkHashes), when kept: only the chunks the edits
  // touch are hashed again. Used only if they hash to the build-id the
  // previous output holds; empty or stale, every chunk is hashed.
  llvm::ArrayRef<uint8_t> oldChunkHashes;
};

// Bytes the patch writes over the previous output.
struct Edit {
  uint64_t offset = 0;
  std::string bytes;
};

struct PatchResult {
  bool patched = false;
  // Why not, naming the section, symbol or relocation; "" when patched.
  std::string reason;
  // For counters: a RelinkCheck kind, or section_resized, symbols_moved,
  // eh_frame_changed, not_placed, unexplained_reference, dynamic_changed,
  // build_id, unreadable.
  std::string kind;
  // What turns the previous output into the new one, when patched: in
  // file order, none overlapping, all within the file (the build-id last
  // in the order it is computed, but sorted with the rest).
  std::vector<Edit> edits;
  // The chunk hashes behind the new output's build-id, for the next patch
  // (empty without a build-id).
  std::vector<uint8_t> chunkHashes;
  uint64_t sectionsWritten = 0;
  uint64_t bytesWritten = 0;
  uint64_t relocationsApplied = 0;
};

PatchResult patchOutput(const PatchInputs &in);

// The previous output with `edits` laid over it.
std::string applyEdits(llvm::StringRef oldOutput,
                       const std::vector<Edit> &edits);

} // namespace linkd::incremental
