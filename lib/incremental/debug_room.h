// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Incremental relinks, room in debug sections (docs/design.md,
// "Incremental relinks", step 1): how an object's DWARF sections are
// padded so that a later version whose debug info grew (a new local, a
// new statement's line rows, a renamed function's name) still fits the
// place LLD gave the first one, while every DWARF reader still reads the
// padded object and the linked program without a warning.
//
// Zeros are not room in most DWARF sections, so each kind of section is
// padded in the way its readers skip:
//   .debug_str, .debug_line_str  handed to LLD without SHF_MERGE (each
//       object keeps its own strings, in its own slot; LLD then
//       concatenates instead of deduplicating); the room is empty strings.
//   .debug_addr, .debug_str_offsets  the last unit's length covers the
//       room: zeros are addresses or string offsets no one uses.
//   .debug_loclists, .debug_rnglists  the last unit's length covers the
//       room, which is entries of the last list, before its end: empty
//       ranges (a location's expression DW_OP_nop). Every byte of the unit
//       stays in a list (readelf reads up to the last list's end and then
//       expects another unit).
//   .debug_line   the last line program's length covers the room, whose
//       opcodes are DW_LNS_const_add_pc: they move the address and add no
//       row.
//   .debug_info   the compile unit's length covers the room, which holds
//       one more child DIE of the unit (tag and attribute DW_*_lo_user,
//       its bytes a DW_FORM_block4); its two abbreviations are added to
//       the object's .debug_abbrev, whose room is zero bytes after the
//       table (empty tables no unit names).
// Anything else (64-bit DWARF, more than one unit in .debug_info or more
// than one abbreviation table, DWARF before version 4, .debug_aranges,
// .debug_frame) keeps its size: a change to it links in full.
#pragma once

#include "incremental/elf_object.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace linkd::incremental {

struct DebugRoom {
  // Room is a multiple of this many bytes (an address, a string offset).
  uint64_t granule = 1;
  // Bytes the padding adds besides the room (the filler's abbreviations).
  uint64_t added = 0;
};

// How debug section `section` of `o` takes room, if it can. Its name is
// unique in the object (the caller checks).
std::optional<DebugRoom> debugRoomOf(const ElfObject &o, size_t section);

// The bytes of debug section `section` grown to `slot` bytes as its kind
// is padded; `flags` is its header's, less SHF_MERGE for strings. An error
// names the section when it cannot be (it outgrew the slot, or is not a
// section debugRoomOf takes).
llvm::Expected<std::string> padDebugSection(const ElfObject &o, size_t section,
                                            uint64_t slot, uint64_t &flags);

} // namespace linkd::incremental
