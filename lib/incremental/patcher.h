// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Incremental relinks, the patch (docs/design.md, "Incremental relinks"):
// the previous output with one input object replaced by its new version,
// written in place of a full link when the new object changes nothing LLD
// decides from the whole link.
//
// Every section of the object keeps its size (a padded section its slot,
// see padding.h), so the layout of the output stays as LLD made it. The
// patch writes each changed section at the place LLD's map gives it and
// re-applies that section's relocations, then recomputes the build-id.
// Symbols may move within their sections (code that grew within its
// slot): the patch then also follows them wherever the output holds their
// addresses, or refuses. It rewrites their entries in .symtab and
// .dynsym; the relocations of the link's other objects that reach them
// directly (each checked against the value the previous link wrote); the
// dynamic relocations (R_X86_64_RELATIVE addends) of sites that point at
// them; the object's FDEs in .eh_frame, placed by the map's .eh_frame
// pieces, and the sorted table of .eh_frame_hdr. A moved symbol reached
// through a GOT entry that holds its address, the entry point, or an
// alias another input or option defines at its address is a reason. How LLD
// resolved each reference is read off the previous link (the old object's
// relocations against the old output): the address behind a PLT or GOT entry, a
// string's place in a merged section, a relaxed GOT load, the tombstone written
// for a discarded section. A reference the old link does not explain, to a
// symbol the map does not place either, is a reason for a full link, never a
// guess. Checked against LLD: the tests link the same inputs in full and
// compare every byte.
#pragma once

#include "incremental/link_map.h"
#include "incremental/relink_check.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace linkd::incremental {

// Another object of the link, as the previous output holds it.
struct OtherInput {
  std::string name;             // as the map names it
  llvm::StringRef bytes;        // what the previous link read (the caller's)
  const LinkMap *map = nullptr; // where its sections went; null if unknown
  // Whether LLD read it before the patched object: named before it on the
  // command line (an archive's member: its archive before the object, or
  // before the patched member's archive).
  bool earlier = false;
};

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
  // The link's other objects (plain ones and archive members) that may
  // have a global named one of the set (namesAnyGlobal; any it cannot
  // tell), asked for only when a global symbol of the object moved (their
  // references to it follow) or the object refers to a global it did not
  // name before (how they reach it is how it will). Fills its argument; ""
  // or why they cannot be told.
  std::function<std::string(const std::set<std::string> &,
                            std::vector<OtherInput> &)>
      otherInputs;
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
  // For counters: a RelinkCheck kind, or section_resized, symbols_moved
  // (a move the patch cannot follow), eh_frame_changed, not_placed,
  // unexplained_reference, dynamic_changed, build_id, unreadable.
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
  uint64_t symbolsMoved = 0; // symbols whose address or size changed
};

PatchResult patchOutput(const PatchInputs &in);

// The hashes of `output`'s 1 MiB chunks behind its build-id (a
// PatchResult's chunkHashes), computed ahead of a patch; empty without a
// build-id that is such a hash.
std::vector<uint8_t> buildIdChunkHashes(llvm::StringRef output);

// The previous output with `edits` laid over it.
std::string applyEdits(llvm::StringRef oldOutput,
                       const std::vector<Edit> &edits);

} // namespace linkd::incremental
