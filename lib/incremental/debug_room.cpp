// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/debug_room.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/Dwarf.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/DataExtractor.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/LEB128.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

namespace linkd::incremental {

using namespace llvm;

namespace {

enum class Kind { Strings, Units, Locations, Ranges, Line, Abbrev, Info };

struct Shape {
  Kind kind = Kind::Strings;
  uint64_t granule = 1;
  uint64_t lastUnit = 0; // the offset of the last unit's length
  // .debug_abbrev and .debug_info: the object's one abbreviation table.
  uint64_t maxCode = 0;  // its largest abbreviation code
  uint64_t tableEnd = 0; // the offset of its terminating zero
};

// 32-bit DWARF lengths at or above this are reserved (0xffffffff: 64-bit).
constexpr uint64_t kReservedLength = 0xfffffff0;

// The offsets of the units that make up `data` end to end, each a 32-bit
// length and that many bytes; none when they do not.
std::vector<uint64_t> unitsOf(ArrayRef<uint8_t> data) {
  std::vector<uint64_t> units;
  uint64_t off = 0;
  while (off < data.size()) {
    if (data.size() - off < 4)
      return {};
    uint64_t len = support::endian::read32le(data.data() + off);
    if (len >= kReservedLength || len > data.size() - off - 4)
      return {};
    units.push_back(off);
    off += 4 + len;
  }
  return units;
}

uint64_t unitLength(ArrayRef<uint8_t> data, uint64_t unit) {
  return support::endian::read32le(data.data() + unit);
}

uint16_t unitVersion(ArrayRef<uint8_t> data, uint64_t unit) {
  return unitLength(data, unit) < 2
             ? 0
             : support::endian::read16le(data.data() + unit + 4);
}

struct AbbrevTable {
  uint64_t maxCode = 0;
  uint64_t end = 0;                  // the offset of its terminating zero
  std::map<uint64_t, bool> children; // by code
};

// The abbreviation table at the start of `data`, which must be the only
// thing in it but zeros.
std::optional<AbbrevTable> readAbbrevs(ArrayRef<uint8_t> data) {
  DataExtractor d(toStringRef(data), /*IsLittleEndian=*/true, 8);
  DataExtractor::Cursor c(0);
  AbbrevTable t;
  bool ok = false;
  while (c) {
    uint64_t at = c.tell();
    uint64_t code = d.getULEB128(c);
    if (c && code == 0) {
      // Zeros may follow: the room of a padded copy.
      t.end = at;
      ok = llvm::all_of(data.drop_front(at), [](uint8_t b) { return b == 0; });
      break;
    }
    d.getULEB128(c); // the tag
    uint8_t children = d.getU8(c);
    if (!c || t.children.count(code))
      break;
    t.children[code] = children != 0;
    t.maxCode = std::max(t.maxCode, code);
    while (c) {
      uint64_t attr = d.getULEB128(c), form = d.getULEB128(c);
      if (form == dwarf::DW_FORM_implicit_const)
        d.getSLEB128(c);
      if (attr == 0 && form == 0)
        break;
    }
  }
  consumeError(c.takeError());
  if (!ok || t.maxCode >= (uint64_t{1} << 32))
    return std::nullopt;
  return t;
}

std::optional<size_t> sectionNamed(const ElfObject &o, StringRef name) {
  auto at = std::find(o.names.begin(), o.names.end(), name);
  if (at == o.names.end() ||
      std::count(o.names.begin(), o.names.end(), name) != 1)
    return std::nullopt;
  return static_cast<size_t>(at - o.names.begin());
}

// The two abbreviations of the filler DIE: code max+1 a DIE of no
// attributes (room of a byte or few), code max+2 one of a DW_FORM_block4.
std::string fillerAbbrevs(uint64_t maxCode) {
  std::string s;
  raw_string_ostream os(s);
  encodeULEB128(maxCode + 1, os);
  encodeULEB128(dwarf::DW_TAG_lo_user, os);
  os << '\0' << '\0' << '\0'; // DW_CHILDREN_no, no attributes
  encodeULEB128(maxCode + 2, os);
  encodeULEB128(dwarf::DW_TAG_lo_user, os);
  os << '\0';
  encodeULEB128(dwarf::DW_AT_lo_user, os);
  encodeULEB128(dwarf::DW_FORM_block4, os);
  os << '\0' << '\0';
  return s;
}

// The object's abbreviation table, when .debug_abbrev holds just one.
std::optional<AbbrevTable> objectAbbrevs(const ElfObject &o) {
  std::optional<size_t> sec = sectionNamed(o, ".debug_abbrev");
  if (!sec || !o.relocs[*sec].empty())
    return std::nullopt;
  return readAbbrevs(o.contents[*sec]);
}

// Whether .debug_info (section `sec`) is one 32-bit compile unit of DWARF
// 4 or 5 whose root DIE has children, the last byte ending them, no
// relocation there, using the object's one abbreviation table.
std::optional<AbbrevTable> infoShape(const ElfObject &o, size_t sec) {
  ArrayRef<uint8_t> data = o.contents[sec];
  std::vector<uint64_t> units = unitsOf(data);
  if (units.size() != 1 || data.back() != 0)
    return std::nullopt;
  uint16_t version = unitVersion(data, 0);
  uint64_t header = version == 5 ? 12 : version == 4 ? 11 : 0;
  if (header == 0 || data.size() <= header ||
      (version == 5 && data[6] != dwarf::DW_UT_compile))
    return std::nullopt;
  std::optional<AbbrevTable> t = objectAbbrevs(o);
  if (!t)
    return std::nullopt;
  DataExtractor d(toStringRef(data), true, 8);
  DataExtractor::Cursor c(header);
  uint64_t root = d.getULEB128(c);
  bool readable = static_cast<bool>(c);
  consumeError(c.takeError());
  auto it = t->children.find(root);
  if (!readable || it == t->children.end() || !it->second)
    return std::nullopt;
  for (const ELFT::Rela &r : o.relocs[sec])
    if (r.r_offset >= data.size() - 1)
      return std::nullopt;
  return t;
}

std::optional<Shape> shapeOf(const ElfObject &o, size_t sec) {
  const ELFT::Shdr &h = o.sections[sec];
  const std::string &name = o.names[sec];
  ArrayRef<uint8_t> data = o.contents[sec];
  if (h.sh_type != ELF::SHT_PROGBITS ||
      (h.sh_flags & (ELF::SHF_ALLOC | ELF::SHF_COMPRESSED | ELF::SHF_GROUP)) ||
      data.empty())
    return std::nullopt;
  Shape s;
  if (name == ".debug_str" || name == ".debug_line_str") {
    // SHF_MERGE is gone from a padded copy.
    if (!(h.sh_flags & ELF::SHF_STRINGS) || h.sh_entsize != 1 ||
        data.back() != 0)
      return std::nullopt;
    s.kind = Kind::Strings;
    return s;
  }
  if (h.sh_flags & ELF::SHF_MERGE)
    return std::nullopt;
  if (name == ".debug_abbrev" || name == ".debug_info") {
    std::optional<size_t> info = sectionNamed(o, ".debug_info");
    std::optional<AbbrevTable> t;
    if (info)
      t = infoShape(o, *info);
    if (!t)
      return std::nullopt;
    s.kind = name == ".debug_info" ? Kind::Info : Kind::Abbrev;
    s.maxCode = t->maxCode;
    s.tableEnd = t->end;
    return s;
  }
  std::vector<uint64_t> units = unitsOf(data);
  if (units.empty())
    return std::nullopt;
  s.lastUnit = units.back();
  uint64_t len = unitLength(data, s.lastUnit);
  uint16_t version = unitVersion(data, s.lastUnit);
  const uint8_t *u = data.data() + s.lastUnit;
  if (name == ".debug_line") {
    // The opcode base: DW_LNS_const_add_pc must be a standard opcode.
    uint64_t base = version == 5 ? 17 : version == 4 ? 15 : 0;
    if (base == 0 || len + 4 <= base || u[base] <= dwarf::DW_LNS_const_add_pc)
      return std::nullopt;
    s.kind = Kind::Line;
    return s;
  }
  if (version != 5 || len < 4)
    return std::nullopt;
  s.kind = Kind::Units;
  if (name == ".debug_addr") {
    s.granule = u[6]; // the address size
    if (u[7] != 0 || (s.granule != 4 && s.granule != 8))
      return std::nullopt;
  } else if (name == ".debug_str_offsets") {
    s.granule = 4;
  } else if (name == ".debug_loclists" || name == ".debug_rnglists") {
    // The room joins the last list, before its end-of-list entry.
    if (data.back() != 0 ||
        llvm::any_of(o.relocs[sec], [&](const ELFT::Rela &r) {
          return r.r_offset >= data.size() - 1;
        }))
      return std::nullopt;
    s.kind = name == ".debug_loclists" ? Kind::Locations : Kind::Ranges;
  } else {
    return std::nullopt;
  }
  if ((len - 4) % s.granule != 0)
    return std::nullopt;
  return s;
}

Error fail(const ElfObject &o, size_t sec, const Twine &why) {
  return createStringError(inconvertibleErrorCode(),
                           "section " + o.names[sec] + " " + why);
}

Error outgrew(const ElfObject &o, size_t sec, uint64_t size, uint64_t slot) {
  return fail(o, sec,
              "(" + Twine(size) + " bytes) outgrew its slot (" + Twine(slot) +
                  " bytes)");
}

// A filler cannot take every size: a byte or two left over is no room.
Error tooLittleRoom(const ElfObject &o, size_t sec, uint64_t size,
                    uint64_t slot) {
  return fail(o, sec,
              "(" + Twine(size) +
                  " bytes) leaves too little room for a filler: it outgrew "
                  "its slot (" +
                  Twine(slot) + " bytes)");
}

// The filler DIE of `room` bytes: one of code max+2, its block holding
// the rest, or one of code max+1 whose code is padded to the room.
std::optional<std::string> fillerDie(uint64_t room, uint64_t maxCode) {
  std::string s;
  raw_string_ostream os(s);
  if (room == 0)
    return s;
  unsigned blockCode = getULEB128Size(maxCode + 2);
  if (room >= blockCode + 4ULL) {
    uint64_t bytes = room - blockCode - 4;
    if (bytes >= kReservedLength)
      return std::nullopt;
    encodeULEB128(maxCode + 2, os);
    char len[4];
    support::endian::write32le(len, static_cast<uint32_t>(bytes));
    os.write(len, 4);
    os.write_zeros(bytes);
    return s;
  }
  if (room < getULEB128Size(maxCode + 1))
    return std::nullopt;
  encodeULEB128(maxCode + 1, os, static_cast<unsigned>(room));
  return s;
}

// Entries of a location list that cover no address, `room` bytes of
// them: one DW_LLE_offset_pair of an empty range whose expression is
// DW_OP_nop (it is never evaluated).
std::optional<std::string> locationFiller(uint64_t room) {
  std::string s;
  if (room == 0)
    return s;
  for (unsigned lenSize = 1; lenSize <= 10; ++lenSize) {
    if (room < 3 + lenSize)
      return std::nullopt;
    uint64_t len = room - 3 - lenSize;
    if (getULEB128Size(len) > lenSize)
      continue;
    raw_string_ostream os(s);
    os << static_cast<char>(dwarf::DW_LLE_offset_pair) << '\0' << '\0';
    encodeULEB128(len, os, lenSize);
    os.write(std::string(len, static_cast<char>(dwarf::DW_OP_nop)).data(), len);
    return s;
  }
  return std::nullopt;
}

// Entries of a range list that cover no address, `room` bytes of them:
// DW_RLE_offset_pair (0, 0), each 3 to 21 bytes (its two operands padded
// to at most ten bytes, as every LEB128 reader takes).
std::optional<std::string> rangeFiller(uint64_t room) {
  std::string s;
  raw_string_ostream os(s);
  while (room > 0) {
    if (room < 3)
      return std::nullopt;
    uint64_t e = std::min<uint64_t>(room, 21);
    if (room - e == 1 || room - e == 2)
      e = room - 3;
    unsigned a = static_cast<unsigned>(std::min<uint64_t>(10, e - 2));
    os << static_cast<char>(dwarf::DW_RLE_offset_pair);
    encodeULEB128(0, os, a);
    encodeULEB128(0, os, static_cast<unsigned>(e - 1 - a));
    room -= e;
  }
  return s;
}

} // namespace

std::optional<DebugRoom> debugRoomOf(const ElfObject &o, size_t section) {
  std::optional<Shape> s = shapeOf(o, section);
  if (!s)
    return std::nullopt;
  DebugRoom r;
  r.granule = s->granule;
  if (s->kind == Kind::Abbrev)
    r.added = fillerAbbrevs(s->maxCode).size();
  return r;
}

Expected<std::string> padDebugSection(const ElfObject &o, size_t section,
                                      uint64_t slot, uint64_t &flags) {
  std::optional<Shape> s = shapeOf(o, section);
  if (!s)
    return fail(o, section, "is not a debug section the padder takes");
  ArrayRef<uint8_t> data = o.contents[section];
  StringRef bytes = toStringRef(data);
  uint64_t size = data.size();
  flags = o.sections[section].sh_flags;
  std::string out;
  switch (s->kind) {
  case Kind::Strings:
  case Kind::Units:
  case Kind::Line: {
    if (size > slot)
      return outgrew(o, section, size, slot);
    uint64_t room = slot - size;
    if (room % s->granule != 0)
      return fail(o, section,
                  "has room of " + Twine(room) + " bytes, not a multiple of " +
                      Twine(s->granule));
    out = bytes.str();
    if (s->kind == Kind::Strings) {
      flags &= ~static_cast<uint64_t>(ELF::SHF_MERGE);
      out.append(room, '\0');
      return out;
    }
    uint64_t len = unitLength(data, s->lastUnit) + room;
    if (len >= kReservedLength)
      return fail(o, section, "would need 64-bit DWARF for its room");
    support::endian::write32le(out.data() + s->lastUnit,
                               static_cast<uint32_t>(len));
    out.append(room, s->kind == Kind::Line
                         ? static_cast<char>(dwarf::DW_LNS_const_add_pc)
                         : '\0');
    return out;
  }
  case Kind::Locations:
  case Kind::Ranges: {
    if (size > slot)
      return outgrew(o, section, size, slot);
    uint64_t room = slot - size;
    std::optional<std::string> filler =
        s->kind == Kind::Locations ? locationFiller(room) : rangeFiller(room);
    uint64_t len = unitLength(data, s->lastUnit) + room;
    if (!filler || len >= kReservedLength)
      return tooLittleRoom(o, section, size, slot);
    out = bytes.drop_back().str() + *filler + bytes.take_back().str();
    support::endian::write32le(out.data() + s->lastUnit,
                               static_cast<uint32_t>(len));
    return out;
  }
  case Kind::Abbrev: {
    std::string added = fillerAbbrevs(s->maxCode);
    if (size + added.size() > slot)
      return outgrew(o, section, size + added.size(), slot);
    out = bytes.substr(0, s->tableEnd).str() + added +
          bytes.substr(s->tableEnd).str();
    out.append(slot - out.size(), '\0');
    return out;
  }
  case Kind::Info: {
    if (size > slot)
      return outgrew(o, section, size, slot);
    uint64_t room = slot - size;
    std::optional<std::string> filler = fillerDie(room, s->maxCode);
    uint64_t len = unitLength(data, 0) + room;
    if (!filler || len >= kReservedLength)
      return tooLittleRoom(o, section, size, slot);
    out = bytes.drop_back().str() + *filler + bytes.take_back().str();
    support::endian::write32le(out.data(), static_cast<uint32_t>(len));
    return out;
  }
  }
  return fail(o, section, "has no kind");
}

} // namespace linkd::incremental
