// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/eh_frame_room.h"

#include "llvm/ADT/Twine.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/Endian.h"

#include <algorithm>
#include <cstring>

namespace linkd::incremental {

using namespace llvm;
namespace endian = support::endian;

namespace {

// The 32-bit length below which a record is not in the 64-bit format.
constexpr uint64_t kReservedLength = 0xfffffff0;

Error fail(const Twine &why) {
  return createStringError(inconvertibleErrorCode(),
                           "section .eh_frame " + why);
}

} // namespace

std::optional<std::vector<EhRecordSize>> ehFrameRecords(const ElfObject &o,
                                                        size_t section) {
  ArrayRef<uint8_t> data = o.contents[section];
  std::vector<EhRecordSize> records;
  std::vector<uint64_t> starts;
  for (uint64_t off = 0; off < data.size();) {
    if (data.size() - off < 8)
      return std::nullopt;
    uint64_t len = endian::read32le(data.data() + off);
    if (len < 4 || len >= kReservedLength || len > data.size() - off - 4)
      return std::nullopt; // a terminator, the 64-bit format, or cut short
    uint64_t back = endian::read32le(data.data() + off + 4);
    bool cie = back == 0;
    if (!cie) {
      // An FDE's CIE pointer reaches back to a CIE of this section.
      auto c = std::find(starts.begin(), starts.end(), off + 4 - back);
      if (back > off + 4 || c == starts.end() ||
          !records[static_cast<size_t>(c - starts.begin())].cie)
        return std::nullopt;
    }
    records.push_back({4 + len, cie});
    starts.push_back(off);
    off += 4 + len;
  }
  for (const ELFT::Rela &r : o.relocs[section]) {
    auto next = std::upper_bound(starts.begin(), starts.end(), r.r_offset);
    size_t i = static_cast<size_t>(next - starts.begin());
    if (i == 0 || r.r_offset + 4 > starts[i - 1] + records[i - 1].size)
      return std::nullopt;
  }
  for (const ELFT::Sym &s : o.symbols)
    if (s.st_shndx == section &&
        (s.getType() != ELF::STT_SECTION || s.st_value != 0))
      return std::nullopt;
  return records;
}

Expected<PaddedEhFrame> padEhFrame(const ElfObject &o, size_t section,
                                   const std::vector<uint64_t> &slots) {
  std::optional<std::vector<EhRecordSize>> records = ehFrameRecords(o, section);
  if (!records)
    return fail("has records the padder does not take");
  if (records->size() != slots.size())
    return fail("has " + Twine(records->size()) + " records, its slots " +
                Twine(slots.size()));
  ArrayRef<uint8_t> data = o.contents[section];
  PaddedEhFrame out;
  std::vector<uint64_t> from, to; // each record's offset, before and after
  uint64_t at = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const EhRecordSize &r = (*records)[i];
    if (r.cie ? r.size != slots[i] : r.size > slots[i])
      return fail(r.cie
                      ? "CIE " + Twine(i) + " changed size (" + Twine(r.size) +
                            " bytes, was " + Twine(slots[i]) + ")"
                      : "FDE " + Twine(i) + " (" + Twine(r.size) +
                            " bytes) outgrew its slot (" + Twine(slots[i]) +
                            " bytes)");
    if (slots[i] - 4 >= kReservedLength)
      return fail("record " + Twine(i) + " would need the 64-bit format");
    from.push_back(at);
    to.push_back(out.bytes.size());
    std::string rec(reinterpret_cast<const char *>(data.data() + at), r.size);
    rec.resize(slots[i], '\0'); // DW_CFA_nop
    endian::write32le(rec.data(), static_cast<uint32_t>(slots[i] - 4));
    if (!r.cie) {
      uint64_t cie = at + 4 - endian::read32le(rec.data() + 4);
      size_t c = static_cast<size_t>(std::find(from.begin(), from.end(), cie) -
                                     from.begin());
      endian::write32le(rec.data() + 4,
                        static_cast<uint32_t>(to.back() + 4 - to[c]));
    }
    out.bytes += rec;
    at += r.size;
  }
  ArrayRef<uint8_t> raw = o.relocBytes[section];
  out.relocations.assign(reinterpret_cast<const char *>(raw.data()),
                         raw.size());
  const std::vector<ELFT::Rela> &relocs = o.relocs[section];
  if (raw.size() != relocs.size() * sizeof(ELFT::Rela))
    return fail("has relocations of an unexpected size");
  for (size_t k = 0; k < relocs.size(); ++k) {
    uint64_t off = relocs[k].r_offset;
    size_t i = static_cast<size_t>(
        std::upper_bound(from.begin(), from.end(), off) - from.begin() - 1);
    uint64_t moved = off - from[i] + to[i];
    endian::write64le(out.relocations.data() + k * sizeof(ELFT::Rela), moved);
  }
  return out;
}

} // namespace linkd::incremental
