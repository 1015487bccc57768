// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/patcher.h"

#include "incremental/elf_object.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Object/ELFTypes.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

namespace linkd::incremental {

using namespace llvm;
using namespace llvm::support;
using File = object::ELFFile<ELFT>;
using Shdr = ELFT::Shdr;
using Sym = ELFT::Sym;
using Rela = ELFT::Rela;

namespace {

PatchResult refuse(std::string kind, std::string reason) {
  PatchResult r;
  r.kind = std::move(kind);
  r.reason = std::move(reason);
  return r;
}

using Object = ElfObject;

std::string errorText(Error e) { return toString(std::move(e)); }

// The output of the previous link.
struct Output {
  explicit Output(File f) : file(std::move(f)) {}
  File file;
  std::vector<Shdr> sections;
  std::vector<std::string> names;
  bool sharedObject = false; // ET_DYN without DF_1_PIE: symbols preemptible
  bool dynamic = false;      // ET_DYN: absolute relocations become dynamic
  // The address of the one defined global named `name`, from .symtab
  // (read when first asked: a big program has hundreds of thousands).
  std::optional<uint64_t> global(StringRef name) const;

private:
  mutable std::optional<StringMap<std::optional<uint64_t>>> globals_;
};

std::optional<uint64_t> Output::global(StringRef name) const {
  if (!globals_) {
    globals_.emplace();
    for (const Shdr &s : sections) {
      if (s.sh_type != ELF::SHT_SYMTAB)
        continue;
      auto syms = file.symbols(&s);
      auto strtab = file.getStringTableForSymtab(s);
      if (!syms || !strtab) {
        if (!syms)
          consumeError(syms.takeError());
        if (!strtab)
          consumeError(strtab.takeError());
        break;
      }
      for (const Sym &sym : *syms) {
        if (sym.getBinding() == ELF::STB_LOCAL ||
            sym.st_shndx == ELF::SHN_UNDEF)
          continue;
        auto n = sym.getName(*strtab);
        if (!n) {
          consumeError(n.takeError());
          continue;
        }
        // A name defined twice (versions, a local alias) answers nothing.
        auto [it, fresh] = globals_->try_emplace(*n, sym.st_value);
        if (!fresh)
          it->second.reset();
      }
    }
  }
  auto it = globals_->find(name);
  return it == globals_->end() ? std::nullopt : it->second;
}

Expected<Output> readOutput(MemoryBufferRef buf) {
  auto f = File::create(buf.getBuffer());
  if (!f)
    return f.takeError();
  Output out(std::move(*f));
  const auto &h = out.file.getHeader();
  if (h.e_machine != ELF::EM_X86_64 ||
      (h.e_type != ELF::ET_EXEC && h.e_type != ELF::ET_DYN))
    return createStringError(inconvertibleErrorCode(),
                             "not an x86-64 executable or shared object");
  auto secs = out.file.sections();
  if (!secs)
    return secs.takeError();
  for (const Shdr &s : *secs) {
    auto name = out.file.getSectionName(s);
    if (!name)
      return name.takeError();
    out.sections.push_back(s);
    out.names.push_back(name->str());
  }
  out.dynamic = h.e_type == ELF::ET_DYN;
  if (out.dynamic) {
    out.sharedObject = true;
    auto dyn = out.file.dynamicEntries();
    if (!dyn)
      return dyn.takeError();
    for (const auto &d : *dyn)
      if (d.d_tag == ELF::DT_FLAGS_1 && (d.d_un.d_val & ELF::DF_1_PIE))
        out.sharedObject = false;
  }
  return out;
}

// Where an input section's bytes are in the output file and at what
// address it runs.
struct Place {
  uint64_t address = 0;
  uint64_t fileOffset = 0;
  uint64_t room = 0; // bytes of the output section from fileOffset on
  bool nobits = false;
};

// How an x86-64 relocation is computed, as far as the patch is concerned.
enum class Form { Unsupported, Absolute, PcRelative };

struct TypeInfo {
  Form form = Form::Unsupported;
  unsigned width = 0;
  bool signed32 = false; // the 32-bit result must fit signed
  // What the target resolves through: "S" the symbol's address, "PLT" a PLT
  // entry or the symbol, "GOT" a GOT entry or (relaxed) the symbol, "DTP"
  // the offset in its TLS block, "TP" the offset from the thread pointer,
  // "TLS" the GOT entries of a TLS access model.
  const char *via = "";
};

TypeInfo typeInfo(uint32_t type) {
  switch (type) {
  case ELF::R_X86_64_64:
    return {Form::Absolute, 8, false, "S"};
  case ELF::R_X86_64_32:
    return {Form::Absolute, 4, false, "S"};
  case ELF::R_X86_64_32S:
    return {Form::Absolute, 4, true, "S"};
  case ELF::R_X86_64_PC32:
    return {Form::PcRelative, 4, true, "S"};
  case ELF::R_X86_64_PC64:
    return {Form::PcRelative, 8, false, "S"};
  case ELF::R_X86_64_PLT32:
    return {Form::PcRelative, 4, true, "PLT"};
  case ELF::R_X86_64_GOTPCREL:
  case ELF::R_X86_64_GOTPCRELX:
  case ELF::R_X86_64_REX_GOTPCRELX:
    return {Form::PcRelative, 4, true, "GOT"};
  case ELF::R_X86_64_DTPOFF32:
    return {Form::Absolute, 4, true, "DTP"};
  case ELF::R_X86_64_DTPOFF64:
    return {Form::Absolute, 8, false, "DTP"};
  case ELF::R_X86_64_TPOFF32:
    return {Form::Absolute, 4, true, "TP"};
  case ELF::R_X86_64_TLSGD:
  case ELF::R_X86_64_TLSLD:
  case ELF::R_X86_64_GOTTPOFF:
  case ELF::R_X86_64_GOTPC32_TLSDESC:
    // The GOT entries of the TLS models; LLD rewrites the code around them
    // in an executable (to the local or initial exec model), which the
    // patch does not replay (refused in an executable, see apply()).
    return {Form::PcRelative, 4, true, "TLS"};
  default:
    return {};
  }
}

bool relaxable(uint32_t type) {
  return type == ELF::R_X86_64_GOTPCRELX || type == ELF::R_X86_64_REX_GOTPCRELX;
}

// What the previous link did with references of one kind to one target.
struct Resolution {
  int64_t base = 0; // the target's address (S, or the entry's) as used
  uint16_t op = 0;  // the instruction bytes before a relaxed GOT load
  bool relaxed = false;
  bool conflicting = false;
};

class Patcher {
public:
  Patcher(const PatchInputs &in, const Object &oldObj, const Object &newObj,
          const Output &out)
      : in_(in), old_(oldObj), new_(newObj), out_(out) {}

  PatchResult run();

private:
  // Placing the object's sections.
  std::optional<Place> place(size_t section, std::string &why) const;
  // Who a relocation names: a key that is the same in both objects.
  std::string targetKey(const Object &o, const Sym &s) const;
  bool merged(const Object &o, const Sym &s) const {
    return s.st_shndx < o.sections.size() &&
           (o.sections[s.st_shndx].sh_flags & ELF::SHF_MERGE);
  }
  // The first byte of the piece of mergeable section `sec` holding `off`.
  static uint64_t pieceStart(const Object &o, size_t sec, uint64_t off);
  // Whether `s` is defined in a section the link dropped (a COMDAT group
  // another file gave, --gc-sections). A mergeable section is never in the
  // map under its file's name: its pieces went to a synthetic section.
  bool discarded(const Object &o, const Sym &s) const {
    std::string why;
    return s.st_shndx != ELF::SHN_UNDEF && s.st_shndx < o.sections.size() &&
           !merged(o, s) && !place(s.st_shndx, why).has_value();
  }

  void learn();
  void learnOne(size_t sec, const Place &p, const Rela &r);
  static void record(std::map<std::string, Resolution> &into,
                     const std::string &key, Resolution r);

  // One relocation of the new object, applied to `bytes`, the section as
  // it will be written; "" or why not.
  std::string apply(size_t sec, const Place &p, const Rela &r,
                    std::string &bytes);
  // The build-id of the output `edits` make, as one more edit, and the
  // chunk hashes behind it.
  std::string buildId(std::vector<Edit> &edits,
                      std::vector<uint8_t> &hashes) const;

  uint64_t readValue(uint64_t fileOffset, unsigned width) const {
    const char *p = in_.oldOutput.getBufferStart() + fileOffset;
    return width == 8 ? endian::read64le(p) : endian::read32le(p);
  }

  const PatchInputs &in_;
  const Object &old_, &new_;
  const Output &out_;
  std::map<std::string, Resolution> resolved_;   // (target, via, op) -> base
  std::map<std::string, Resolution> pieces_;     // merged piece -> its address
  std::map<std::string, Resolution> tombstones_; // (section, type) -> value
  std::map<std::tuple<size_t, uint64_t, std::string, int64_t>, uint64_t>
      dynamicSites_; // absolute relocations a dynamic one replaced
};

std::optional<Place> Patcher::place(size_t section, std::string &why) const {
  const std::string &name = new_.names[section];
  size_t same = std::count(new_.names.begin(), new_.names.end(), name);
  if (same != 1) {
    why = "the object has " + std::to_string(same) + " sections named " + name +
          ": the map cannot tell them apart";
    return std::nullopt;
  }
  std::vector<Placement> ps = in_.map->find(in_.objectName, name);
  if (ps.size() != 1) {
    why = ps.empty() ? "section " + name + " of " + in_.objectName +
                           " is not in the output's map"
                     : "section " + name + " is in the map more than once";
    return std::nullopt;
  }
  const Placement &pl = ps.front();
  const Shdr *os = nullptr;
  for (size_t i = 0; i < out_.sections.size(); ++i)
    if (out_.names[i] == pl.outputSection) {
      if (os) {
        why = "two output sections are named " + pl.outputSection;
        return std::nullopt;
      }
      os = &out_.sections[i];
    }
  if (!os) {
    why = "the output has no section " + pl.outputSection;
    return std::nullopt;
  }
  bool alloc = os->sh_flags & ELF::SHF_ALLOC;
  uint64_t inSection = alloc ? pl.address - os->sh_addr : pl.address;
  if ((alloc && pl.address < os->sh_addr) || inSection > os->sh_size ||
      pl.size > os->sh_size - inSection ||
      pl.size != new_.sections[section].sh_size) {
    why = "the map places " + name + " outside " + pl.outputSection;
    return std::nullopt;
  }
  Place p;
  p.address = pl.address;
  p.nobits = os->sh_type == ELF::SHT_NOBITS;
  p.fileOffset = os->sh_offset + inSection;
  p.room = os->sh_size - inSection;
  uint64_t fileSize = in_.oldOutput.getBufferSize();
  if (!p.nobits &&
      (os->sh_offset > fileSize || inSection > fileSize - os->sh_offset ||
       p.room > fileSize - p.fileOffset)) {
    why = "output section " + pl.outputSection + " runs past the file";
    return std::nullopt;
  }
  return p;
}

std::string Patcher::targetKey(const Object &o, const Sym &s) const {
  if (s.getType() == ELF::STT_SECTION)
    return "section " + std::to_string(s.st_shndx);
  std::string name = symbolName(o, s);
  if (s.getBinding() == ELF::STB_LOCAL)
    return name + " (local in section " + std::to_string(s.st_shndx) + " at " +
           std::to_string(s.st_value) + ")";
  return name;
}

uint64_t Patcher::pieceStart(const Object &o, size_t sec, uint64_t off) {
  const Shdr &s = o.sections[sec];
  ArrayRef<uint8_t> data = o.contents[sec];
  if (off > data.size())
    return off;
  if (s.sh_flags & ELF::SHF_STRINGS) {
    uint64_t i = off;
    while (i > 0 && data[i - 1] != 0)
      --i;
    return i;
  }
  uint64_t size = std::max<uint64_t>(s.sh_entsize, 1);
  return off / size * size;
}

void Patcher::record(std::map<std::string, Resolution> &into,
                     const std::string &key, Resolution r) {
  auto [it, fresh] = into.emplace(key, r);
  if (!fresh && (it->second.base != r.base || it->second.op != r.op ||
                 it->second.relaxed != r.relaxed))
    it->second.conflicting = true;
}

void Patcher::learnOne(size_t sec, const Place &p, const Rela &r) {
  uint32_t type = r.getType(false);
  TypeInfo t = typeInfo(type);
  uint32_t symIndex = r.getSymbol(false);
  if (t.form == Form::Unsupported || symIndex >= old_.symbols.size() ||
      p.nobits || r.r_offset > p.room || t.width > p.room - r.r_offset ||
      r.r_offset > old_.contents[sec].size() ||
      t.width > old_.contents[sec].size() - r.r_offset)
    return;
  const Sym &s = old_.symbols[symIndex];
  uint64_t at = p.fileOffset + r.r_offset;
  uint64_t pc = p.address + r.r_offset;
  bool alloc = old_.sections[sec].sh_flags & ELF::SHF_ALLOC;
  if (out_.dynamic && alloc && type == ELF::R_X86_64_64) {
    dynamicSites_[{sec, r.r_offset, targetKey(old_, s), r.r_addend}] =
        readValue(at, 8);
    return;
  }
  uint64_t raw = readValue(at, t.width);
  int64_t value = t.width == 8 ? static_cast<int64_t>(raw)
                  : t.signed32 ? static_cast<int32_t>(raw)
                               : static_cast<int64_t>(raw);
  // S + A (or the entry's address + A), as the previous link wrote it.
  int64_t resolvedPlusAddend =
      t.form == Form::PcRelative ? value + static_cast<int64_t>(pc) : value;
  if (discarded(old_, s) && !alloc) {
    Resolution res;
    res.base = static_cast<int64_t>(raw);
    record(tombstones_, old_.names[sec] + "/" + std::to_string(type), res);
    return;
  }
  if (merged(old_, s) && std::string_view(t.via) == "S") {
    bool section = s.getType() == ELF::STT_SECTION;
    uint64_t off = section ? s.st_value + r.r_addend : s.st_value;
    uint64_t start = pieceStart(old_, s.st_shndx, off);
    Resolution res;
    res.base = resolvedPlusAddend - static_cast<int64_t>(off - start) -
               (section ? int64_t{0} : int64_t{r.r_addend});
    record(pieces_, std::to_string(s.st_shndx) + "@" + std::to_string(start),
           res);
    return;
  }
  Resolution res;
  res.base = resolvedPlusAddend - r.r_addend;
  std::string key = targetKey(old_, s) + " via " + t.via;
  if (relaxable(type) && r.r_offset >= 2) {
    ArrayRef<uint8_t> data = old_.contents[sec];
    uint16_t before = endian::read16le(data.data() + r.r_offset - 2);
    uint16_t after = endian::read16le(in_.oldOutput.getBufferStart() + at - 2);
    key += " op " + utohexstr(before);
    res.relaxed = before != after;
    res.op = after;
  }
  record(resolved_, key, res);
}

void Patcher::learn() {
  for (size_t sec = 0; sec < old_.sections.size(); ++sec) {
    if (old_.relocs[sec].empty() ||
        !isPatched(old_.sections[sec], old_.names[sec]))
      continue;
    std::string why;
    std::optional<Place> p = place(sec, why);
    if (!p)
      continue; // not in the output: its relocations were never applied
    for (const Rela &r : old_.relocs[sec])
      learnOne(sec, *p, r);
  }
}

std::string Patcher::apply(size_t sec, const Place &p, const Rela &r,
                           std::string &bytes) {
  uint32_t type = r.getType(false);
  if (type == ELF::R_X86_64_NONE)
    return "";
  TypeInfo t = typeInfo(type);
  const std::string &secName = new_.names[sec];
  std::string where = secName + "+0x" + utohexstr(r.r_offset);
  if (t.form == Form::Unsupported)
    return "relocation type " + std::to_string(type) + " at " + where +
           " is not one the patch applies";
  if (std::string_view(t.via) == "TLS" && !out_.sharedObject)
    return "a TLS access at " + where +
           " that LLD relaxes in an executable (the patch does not replay "
           "TLS relaxations)";
  uint32_t symIndex = r.getSymbol(false);
  if (symIndex >= new_.symbols.size())
    return "a relocation at " + where + " names no symbol";
  if (r.r_offset > p.room || t.width > p.room - r.r_offset ||
      r.r_offset > bytes.size() || t.width > bytes.size() - r.r_offset)
    return "a relocation at " + where + " is outside its section";
  const Sym &s = new_.symbols[symIndex];
  std::string name = symbolName(new_, s);
  uint64_t pc = p.address + r.r_offset;
  bool alloc = new_.sections[sec].sh_flags & ELF::SHF_ALLOC;
  char *loc = bytes.data() + r.r_offset;

  if (out_.dynamic && alloc && type == ELF::R_X86_64_64) {
    auto it =
        dynamicSites_.find({sec, r.r_offset, targetKey(new_, s), r.r_addend});
    if (it == dynamicSites_.end())
      return "an absolute reference to " + name + " at " + where +
             " is new: its dynamic relocation is not in the output";
    endian::write64le(loc, it->second);
    return "";
  }

  int64_t resolvedPlusAddend = 0;
  bool known = false;
  std::string via = t.via;
  if (discarded(new_, s)) {
    if (alloc)
      return "the reference to " + name + " at " + where +
             " is to a section the output does not have";
    auto it = tombstones_.find(secName + "/" + std::to_string(type));
    if (it == tombstones_.end() || it->second.conflicting)
      return "the reference to discarded " + name + " at " + where +
             " has no one tombstone the previous link wrote";
    uint64_t tombstone = static_cast<uint64_t>(it->second.base);
    if (t.width == 8)
      endian::write64le(loc, tombstone);
    else
      endian::write32le(loc, static_cast<uint32_t>(tombstone));
    return "";
  }
  if (merged(new_, s)) {
    if (via != "S")
      return "a " + via + " reference into mergeable " + name + " at " + where;
    bool section = s.getType() == ELF::STT_SECTION;
    uint64_t off = section ? s.st_value + r.r_addend : s.st_value;
    uint64_t start = pieceStart(new_, s.st_shndx, off);
    auto it =
        pieces_.find(std::to_string(s.st_shndx) + "@" + std::to_string(start));
    if (it == pieces_.end() || it->second.conflicting)
      return "the piece of " + new_.names[s.st_shndx] + " at offset " +
             std::to_string(start) + " referenced at " + where +
             " was not referenced by the previous link";
    resolvedPlusAddend = it->second.base + static_cast<int64_t>(off - start) +
                         (section ? int64_t{0} : int64_t{r.r_addend});
    known = true;
  }
  std::optional<Resolution> learned;
  if (!known) {
    std::string key = targetKey(new_, s) + " via " + via;
    if (relaxable(type) && r.r_offset >= 2) {
      uint16_t before =
          endian::read16le(new_.contents[sec].data() + r.r_offset - 2);
      key += " op " + utohexstr(before);
    }
    auto it = resolved_.find(key);
    if (it != resolved_.end()) {
      if (it->second.conflicting)
        return "the previous link resolved " + name + " (" + via +
               ") to more than one address";
      learned = it->second;
    }
  }
  // An address the map gives: a symbol this object defines, which the
  // output cannot preempt, reached directly.
  std::optional<int64_t> computed;
  if (!known && (via == "S" || via == "PLT") && s.st_shndx != ELF::SHN_UNDEF &&
      s.st_shndx < new_.sections.size() &&
      (!out_.sharedObject || s.getBinding() == ELF::STB_LOCAL ||
       s.getVisibility() != ELF::STV_DEFAULT)) {
    std::string why;
    if (std::optional<Place> tp = place(s.st_shndx, why))
      computed = static_cast<int64_t>(tp->address + s.st_value);
  } else if (!known && (via == "S" || via == "PLT") &&
             s.st_shndx == ELF::SHN_UNDEF && !out_.sharedObject) {
    if (std::optional<uint64_t> at = out_.global(name))
      computed = static_cast<int64_t>(*at);
  }
  if (learned && computed && learned->base != *computed)
    return "the map and the previous link disagree on where " + name + " is";
  if (!known) {
    if (!learned && !computed)
      return "the reference to " + name + " (" + via + ") at " + where +
             " is not one the previous link resolved";
    if (learned && learned->relaxed && r.r_offset < 2)
      return "a relaxed GOT load of " + name + " at " + where +
             " starts before its section";
    if (learned && learned->relaxed) {
      // Only the two rewrites LLD makes in place of the load: mov to lea
      // (8b -> 8d) and an indirect call to addr32 call (ff 15 -> 67 e8).
      uint16_t before =
          endian::read16le(new_.contents[sec].data() + r.r_offset - 2);
      uint16_t after = learned->op;
      bool movToLea = (before & 0xff) == 0x8b && (after & 0xff) == 0x8d &&
                      (before >> 8) == (after >> 8);
      bool callToCall = before == 0x15ff && after == 0xe867;
      if (!movToLea && !callToCall)
        return "a relaxed GOT load of " + name + " at " + where +
               " the patch does not replay";
      endian::write16le(loc - 2, after);
    }
    resolvedPlusAddend = (learned ? learned->base : *computed) + r.r_addend;
  }
  int64_t value = t.form == Form::PcRelative
                      ? resolvedPlusAddend - static_cast<int64_t>(pc)
                      : resolvedPlusAddend;
  if (t.width == 8) {
    endian::write64le(loc, static_cast<uint64_t>(value));
    return "";
  }
  bool fits = t.signed32 ? isInt<32>(value) : isUInt<32>(value);
  if (!fits)
    return "the reference to " + name + " at " + where +
           " no longer fits its 32 bits";
  endian::write32le(loc, static_cast<uint32_t>(value));
  return "";
}

void hashFast(uint8_t *dest, ArrayRef<uint8_t> a) {
  endian::write64le(dest, xxh3_64bits(a));
}
// --build-id=md5 and =sha1 are BLAKE3 of those lengths in LLD 19.
void hashMd5(uint8_t *dest, ArrayRef<uint8_t> a) {
  auto h = BLAKE3::hash<16>(a);
  std::memcpy(dest, h.data(), h.size());
}
void hashSha1(uint8_t *dest, ArrayRef<uint8_t> a) {
  auto h = BLAKE3::hash<20>(a);
  std::memcpy(dest, h.data(), h.size());
}

// LLD's build-id: the hash of each 1 MiB chunk of the file (with the
// build-id itself zero), in parallel, then the hash of those hashes.
constexpr size_t kChunk = size_t{1} << 20;

using HashFn = void (*)(uint8_t *, ArrayRef<uint8_t>);

std::string Patcher::buildId(std::vector<Edit> &edits,
                             std::vector<uint8_t> &hashes) const {
  ArrayRef<uint8_t> old = arrayRefFromStringRef(in_.oldOutput.getBuffer());
  for (size_t i = 0; i < out_.sections.size(); ++i) {
    const Shdr &s = out_.sections[i];
    if (s.sh_type != ELF::SHT_NOTE || out_.names[i] != ".note.gnu.build-id")
      continue;
    if (s.sh_offset > old.size() || s.sh_size > old.size() - s.sh_offset ||
        s.sh_size < 16)
      return "the build-id note is outside the file";
    const uint8_t *note = old.data() + s.sh_offset;
    uint32_t nameSize = endian::read32le(note);
    uint32_t descSize = endian::read32le(note + 4);
    uint64_t descAt = 12 + alignTo(nameSize, 4);
    if (descAt > s.sh_size || descSize > s.sh_size - descAt)
      return "the build-id note is malformed";
    uint64_t at = s.sh_offset + descAt;
    HashFn fn = descSize == 8    ? hashFast
                : descSize == 16 ? hashMd5
                : descSize == 20 ? hashSha1
                                 : nullptr;
    const char *notHash = "the build-id is not a hash of the output "
                          "(--build-id=uuid or a fixed value): a patch "
                          "cannot recompute it";
    if (!fn)
      return notHash;
    // Chunk `c` with the build-id zero and, for the new file, the edits.
    auto chunkOf = [&](size_t c, bool withEdits,
                       std::string &scratch) -> ArrayRef<uint8_t> {
      uint64_t begin = c * kChunk,
               end = std::min<uint64_t>(old.size(), begin + kChunk);
      auto overlaps = [&](uint64_t off, uint64_t len) {
        return off < end && off + len > begin;
      };
      bool touched = overlaps(at, descSize);
      if (withEdits)
        for (const Edit &e : edits)
          touched = touched || overlaps(e.offset, e.bytes.size());
      if (!touched)
        return old.slice(begin, end - begin);
      scratch.assign(reinterpret_cast<const char *>(old.data()) + begin,
                     end - begin);
      auto lay = [&](uint64_t off, const char *data, uint64_t len) {
        uint64_t from = std::max(off, begin), to = std::min(off + len, end);
        if (from < to)
          std::memcpy(scratch.data() + (from - begin), data + (from - off),
                      to - from);
      };
      if (withEdits)
        for (const Edit &e : edits)
          lay(e.offset, e.bytes.data(), e.bytes.size());
      std::string zeros(descSize, '\0');
      lay(at, zeros.data(), descSize);
      return arrayRefFromStringRef(scratch);
    };
    size_t chunks = (old.size() + kChunk - 1) / kChunk;
    std::vector<uint8_t> id(descSize);
    // The hash the previous link used, recognised by recomputing it over
    // the previous output (a uuid or a fixed string is none of them): from
    // the kept chunk hashes if they give it, else from every chunk.
    ArrayRef<uint8_t> kept = in_.oldChunkHashes;
    if (kept.size() == chunks * descSize) {
      fn(id.data(), kept);
      if (std::equal(id.begin(), id.end(), old.data() + at))
        hashes.assign(kept.begin(), kept.end());
    }
    if (hashes.empty()) {
      hashes.resize(chunks * descSize);
      parallelFor(0, chunks, [&](size_t c) {
        std::string scratch;
        fn(hashes.data() + c * descSize, chunkOf(c, false, scratch));
      });
      fn(id.data(), hashes);
      if (!std::equal(id.begin(), id.end(), old.data() + at)) {
        hashes.clear();
        return notHash;
      }
    }
    for (size_t c = 0; c < chunks; ++c) {
      std::string scratch;
      ArrayRef<uint8_t> bytes = chunkOf(c, true, scratch);
      if (!scratch.empty())
        fn(hashes.data() + c * descSize, bytes);
    }
    fn(id.data(), hashes);
    edits.push_back(Edit{at, std::string(id.begin(), id.end())});
    return "";
  }
  return "";
}

PatchResult Patcher::run() {
  // What moves nothing: every section keeps its size, every symbol its
  // value and size, .eh_frame its bytes.
  for (size_t i = 0; i < new_.sections.size(); ++i) {
    if (old_.sections[i].sh_size != new_.sections[i].sh_size)
      return refuse("section_resized",
                    "section " + new_.names[i] + " changed size (" +
                        std::to_string(old_.sections[i].sh_size) + " -> " +
                        std::to_string(new_.sections[i].sh_size) +
                        " bytes): only a padded section's room may "
                        "change (incremental_slack)");
    if (new_.names[i] == ".eh_frame" &&
        (old_.contents[i] != new_.contents[i] ||
         old_.relocBytes[i] != new_.relocBytes[i]))
      return refuse("eh_frame_changed",
                    ".eh_frame changed: LLD rebuilds it and .eh_frame_hdr");
  }
  using Where = std::tuple<std::string, uint8_t, uint16_t, uint64_t, uint64_t>;
  auto where = [](const Object &o) {
    std::vector<Where> w;
    for (const Sym &s : o.symbols)
      if (s.getType() != ELF::STT_SECTION)
        w.emplace_back(symbolName(o, s), s.st_info, s.st_shndx, s.st_value,
                       s.st_size);
    std::sort(w.begin(), w.end());
    return w;
  };
  std::vector<Where> before = where(old_), after = where(new_);
  if (before != after) {
    auto [a, b] =
        std::mismatch(before.begin(), before.end(), after.begin(), after.end());
    std::string name = b != after.end() ? std::get<0>(*b) : std::get<0>(*a);
    return refuse("symbols_moved", "symbol " + name +
                                       " moved or changed size: the output's "
                                       "symbol table and references follow");
  }

  learn();
  bool symbolsChanged = old_.symtabBytes != new_.symtabBytes;
  PatchResult res;
  for (size_t sec = 0; sec < new_.sections.size(); ++sec) {
    const Shdr &s = new_.sections[sec];
    if (!isPatched(s, new_.names[sec]) || s.sh_type == ELF::SHT_NOBITS)
      continue;
    bool changed = old_.contents[sec] != new_.contents[sec] ||
                   old_.relocBytes[sec] != new_.relocBytes[sec] ||
                   (symbolsChanged && !new_.relocs[sec].empty());
    if (!changed)
      continue;
    std::string why;
    std::optional<Place> p = place(sec, why);
    if (!p)
      return refuse("not_placed", why);
    if (p->nobits)
      return refuse("not_placed", "section " + new_.names[sec] +
                                      " has content but its output section "
                                      "has none");
    ArrayRef<uint8_t> data = new_.contents[sec];
    std::string bytes(reinterpret_cast<const char *>(data.data()), data.size());
    for (const Rela &r : new_.relocs[sec]) {
      if (std::string e = apply(sec, *p, r, bytes); !e.empty())
        return refuse("unexplained_reference", e);
      ++res.relocationsApplied;
    }
    ++res.sectionsWritten;
    res.bytesWritten += bytes.size();
    res.edits.push_back(Edit{p->fileOffset, std::move(bytes)});
  }
  if (std::string e = buildId(res.edits, res.chunkHashes); !e.empty())
    return refuse("build_id", e);
  std::sort(res.edits.begin(), res.edits.end(),
            [](const Edit &a, const Edit &b) { return a.offset < b.offset; });
  uint64_t fileSize = in_.oldOutput.getBufferSize();
  for (size_t i = 0; i < res.edits.size(); ++i) {
    const Edit &e = res.edits[i];
    if (e.offset > fileSize || e.bytes.size() > fileSize - e.offset)
      return refuse("not_placed", "a patched section lies past the output");
    if (i > 0 &&
        res.edits[i - 1].offset + res.edits[i - 1].bytes.size() > e.offset)
      return refuse("not_placed", "two patched sections overlap in the "
                                  "output");
  }
  res.patched = true;
  return res;
}

} // namespace

PatchResult patchOutput(const PatchInputs &in) {
  if (!in.map)
    return refuse("unreadable", "no link map");
  for (llvm::MemoryBufferRef buf : {in.oldObject, in.newObject})
    if (std::string why = notAnX8664Object(buf); !why.empty())
      return refuse("not_x86_64_object", why);
  auto oldObj = readElfObject(in.oldObject);
  if (!oldObj)
    return refuse("unreadable", in.oldObject.getBufferIdentifier().str() +
                                    ": " + errorText(oldObj.takeError()));
  auto newObj = readElfObject(in.newObject);
  if (!newObj)
    return refuse("unreadable", in.newObject.getBufferIdentifier().str() +
                                    ": " + errorText(newObj.takeError()));
  RelinkCheck check = checkRelink(*oldObj, *newObj, SlackPolicy{});
  if (!check.patchable)
    return refuse(check.kind, check.reason);
  auto out = readOutput(in.oldOutput);
  if (!out)
    return refuse("unreadable", in.oldOutput.getBufferIdentifier().str() +
                                    ": " + errorText(out.takeError()));
  return Patcher(in, *oldObj, *newObj, *out).run();
}

std::string applyEdits(StringRef oldOutput, const std::vector<Edit> &edits) {
  std::string out(oldOutput);
  for (const Edit &e : edits)
    if (e.offset <= out.size() && e.bytes.size() <= out.size() - e.offset)
      std::memcpy(out.data() + e.offset, e.bytes.data(), e.bytes.size());
  return out;
}

} // namespace linkd::incremental
