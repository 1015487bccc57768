// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Incremental relinks, room in unwind records (docs/design.md,
// "Incremental relinks", step 1). LLD splits an object's .eh_frame into
// its records, keeps one copy of each CIE and the FDEs of code it keeps,
// and builds .eh_frame_hdr from them: the section as a whole has no room
// to give, but each FDE can carry its own. The padder ends every FDE with
// DW_CFA_nop instructions (what assemblers pad records with), so a later
// version of the function whose unwind program grew (a new call, another
// saved register) still fits the record LLD placed before; the FDEs'
// CIE pointers and the section's relocations follow the records.
#pragma once

#include "incremental/elf_object.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace linkd::incremental {

struct EhRecordSize {
  uint64_t size = 0; // the length field and what it counts
  bool cie = false;
};

// The records of .eh_frame section `section` of `o`, when the padder can
// pad them: CIEs and FDEs of the 32-bit format and no terminator, each
// relocation within one record, no symbol in it but the section's own.
std::optional<std::vector<EhRecordSize>> ehFrameRecords(const ElfObject &o,
                                                        size_t section);

struct PaddedEhFrame {
  std::string bytes;       // the section's
  std::string relocations; // its SHT_RELA section's
};

// .eh_frame section `section` of `o` with its i-th record grown to
// `slots[i]` bytes: a CIE keeps its size, an FDE is padded with
// DW_CFA_nop. An error names the record that does not fit (a record more
// or fewer, a CIE that changed size, an FDE that outgrew its slot).
llvm::Expected<PaddedEhFrame> padEhFrame(const ElfObject &o, size_t section,
                                         const std::vector<uint64_t> &slots);

} // namespace linkd::incremental
