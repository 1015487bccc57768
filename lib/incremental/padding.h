// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Incremental relinks, the room a first link leaves (docs/design.md,
// "Incremental relinks", step 1): an object whose sections are padded to
// slots, so that a later version of it whose code or data grew still fits
// the place LLD gave the first one. LLD links the padded objects as it
// links any; the patch of a later version pads it to the same slots, and
// the oracle is LLD's link of those padded inputs.
//
// Only sections a patch may write and a padding cannot change the meaning
// of get a slot: allocated sections with bytes (code gets int3, data
// zeros) and uninitialised data (.bss: room without bytes), each the only
// section of its name in the object; DWARF sections, each padded in a
// way its readers skip (debug_room.h); and each FDE of .eh_frame
// (eh_frame_room.h). Mergeable sections (LLD splits them into pieces)
// and notes keep their size, and so do sections whose pieces from all objects
// make one thing: `.init`/`.fini` fragments, `.ctors`, `.init_array` and the
// like, metadata ordered with code (SHF_LINK_ORDER:
// `__patchable_function_entries`), and sections named as C identifiers (arrays
// walked from __start_NAME to __stop_NAME).
#pragma once

#include "incremental/relink_check.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace linkd::incremental {

struct Slot {
  std::string section; // its name, unique in the object
  uint64_t size = 0;   // the padded size
  // Its alignment (0: the section's own). A later version whose section
  // needs less (a .data emptied of its 4-byte variable) is given this one,
  // so LLD places it as before; one that needs more does not fit.
  uint64_t align = 0;
  // .eh_frame: each record's padded size (eh_frame_room.h); `size` is
  // their sum.
  std::vector<uint64_t> records;
  bool operator==(const Slot &) const = default;
};

// The slots `policy` gives the sections of `object` a later edit may grow,
// in section order.
llvm::Expected<std::vector<Slot>> slotsOf(llvm::MemoryBufferRef object,
                                          const SlackPolicy &policy);

// `object` with each section of `slots` grown to its slot: its relocations,
// symbols and other sections as they were. A section larger than its slot
// (the object outgrew the room), or a slot naming no such section, is an
// error naming it.
llvm::Expected<std::string> padObject(llvm::MemoryBufferRef object,
                                      const std::vector<Slot> &slots);

} // namespace linkd::incremental
