// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Incremental relinks, step one (docs/design.md, "Incremental relinks"):
// whether the new version of one input object could be patched into the
// previous output in place of the old one, or the reason a full link is
// needed instead. The patcher (a later step, behind --linkd-incremental)
// writes changed sections at their old addresses and re-applies
// relocations; it may do so only when nothing LLD decides from the whole
// link can come out differently:
//   - the same sections (name, type, flags, alignment, group), each new
//     one within its slot (the old size plus the slack the first link
//     left, SlackPolicy); mergeable sections byte-identical (their pieces
//     are deduplicated across the whole link); .eh_frame of the same size
//     (LLD rebuilds it and .eh_frame_hdr from every object's records);
//   - the same symbols (names, binding, type, visibility, section): values
//     and sizes may move within their section's slot; a new undefined
//     global is a new reference the patch may follow (newReferences), one
//     no longer named a gone reference (goneReferences);
//   - the same linker-made entries: the symbols that need a GOT, PLT or
//     TLS entry, and as many absolute relocations (each may become a
//     dynamic relocation in a PIE or shared object).
// ELF x86-64 relocatable objects only; anything else is a reason.
#pragma once

#include "incremental/elf_object.h"

#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace linkd::incremental {

// The room a first link leaves after each section it may patch later.
struct SlackPolicy {
  uint64_t percent = 0; // of the section's size
  uint64_t bytes = 0;   // added to every section
  // The slot of a section `size` bytes long: the size and the slack,
  // rounded up to `align` (the padder pads to it); without slack, the size.
  uint64_t slot(uint64_t size, uint64_t align) const;
};

struct RelinkCheck {
  bool patchable = false;
  // Why not, naming the section or symbol; "" when patchable.
  std::string reason;
  // The reason's kind, for counters: not_x86_64_object, sections_changed,
  // section_outgrew, merged_changed, eh_frame_changed, symbols_changed,
  // linker_entries_changed, unreadable.
  std::string kind;
  // What a patch would write: sections whose content or size changed, the
  // bytes that differ, and the relocations of those sections.
  std::vector<std::string> changedSections;
  uint64_t changedBytes = 0;
  uint64_t relocations = 0;
  // Global symbols the new version names, undefined, and the old one did
  // not (a first call to getenv), with the entries their references need.
  // The object alone cannot tell whether the output already has them: the
  // patch can, from the link's other objects (patcher.h).
  std::vector<std::string> newReferences;
  // Those the old version named that way and the new one does not name at
  // all (a call to getenv removed): the output keeps them, and their
  // entries, only if other objects still need them (the patch checks).
  std::vector<std::string> goneReferences;
};

RelinkCheck checkRelink(llvm::MemoryBufferRef oldObject,
                        llvm::MemoryBufferRef newObject,
                        const SlackPolicy &slack);
// The same of two objects already read (readElfObject).
RelinkCheck checkRelink(const ElfObject &oldObject, const ElfObject &newObject,
                        const SlackPolicy &slack);

} // namespace linkd::incremental
