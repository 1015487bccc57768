// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/padding.h"

#include "incremental/debug_room.h"
#include "incremental/eh_frame_room.h"
#include "incremental/elf_object.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cstring>

#include <map>
#include <optional>

namespace linkd::incremental {

using namespace llvm;

namespace {

Error fail(MemoryBufferRef object, const Twine &why) {
  return createStringError(inconvertibleErrorCode(),
                           object.getBufferIdentifier() + ": " + why);
}

// A name LLD defines __start_NAME and __stop_NAME for: the section may be
// an array its program walks from one to the other.
bool isCIdentifier(StringRef name) {
  return !name.empty() && !isDigit(name[0]) &&
         llvm::all_of(name, [](char c) { return isAlnum(c) || c == '_'; });
}

// Sections whose pieces from every object make one thing: code fragments
// (crti.o's `.init` prologue, crtn.o's epilogue), arrays of pointers the
// runtime calls or walks. Room between the pieces would be run or called.
bool joinedAcrossObjects(StringRef name) {
  for (StringRef prefix : {".init", ".fini", ".ctors", ".dtors",
                           ".preinit_array", ".tm_clone_table", ".jcr"})
    if (name == prefix || name.starts_with((prefix + ".").str()))
      return true;
  return name.starts_with(".init_array") || name.starts_with(".fini_array");
}

// Whether padding section `i` keeps what the section means to LLD and to
// the program: its own code or data, whose room nothing walks into.
bool paddable(const ElfObject &o, size_t i,
              const std::map<std::string, int> &names) {
  const ELFT::Shdr &s = o.sections[i];
  const std::string &name = o.names[i];
  return (s.sh_flags & ELF::SHF_ALLOC) &&
         (s.sh_type == ELF::SHT_PROGBITS || s.sh_type == ELF::SHT_NOBITS) &&
         !(s.sh_flags & ELF::SHF_LINK_ORDER) && name != ".eh_frame" &&
         !name.empty() && names.at(name) == 1 && !isCIdentifier(name) &&
         !joinedAcrossObjects(name);
}

Expected<ElfObject> readObject(MemoryBufferRef object) {
  if (std::string why = notAnX8664Object(object); !why.empty())
    return createStringError(inconvertibleErrorCode(), why);
  return readElfObject(object);
}

// The slots of the records of .eh_frame (section `i`), if it is one the
// padder takes: a CIE keeps its size, an FDE gets the policy's share of
// its size and at most 8 bytes more, in 8-byte steps (the records of a
// 64-bit object are 8-byte aligned). A typical FDE of 24 to 48 bytes gets
// 16 or 24: a function needs one more call frame instruction or two
// after an edit, not the 64 bytes a whole section is given.
std::optional<std::vector<uint64_t>>
ehFrameSlots(const ElfObject &o, size_t i,
             const std::map<std::string, int> &names,
             const SlackPolicy &policy) {
  const ELFT::Shdr &s = o.sections[i];
  if (o.names[i] != ".eh_frame" || names.at(o.names[i]) != 1 ||
      !(s.sh_flags & ELF::SHF_ALLOC) ||
      (s.sh_type != ELF::SHT_PROGBITS && s.sh_type != ELF::SHT_X86_64_UNWIND))
    return std::nullopt;
  std::optional<std::vector<EhRecordSize>> records = ehFrameRecords(o, i);
  if (!records)
    return std::nullopt;
  bool slack = policy.percent || policy.bytes;
  std::vector<uint64_t> slots;
  for (const EhRecordSize &r : *records)
    slots.push_back(r.cie || !slack
                        ? r.size
                        : alignTo(r.size + r.size * policy.percent / 100 +
                                      std::min<uint64_t>(policy.bytes, 8),
                                  8));
  return slots;
}

std::map<std::string, int> nameCounts(const ElfObject &o) {
  std::map<std::string, int> n;
  for (const std::string &name : o.names)
    ++n[name];
  return n;
}

// The local labels (".L...") of strings and constants in `demerged`
// sections made section symbols with their values, in a new symbol table
// in `replaced`; "" or why not.
std::string
labelsToSectionSymbols(const ElfObject &o, const std::vector<size_t> &demerged,
                       std::vector<std::optional<std::string>> &replaced) {
  if (demerged.empty())
    return "";
  size_t symtab = 0;
  for (size_t i = 0; i < o.sections.size(); ++i)
    if (o.sections[i].sh_type == ELF::SHT_SYMTAB)
      symtab = i;
  if (symtab == 0 || replaced[symtab] ||
      o.symtabBytes.size() != o.symbols.size() * sizeof(ELFT::Sym))
    return "no symbol table to rewrite";
  std::string bytes = toStringRef(o.symtabBytes).str();
  for (size_t k = 0; k < o.symbols.size(); ++k) {
    const ELFT::Sym &s = o.symbols[k];
    if (s.getBinding() != ELF::STB_LOCAL || s.getType() == ELF::STT_SECTION ||
        std::find(demerged.begin(), demerged.end(), s.st_shndx) ==
            demerged.end() ||
        !StringRef(symbolName(o, s)).starts_with(".L"))
      continue;
    ELFT::Sym t = s;
    t.setBindingAndType(ELF::STB_LOCAL, ELF::STT_SECTION);
    std::memcpy(bytes.data() + k * sizeof(ELFT::Sym), &t, sizeof t);
  }
  replaced[symtab] = std::move(bytes);
  return "";
}

// .eh_frame (section `i`) padded to `slot`'s records, into `replaced`
// with its relocations; "" or why not.
std::string padRecords(const ElfObject &o, size_t i, const Slot &slot,
                       std::vector<ELFT::Shdr> &headers,
                       std::vector<std::optional<std::string>> &replaced) {
  if (o.names[i] != ".eh_frame")
    return "section " + o.names[i] + " has no records to pad";
  Expected<PaddedEhFrame> eh = padEhFrame(o, i, slot.records);
  if (!eh)
    return toString(eh.takeError());
  for (size_t r = 0; r < headers.size(); ++r)
    if (headers[r].sh_type == ELF::SHT_RELA && headers[r].sh_info == i) {
      if (replaced[r])
        return "two relocation sections for .eh_frame";
      replaced[r] = std::move(eh->relocations);
    }
  headers[i].sh_size = eh->bytes.size();
  replaced[i] = std::move(eh->bytes);
  return "";
}

} // namespace

Expected<std::vector<Slot>> slotsOf(MemoryBufferRef object,
                                    const SlackPolicy &policy) {
  Expected<ElfObject> o = readObject(object);
  if (!o)
    return o.takeError();
  std::map<std::string, int> names = nameCounts(*o);
  bool slack = policy.percent || policy.bytes; // else: the sizes as they are
  std::vector<Slot> slots;
  for (size_t i = 0; i < o->sections.size(); ++i) {
    const ELFT::Shdr &s = o->sections[i];
    if (paddable(*o, i, names)) {
      slots.push_back(Slot{o->names[i],
                           policy.slot(s.sh_size, s.sh_addralign),
                           s.sh_addralign,
                           {}});
    } else if (std::optional<std::vector<uint64_t>> records =
                   ehFrameSlots(*o, i, names, policy)) {
      uint64_t total = 0;
      for (uint64_t r : *records)
        total += r;
      slots.push_back(
          Slot{o->names[i], total, s.sh_addralign, std::move(*records)});
    } else if (names.at(o->names[i]) == 1) {
      if (std::optional<DebugRoom> r = debugRoomOf(*o, i))
        slots.push_back(Slot{
            o->names[i],
            slack ? policy.slot(s.sh_size + r->added, r->granule) : s.sh_size,
            s.sh_addralign,
            {}});
    }
  }
  return slots;
}

// The object is laid out again: the ELF header, then each section's bytes
// in their file order (a padded one followed by its room) at offsets
// keeping their alignment, then the section headers with the new offsets
// and sizes. Section indices, symbols and relocations (offsets within
// their sections) stay as they are.
Expected<std::string> padObject(MemoryBufferRef object,
                                const std::vector<Slot> &slots) {
  Expected<ElfObject> o = readObject(object);
  if (!o)
    return o.takeError();
  std::map<std::string, int> names = nameCounts(*o);
  std::vector<ELFT::Shdr> headers = o->sections;
  std::vector<std::string> room(headers.size()); // bytes after each
  // Sections written anew: debug sections padded as their kind is
  // (debug_room.h), .eh_frame and its relocations (eh_frame_room.h).
  std::vector<std::optional<std::string>> replaced(headers.size());
  std::vector<size_t> demerged; // sections handed to LLD without SHF_MERGE
  bool padded = false;
  for (const Slot &slot : slots) {
    auto at = std::find(o->names.begin(), o->names.end(), slot.section);
    if (at == o->names.end())
      return fail(object, "no section " + slot.section + " to pad");
    size_t i = static_cast<size_t>(at - o->names.begin());
    if (!paddable(*o, i, names) && names.at(slot.section) == 1 &&
        debugRoomOf(*o, i)) {
      uint64_t flags = 0;
      Expected<std::string> bytes = padDebugSection(*o, i, slot.size, flags);
      if (!bytes)
        return fail(object, toString(bytes.takeError()));
      padded = padded || flags != headers[i].sh_flags ||
               *bytes != toStringRef(o->contents[i]);
      headers[i].sh_flags = flags;
      headers[i].sh_size = bytes->size();
      replaced[i] = std::move(*bytes);
      continue;
    }
    if (!slot.records.empty()) {
      if (std::string e = padRecords(*o, i, slot, headers, replaced);
          !e.empty())
        return fail(object, e);
      padded = padded || slot.size != o->sections[i].sh_size;
      continue;
    }
    if (!paddable(*o, i, names))
      return fail(object, "section " + slot.section + " cannot be padded");
    uint64_t size = headers[i].sh_size;
    if (size > slot.size)
      return fail(object, "section " + slot.section + " (" + Twine(size) +
                              " bytes) outgrew its slot (" + Twine(slot.size) +
                              " bytes)");
    if (slot.align && headers[i].sh_addralign > slot.align)
      return fail(object,
                  "section " + slot.section + " needs an alignment of " +
                      Twine(headers[i].sh_addralign) +
                      ", more than its slot's (" + Twine(slot.align) + ")");
    if (slot.align > headers[i].sh_addralign) {
      headers[i].sh_addralign = slot.align;
      padded = true;
    }
    // Strings and constants LLD would merge with other objects' are the
    // object's own: handed to LLD as plain data (LLD drops their labels
    // from the output's symbol table only in a mergeable section, so they
    // become section symbols, which it never writes there).
    if (headers[i].sh_flags & ELF::SHF_MERGE) {
      headers[i].sh_flags &= ~static_cast<uint64_t>(ELF::SHF_MERGE);
      demerged.push_back(i);
      padded = true;
    }
    // Code is padded with int3: a jump into the room traps.
    char fill = (headers[i].sh_flags & ELF::SHF_EXECINSTR) ? '\xcc' : 0;
    room[i].assign(slot.size - size, fill);
    headers[i].sh_size = slot.size;
    padded = padded || slot.size != size;
  }
  if (!padded)
    return object.getBuffer().str();
  if (std::string e = labelsToSectionSymbols(*o, demerged, replaced);
      !e.empty())
    return fail(object, e);
  StringRef in = object.getBuffer();
  if (o->file.getHeader().e_phnum != 0)
    return fail(object, "a relocatable object with program headers");
  std::string out(in.substr(0, sizeof(ELFT::Ehdr)));
  std::vector<size_t> order;
  for (size_t i = 1; i < headers.size(); ++i)
    if (o->sections[i].sh_type != ELF::SHT_NOBITS)
      order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(o->sections[a].sh_offset, a) <
           std::pair(o->sections[b].sh_offset, b);
  });
  for (size_t i : order) {
    const ELFT::Shdr &old = o->sections[i];
    uint64_t align = std::max<uint64_t>(headers[i].sh_addralign, 1);
    if (align > (uint64_t{1} << 16))
      return fail(object, "section " + o->names[i] + " has an alignment of " +
                              Twine(align));
    out.resize(alignTo(out.size(), align), '\0');
    if (old.sh_offset > in.size() || old.sh_size > in.size() - old.sh_offset)
      return fail(object, "section " + o->names[i] + " lies past the file");
    headers[i].sh_offset = out.size();
    if (replaced[i])
      out.append(*replaced[i]);
    else
      out.append(in.substr(old.sh_offset, old.sh_size).str()).append(room[i]);
  }
  out.resize(alignTo(out.size(), 8), '\0');
  uint64_t shoff = out.size();
  for (const ELFT::Shdr &h : headers)
    out.append(reinterpret_cast<const char *>(&h), sizeof(h));
  ELFT::Ehdr ehdr = o->file.getHeader();
  ehdr.e_ehsize = sizeof(ELFT::Ehdr);
  ehdr.e_shoff = shoff;
  std::memcpy(out.data(), &ehdr, sizeof(ehdr));
  return out;
}

} // namespace linkd::incremental
