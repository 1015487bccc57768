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
#include <set>
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
  // The dynamic section's entries (tag, value), read by its section
  // header within `bytes` (ELFFile's reader trusts the program headers).
  std::vector<std::pair<int64_t, uint64_t>>
  dynamicEntries(StringRef bytes) const;
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
    for (const auto &[tag, value] : out.dynamicEntries(buf.getBuffer()))
      if (tag == ELF::DT_FLAGS_1 && (value & ELF::DF_1_PIE))
        out.sharedObject = false;
  }
  return out;
}

std::vector<std::pair<int64_t, uint64_t>>
Output::dynamicEntries(StringRef bytes) const {
  std::vector<std::pair<int64_t, uint64_t>> entries;
  for (const Shdr &s : sections) {
    if (s.sh_type != ELF::SHT_DYNAMIC || s.sh_offset > bytes.size() ||
        s.sh_size > bytes.size() - s.sh_offset)
      continue;
    for (uint64_t at = 0; at + 16 <= s.sh_size; at += 16) {
      const char *e = bytes.data() + s.sh_offset + at;
      auto tag = static_cast<int64_t>(endian::read64le(e));
      if (tag == ELF::DT_NULL)
        break;
      entries.emplace_back(tag, endian::read64le(e + 8));
    }
  }
  return entries;
}

// Where an input section's bytes are in the output file and at what
// address it runs.
struct Place {
  uint64_t address = 0;
  uint64_t fileOffset = 0;
  uint64_t room = 0; // bytes of the output section from fileOffset on
  bool nobits = false;
  size_t outputIndex = 0; // the output section's index
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
          const Output &out, std::vector<std::string> newReferences,
          std::vector<std::string> goneReferences)
      : in_(in), old_(oldObj), new_(newObj), out_(out),
        newReferences_(std::move(newReferences)),
        goneReferences_(goneReferences.begin(), goneReferences.end()) {}

  PatchResult run();

private:
  // A symbol of the object whose address or size changed within its
  // section (the section kept its size: its slot).
  struct Move {
    std::string name;
    bool global = false;
    bool preemptible = false; // reached through entries the loader fills
    uint64_t oldAddr = 0, newAddr = 0, oldSize = 0, newSize = 0;
    size_t oldSection = 0, newSection = 0; // the output's indices
  };
  // An FDE of the object whose function starts elsewhere now.
  struct FdeMove {
    uint64_t fde = 0, from = 0, to = 0; // addresses
  };
  // An absolute reference a dynamic relocation replaced, as the previous
  // link wrote it.
  struct DynamicSite {
    uint32_t symbol = 0;
    int64_t addend = 0;
    std::optional<uint64_t> target; // its address, when the map gives it
    uint64_t inPlace = 0;           // what the site holds
  };

  // Placing the object's sections.
  std::optional<Place> place(size_t section, std::string &why) const {
    bool dropped = false;
    return placeIn(new_, *in_.map, in_.objectName, section, why, dropped);
  }
  // Where section `section` of `o` (named `objectName` in `map`) went;
  // `dropped` when the map has no line for it (the link dropped it).
  std::optional<Place> placeIn(const Object &o, const LinkMap &map,
                               const std::string &objectName, size_t section,
                               std::string &why, bool &dropped) const;
  std::optional<Place> placeOnce(const Object &o, const LinkMap &map,
                                 const std::string &objectName, size_t section,
                                 std::string &why, bool &dropped) const;
  struct Placed {
    std::optional<Place> place;
    std::string why;
    bool dropped = false;
  };
  mutable std::vector<std::optional<Placed>> placedOld_, placedNew_;
  // The address `s` + `addend` of the object `o` (its old or new version)
  // stands for, when the map places it.
  std::optional<uint64_t> targetAddress(const Object &o, const Sym &s,
                                        int64_t addend) const;
  // The index in moves_ of symbol `index` if its address changed.
  std::optional<size_t> movedTo(uint32_t index) const {
    if (index >= moveOf_.size() || moveOf_[index] < 0)
      return std::nullopt;
    return static_cast<size_t>(moveOf_[index]);
  }

  // The steps of a patch whose symbols moved; each "" or why not.
  std::string findMoves();
  std::string patchEhFrame();
  std::string patchEhFrameHdr(const std::vector<FdeMove> &fdes,
                              const Shdr &ehFrame);
  std::string patchSymbolTables();
  std::string patchReferencesElsewhere();
  std::string retarget(const OtherInput &o, const Object &obj, size_t sec,
                       const Place &p, const Rela &r, const Move &m);
  // The dynamic relocation of the site at `pc` (file offset `at`) whose
  // target moves from `from` to `to`: its edit, and in `inPlace` what the
  // site itself holds then.
  std::string moveDynamicSite(uint64_t pc, uint64_t at, uint64_t from,
                              uint64_t to, uint64_t &inPlace);
  const Shdr *outputSection(StringRef name) const;
  void edit(uint64_t offset, std::string bytes) {
    extra_[offset] = std::move(bytes);
  }
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
  // How the previous link resolved relocation `r` of section `sec` of `o`
  // (the old object, or another object of the link), placed at `p`.
  void learnOne(const Object &o, size_t sec, const Place &p, const Rela &r);
  // The new object's references to globals its last version did not name,
  // learned from the other objects' references to them, and the old one's
  // it no longer makes, checked against theirs; "" or why not.
  std::string learnReferences();
  // The link's other objects, asked for once; "" or why they are unknown.
  std::string others(const std::vector<OtherInput> *&out);
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
  // Absolute relocations a dynamic one replaced, by (section, offset).
  std::map<std::pair<size_t, uint64_t>, DynamicSite> dynamicSites_;
  std::vector<Move> moves_;
  std::vector<int> moveOf_; // by symbol index: its move's index, or -1
  std::map<std::string, size_t> movedGlobals_;
  std::vector<std::string> newReferences_;
  // References the new version no longer makes; for each, what the old
  // one's relocations needed of the output (learnOne's keys: an entry, a
  // resolution), and what other objects' relocations show they need.
  std::set<std::string> goneReferences_;
  std::map<std::string, std::set<std::string>> goneNeeds_;
  std::set<std::string> othersNeed_;
  std::optional<std::vector<OtherInput>> others_;
  std::string othersWhy_;
  std::map<uint64_t, std::string> extra_; // edits outside the sections
  uint64_t extraRelocations_ = 0;
  // .rela.dyn: site -> the file offset of its entry (kTwice: two entries).
  std::optional<std::map<uint64_t, uint64_t>> relaDyn_;
  bool relr_ = false;
  static constexpr uint64_t kTwice = ~uint64_t{0};
};

std::optional<Place> Patcher::placeIn(const Object &o, const LinkMap &map,
                                      const std::string &objectName,
                                      size_t section, std::string &why,
                                      bool &dropped) const {
  // The object's own sections are asked about once per relocation: each
  // answer is kept (a map lookup builds strings).
  bool own = &map == in_.map && (&o == &old_ || &o == &new_);
  if (own) {
    std::vector<std::optional<Placed>> &memo =
        &o == &old_ ? placedOld_ : placedNew_;
    memo.resize(o.sections.size());
    if (section < memo.size() && memo[section]) {
      why = memo[section]->why;
      dropped = memo[section]->dropped;
      return memo[section]->place;
    }
    std::optional<Place> p =
        placeOnce(o, map, objectName, section, why, dropped);
    if (section < memo.size())
      memo[section] = Placed{p, why, dropped};
    return p;
  }
  return placeOnce(o, map, objectName, section, why, dropped);
}

std::optional<Place> Patcher::placeOnce(const Object &o, const LinkMap &map,
                                        const std::string &objectName,
                                        size_t section, std::string &why,
                                        bool &dropped) const {
  dropped = false;
  const std::string &name = o.names[section];
  size_t same = std::count(o.names.begin(), o.names.end(), name);
  if (same != 1) {
    why = "the object has " + std::to_string(same) + " sections named " + name +
          ": the map cannot tell them apart";
    return std::nullopt;
  }
  std::vector<Placement> ps = map.find(objectName, name);
  if (ps.size() != 1) {
    dropped = ps.empty();
    why = ps.empty() ? "section " + name + " of " + objectName +
                           " is not in the output's map"
                     : "section " + name + " is in the map more than once";
    return std::nullopt;
  }
  const Placement &pl = ps.front();
  const Shdr *os = nullptr;
  size_t index = 0;
  for (size_t i = 0; i < out_.sections.size(); ++i)
    if (out_.names[i] == pl.outputSection) {
      if (os) {
        why = "two output sections are named " + pl.outputSection;
        return std::nullopt;
      }
      os = &out_.sections[i];
      index = i;
    }
  if (!os) {
    why = "the output has no section " + pl.outputSection;
    return std::nullopt;
  }
  bool alloc = os->sh_flags & ELF::SHF_ALLOC;
  uint64_t inSection = alloc ? pl.address - os->sh_addr : pl.address;
  if ((alloc && pl.address < os->sh_addr) || inSection > os->sh_size ||
      pl.size > os->sh_size - inSection ||
      pl.size != o.sections[section].sh_size) {
    why = "the map places " + name + " outside " + pl.outputSection;
    return std::nullopt;
  }
  Place p;
  p.address = pl.address;
  p.outputIndex = index;
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
  if (s.getType() == ELF::STT_SECTION) // a label the padder made one: +value
    return "section " + std::to_string(s.st_shndx) +
           (s.st_value ? "+" + std::to_string(s.st_value) : "");
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

void Patcher::learnOne(const Object &o, size_t sec, const Place &p,
                       const Rela &r) {
  uint32_t type = r.getType(false);
  TypeInfo t = typeInfo(type);
  uint32_t symIndex = r.getSymbol(false);
  bool own = &o == &old_;
  bool alloc = o.sections[sec].sh_flags & ELF::SHF_ALLOC;
  // The code and data of the old version that reach a global the new one
  // no longer names: what each needed of the output. One this cannot
  // read, or that may have made a dynamic relocation, is a need no other
  // object is taken to share.
  std::string gone;
  if (own && alloc && !goneReferences_.empty() && symIndex < o.symbols.size() &&
      o.symbols[symIndex].st_shndx == ELF::SHN_UNDEF &&
      goneReferences_.count(symbolName(o, o.symbols[symIndex])))
    gone = symbolName(o, o.symbols[symIndex]);
  auto unshared = [&] {
    if (!gone.empty())
      goneNeeds_[gone].insert("a relocation of type " + std::to_string(type) +
                              " the patch does not follow");
  };
  if (t.form == Form::Unsupported || symIndex >= o.symbols.size() || p.nobits ||
      r.r_offset > p.room || t.width > p.room - r.r_offset ||
      r.r_offset > o.contents[sec].size() ||
      t.width > o.contents[sec].size() - r.r_offset) {
    unshared();
    return;
  }
  const Sym &s = o.symbols[symIndex];
  uint64_t at = p.fileOffset + r.r_offset;
  uint64_t pc = p.address + r.r_offset;
  // Another object's relocation teaches only how a global is reached from
  // code and data: its debug sections may hold a tombstone instead.
  if (!own && (!alloc || s.getBinding() == ELF::STB_LOCAL))
    return;
  if (out_.dynamic && alloc && type == ELF::R_X86_64_64) {
    unshared();
    if (!own)
      return; // dynamic sites are the object's own
    dynamicSites_[{sec, r.r_offset}] =
        DynamicSite{symIndex, r.r_addend, targetAddress(old_, s, r.r_addend),
                    readValue(at, 8)};
    return;
  }
  uint64_t raw = readValue(at, t.width);
  int64_t value = t.width == 8 ? static_cast<int64_t>(raw)
                  : t.signed32 ? static_cast<int32_t>(raw)
                               : static_cast<int64_t>(raw);
  // S + A (or the entry's address + A), as the previous link wrote it.
  int64_t resolvedPlusAddend =
      t.form == Form::PcRelative ? value + static_cast<int64_t>(pc) : value;
  if (own && discarded(old_, s) && !alloc) {
    Resolution res;
    res.base = static_cast<int64_t>(raw);
    record(tombstones_, old_.names[sec] + "/" + std::to_string(type), res);
    return;
  }
  if (own && merged(old_, s) && std::string_view(t.via) == "S") {
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
  std::string key = targetKey(o, s) + " via " + t.via;
  // What this reference needs of the output: an entry LLD made for it (a
  // GOT entry a load left alone reads), or a resolution of its kind.
  std::string need = key;
  if (relaxable(type) && r.r_offset >= 2) {
    ArrayRef<uint8_t> data = o.contents[sec];
    uint16_t before = endian::read16le(data.data() + r.r_offset - 2);
    uint16_t after = endian::read16le(in_.oldOutput.getBufferStart() + at - 2);
    key += " op " + utohexstr(before);
    need = key;
    res.relaxed = before != after;
    res.op = after;
    // A load LLD left alone reads the symbol's GOT entry, whatever the
    // instruction (apply() asks for it only where LLD never relaxes).
    if (!res.relaxed) {
      need = targetKey(o, s) + " via GOT entry";
      record(resolved_, need, Resolution{res.base, 0, false, false});
      if (!own)
        othersNeed_.insert(need);
    }
  }
  record(resolved_, key, res);
  if (!own)
    othersNeed_.insert(key);
  else if (!gone.empty())
    goneNeeds_[gone].insert(need);
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
      learnOne(old_, sec, *p, r);
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
    auto it = dynamicSites_.find({sec, r.r_offset});
    std::optional<uint64_t> target = targetAddress(new_, s, r.r_addend);
    std::string isNew = "an absolute reference to " + name + " at " + where +
                        " is new: its dynamic relocation is not in the output";
    // The same symbol at the same site (by name: a label the padder made a
    // section symbol shifts the indices after it).
    if (it == dynamicSites_.end() || it->second.symbol >= old_.symbols.size() ||
        symbolName(old_, old_.symbols[it->second.symbol]) != name)
      return isNew;
    const DynamicSite &d = it->second;
    uint64_t value = d.inPlace;
    if (d.addend != r.r_addend || d.target != target) {
      if (!d.target || !target)
        return isNew;
      if (std::string e = moveDynamicSite(pc, p.fileOffset + r.r_offset,
                                          *d.target, *target, value);
          !e.empty())
        return e;
    }
    endian::write64le(loc, value);
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
    // A preemptible symbol's GOT load is never relaxed: another register
    // or instruction reads the same entry.
    bool preemptible = out_.sharedObject && s.getBinding() != ELF::STB_LOCAL &&
                       s.getVisibility() == ELF::STV_DEFAULT;
    if (it == resolved_.end() && relaxable(type) && preemptible)
      it = resolved_.find(targetKey(new_, s) + " via GOT entry");
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
  // A symbol that moved: a reference the previous link resolved to its
  // old address follows it; one through an entry holding that address
  // cannot (but a preemptible symbol's entries are the loader's to fill).
  std::optional<size_t> moved = movedTo(symIndex);
  if (learned && moved) {
    const Move &m = moves_[*moved];
    if (learned->base == static_cast<int64_t>(m.oldAddr))
      learned->base = static_cast<int64_t>(m.newAddr);
    else if (!m.preemptible)
      return "the previous link reached " + name + " at " + where +
             " through a GOT or PLT entry, which holds its old address";
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

constexpr const char *kNotAHash =
    "the build-id is not a hash of the output (--build-id=uuid or a fixed "
    "value): a patch cannot recompute it";

// Where the build-id note `s` of `file` keeps its hash (`at`, `size`
// bytes) and which hash it is; "" or why it cannot be recomputed.
struct BuildIdNote {
  uint64_t at = 0;
  uint32_t size = 0;
  HashFn fn = nullptr;
};
std::string buildIdNote(ArrayRef<uint8_t> file, const Shdr &s,
                        BuildIdNote &note) {
  if (s.sh_offset > file.size() || s.sh_size > file.size() - s.sh_offset ||
      s.sh_size < 16)
    return "the build-id note is outside the file";
  const uint8_t *data = file.data() + s.sh_offset;
  uint32_t nameSize = endian::read32le(data);
  note.size = endian::read32le(data + 4);
  uint64_t descAt = 12 + alignTo(nameSize, 4);
  if (descAt > s.sh_size || note.size > s.sh_size - descAt)
    return "the build-id note is malformed";
  note.at = s.sh_offset + descAt;
  note.fn = note.size == 8    ? hashFast
            : note.size == 16 ? hashMd5
            : note.size == 20 ? hashSha1
                              : nullptr;
  if (!note.fn)
    return kNotAHash;
  return "";
}

// The hash of each chunk of `file` with its build-id zero, if they hash
// to its build-id (else empty: another hash, or a fixed value).
std::vector<uint8_t> allChunkHashes(ArrayRef<uint8_t> file,
                                    const BuildIdNote &note) {
  size_t chunks = (file.size() + kChunk - 1) / kChunk;
  std::vector<uint8_t> hashes(chunks * note.size);
  parallelFor(0, chunks, [&](size_t c) {
    uint64_t begin = c * kChunk,
             end = std::min<uint64_t>(file.size(), begin + kChunk);
    ArrayRef<uint8_t> bytes = file.slice(begin, end - begin);
    std::vector<uint8_t> scratch;
    if (note.at < end && note.at + note.size > begin) {
      scratch.assign(bytes.begin(), bytes.end());
      for (uint64_t i = std::max(note.at, begin);
           i < std::min<uint64_t>(note.at + note.size, end); ++i)
        scratch[i - begin] = 0;
      bytes = scratch;
    }
    note.fn(hashes.data() + c * note.size, bytes);
  });
  std::vector<uint8_t> id(note.size);
  note.fn(id.data(), hashes);
  if (!std::equal(id.begin(), id.end(), file.data() + note.at))
    hashes.clear();
  return hashes;
}

std::string Patcher::buildId(std::vector<Edit> &edits,
                             std::vector<uint8_t> &hashes) const {
  ArrayRef<uint8_t> old = arrayRefFromStringRef(in_.oldOutput.getBuffer());
  for (size_t i = 0; i < out_.sections.size(); ++i) {
    const Shdr &s = out_.sections[i];
    if (s.sh_type != ELF::SHT_NOTE || out_.names[i] != ".note.gnu.build-id")
      continue;
    BuildIdNote note;
    if (std::string e = buildIdNote(old, s, note); !e.empty())
      return e;
    uint64_t at = note.at;
    uint32_t descSize = note.size;
    HashFn fn = note.fn;
    // Chunk `c` of the new file: with the edits, and the build-id zero.
    auto chunkOf = [&](size_t c, std::string &scratch) -> ArrayRef<uint8_t> {
      uint64_t begin = c * kChunk,
               end = std::min<uint64_t>(old.size(), begin + kChunk);
      auto overlaps = [&](uint64_t off, uint64_t len) {
        return off < end && off + len > begin;
      };
      bool touched = overlaps(at, descSize);
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
      hashes = allChunkHashes(old, note);
      if (hashes.empty())
        return kNotAHash;
    }
    for (size_t c = 0; c < chunks; ++c) {
      std::string scratch;
      ArrayRef<uint8_t> bytes = chunkOf(c, scratch);
      if (!scratch.empty())
        fn(hashes.data() + c * descSize, bytes);
    }
    fn(id.data(), hashes);
    edits.push_back(Edit{at, std::string(id.begin(), id.end())});
    return "";
  }
  return "";
}

std::optional<uint64_t> Patcher::targetAddress(const Object &o, const Sym &s,
                                               int64_t addend) const {
  if (s.st_shndx == ELF::SHN_UNDEF || s.st_shndx >= o.sections.size() ||
      merged(o, s))
    return std::nullopt;
  std::string why;
  bool dropped = false;
  std::optional<Place> p =
      placeIn(o, *in_.map, in_.objectName, s.st_shndx, why, dropped);
  if (!p)
    return std::nullopt;
  return p->address + s.st_value + static_cast<uint64_t>(addend);
}

const Shdr *Patcher::outputSection(StringRef name) const {
  const Shdr *found = nullptr;
  for (size_t i = 0; i < out_.sections.size(); ++i)
    if (out_.names[i] == name) {
      if (found)
        return nullptr; // two of one name: neither is the one
      found = &out_.sections[i];
    }
  return found;
}

std::string Patcher::findMoves() {
  // The new object's symbols but its new references, each against the old
  // object's symbol of its place but its gone references.
  // (Labels the padder made section symbols are never in the output's
  // symbol table: they are left out on both sides.)
  auto reference = [](const Object &o, const Sym &s, auto &&names) {
    return s.st_shndx == ELF::SHN_UNDEF && s.getBinding() != ELF::STB_LOCAL &&
           std::find(names.begin(), names.end(), symbolName(o, s)) !=
               names.end();
  };
  std::vector<size_t> paired, was;
  for (size_t i = 0; i < new_.symbols.size(); ++i) {
    const Sym &b = new_.symbols[i];
    if (!isLabel(b) && !reference(new_, b, newReferences_))
      paired.push_back(i);
  }
  for (size_t i = 0; i < old_.symbols.size(); ++i) {
    const Sym &a = old_.symbols[i];
    if (!isLabel(a) && !reference(old_, a, goneReferences_))
      was.push_back(i);
  }
  if (was.size() != paired.size())
    return "the symbol table changed (" + std::to_string(new_.symbols.size()) +
           " symbols, were " + std::to_string(old_.symbols.size()) + ")";
  moveOf_.assign(new_.symbols.size(), -1);
  std::set<std::pair<std::string, uint64_t>> seen;
  for (size_t k = 0; k < paired.size(); ++k) {
    size_t i = paired[k];
    const Sym &a = old_.symbols[was[k]], &b = new_.symbols[i];
    std::string name = symbolName(new_, b);
    // LLD writes an object's locals in its order, and takes its globals in
    // it: the same order keeps the output's symbol table in place.
    // A symbol may change its section (an initializer now zero: .data to
    // .bss), when both are placed.
    bool otherSection = a.st_shndx != b.st_shndx;
    if (symbolName(old_, a) != name || a.st_info != b.st_info ||
        a.st_other != b.st_other ||
        (otherSection &&
         (a.st_shndx == ELF::SHN_UNDEF || b.st_shndx == ELF::SHN_UNDEF ||
          b.getType() == ELF::STT_SECTION)))
      return "the symbol table's order changed (" + name + ")";
    if ((a.st_value == b.st_value && a.st_size == b.st_size && !otherSection) ||
        b.getType() == ELF::STT_SECTION || b.st_shndx == ELF::SHN_UNDEF)
      continue;
    if (b.st_shndx >= new_.sections.size() ||
        a.st_shndx >= old_.sections.size())
      return "symbol " + name + " (absolute or common) changed its value";
    if (b.getType() == ELF::STT_TLS)
      return "thread-local symbol " + name +
             " moved (the patch does not follow TLS offsets)";
    // An IRELATIVE relocation holds a resolver's address; a versioned
    // name is written without its version.
    if (b.getType() == ELF::STT_GNU_IFUNC || StringRef(name).contains('@'))
      return "symbol " + name +
             " moved (an ifunc or a versioned name: the patch does not "
             "follow it)";
    std::string why;
    bool dropped = false, droppedBefore = false;
    std::optional<Place> p =
        placeIn(new_, *in_.map, in_.objectName, b.st_shndx, why, dropped);
    std::optional<Place> was = otherSection
                                   ? placeIn(old_, *in_.map, in_.objectName,
                                             a.st_shndx, why, droppedBefore)
                                   : p;
    if (!p && !was && dropped && (droppedBefore || !otherSection))
      continue; // the output has none of its section
    if (!p || !was)
      return why.empty() ? "symbol " + name +
                               " moved to or from a section the output does "
                               "not have"
                         : why;
    Move m;
    m.name = name;
    m.global = b.getBinding() != ELF::STB_LOCAL;
    m.preemptible =
        out_.sharedObject && m.global && b.getVisibility() == ELF::STV_DEFAULT;
    m.oldAddr = was->address + a.st_value;
    m.newAddr = p->address + b.st_value;
    m.oldSection = was->outputIndex;
    m.newSection = p->outputIndex;
    if (otherSection &&
        std::max(m.oldSection, m.newSection) >= ELF::SHN_LORESERVE)
      return "symbol " + name +
             " changed to a section whose index the "
             "symbol table holds elsewhere (SHN_XINDEX)";
    m.oldSize = a.st_size;
    m.newSize = b.st_size;
    if (!seen.emplace(name, m.oldAddr).second)
      return "two symbols named " + name + " were at one address";
    if (m.oldAddr != m.newAddr || m.oldSection != m.newSection) {
      moveOf_[i] = static_cast<int>(moves_.size());
      if (m.global)
        movedGlobals_[name] = moves_.size();
    }
    moves_.push_back(std::move(m));
  }
  // Addresses the linker wrote from a symbol's: the entry point, the
  // dynamic section's initialisation and finalisation functions.
  std::vector<std::pair<const char *, uint64_t>> held = {
      {"the entry point", out_.file.getHeader().e_entry}};
  for (const auto &[tag, value] :
       out_.dynamicEntries(in_.oldOutput.getBuffer()))
    if (tag == ELF::DT_INIT || tag == ELF::DT_FINI)
      held.emplace_back(tag == ELF::DT_INIT ? "DT_INIT" : "DT_FINI", value);
  for (const Move &m : moves_)
    for (const auto &[what, address] : held)
      if (m.oldAddr != m.newAddr && address == m.oldAddr)
        return std::string(what) + " is " + m.name + ", which moved";
  return "";
}

// One record of an .eh_frame: a CIE or an FDE.
struct EhRecord {
  uint64_t offset = 0, size = 0;
  bool cie = false;
  bool operator==(const EhRecord &) const = default;
};

// The records of an .eh_frame, up to a zero terminator (as LLD reads
// them); false if malformed or in the 64-bit format.
bool ehRecords(ArrayRef<uint8_t> data, std::vector<EhRecord> &out) {
  for (uint64_t off = 0; off < data.size();) {
    if (data.size() - off < 4)
      return false;
    uint64_t len = endian::read32le(data.data() + off);
    if (len == 0)
      return true;
    if (len == 0xffffffff || len < 4 || len > data.size() - off - 4)
      return false;
    out.push_back({off, 4 + len, endian::read32le(data.data() + off + 4) == 0});
    off += 4 + len;
  }
  return true;
}

std::string Patcher::patchEhFrame() {
  size_t eh = new_.sections.size();
  for (size_t i = 0; i < new_.names.size(); ++i)
    if (new_.names[i] == ".eh_frame") {
      if (eh != new_.sections.size())
        return "the object has two .eh_frame sections";
      eh = i;
    }
  if (eh == new_.sections.size())
    return "";
  bool namesMoved = std::any_of(
      new_.relocs[eh].begin(), new_.relocs[eh].end(),
      [&](const Rela &r) { return movedTo(r.getSymbol(false)).has_value(); });
  if (!namesMoved && old_.contents[eh] == new_.contents[eh] &&
      old_.relocBytes[eh] == new_.relocBytes[eh])
    return "";
  ArrayRef<uint8_t> was = old_.contents[eh], now = new_.contents[eh];
  std::vector<EhRecord> before, after;
  if (!ehRecords(was, before) || !ehRecords(now, after))
    return "the object's .eh_frame is unreadable";
  if (before != after)
    return "its records changed (LLD rebuilds .eh_frame and .eh_frame_hdr)";
  // Each record's relocations, by offset, in both versions.
  auto byOffset = [](const std::vector<Rela> &rs,
                     std::map<uint64_t, const Rela *> &into) {
    for (const Rela &r : rs)
      if (!into.emplace(r.r_offset, &r).second)
        return false;
    return true;
  };
  std::map<uint64_t, const Rela *> relocsWas, relocsNow;
  if (!byOffset(old_.relocs[eh], relocsWas) ||
      !byOffset(new_.relocs[eh], relocsNow))
    return "two relocations at one place in .eh_frame";
  const Shdr *out = outputSection(".eh_frame");
  if (!out)
    return "the output has no one .eh_frame";
  uint64_t fileSize = in_.oldOutput.getBufferSize();
  std::vector<EhPiece> pieces = in_.map->ehPieces(in_.objectName);
  std::string buf(reinterpret_cast<const char *>(now.data()), now.size());
  std::vector<FdeMove> fdes;
  for (const EhRecord &rec : after) {
    auto first = relocsNow.lower_bound(rec.offset),
         last = relocsNow.lower_bound(rec.offset + rec.size);
    auto firstWas = relocsWas.lower_bound(rec.offset),
         lastWas = relocsWas.lower_bound(rec.offset + rec.size);
    if (std::distance(first, last) != std::distance(firstWas, lastWas))
      return "a record's relocations changed";
    for (auto a = firstWas, b = first; b != last; ++a, ++b)
      if (a->first != b->first ||
          a->second->getType(false) != b->second->getType(false) ||
          (rec.cie &&
           (a->second->getSymbol(false) != b->second->getSymbol(false) ||
            a->second->r_addend != b->second->r_addend)))
        return "a record's relocations changed";
    if (rec.cie) {
      if (was.slice(rec.offset, rec.size) != now.slice(rec.offset, rec.size))
        return "a CIE changed";
      continue;
    }
    auto pcWas = relocsWas.find(rec.offset + 8),
         pcNow = relocsNow.find(rec.offset + 8);
    if (pcNow == relocsNow.end() || pcWas == relocsWas.end() ||
        pcNow->second->getType(false) != ELF::R_X86_64_PC32 ||
        was.slice(rec.offset + 4, 4) != now.slice(rec.offset + 4, 4))
      return "an FDE whose start is not a PC-relative 32-bit relocation or "
             "whose CIE changed";
    uint32_t symWas = pcWas->second->getSymbol(false),
             symNow = pcNow->second->getSymbol(false);
    if (symWas >= old_.symbols.size() || symNow >= new_.symbols.size())
      return "an FDE's relocation names no symbol";
    std::optional<uint64_t> startWas =
        targetAddress(old_, old_.symbols[symWas], pcWas->second->r_addend);
    std::optional<uint64_t> startNow =
        targetAddress(new_, new_.symbols[symNow], pcNow->second->r_addend);
    // Where LLD put it: in one of the map's runs, or dropped with its
    // function's section.
    std::optional<uint64_t> at;
    for (const EhPiece &piece : pieces)
      if (rec.offset >= piece.inputOffset &&
          rec.offset - piece.inputOffset < piece.size) {
        if (rec.size > piece.size - (rec.offset - piece.inputOffset))
          return "an FDE across two of the map's .eh_frame runs";
        at = piece.address + (rec.offset - piece.inputOffset);
      }
    if (!at) {
      if (startWas || startNow)
        return "the map does not place the FDE of placed code (at "
               ".eh_frame+0x" +
               utohexstr(rec.offset) + ")";
      continue;
    }
    if (!startWas || !startNow)
      return "the map places an FDE whose code it does not";
    if (*at < out->sh_addr || *at - out->sh_addr > out->sh_size ||
        rec.size > out->sh_size - (*at - out->sh_addr) ||
        out->sh_offset > fileSize ||
        *at - out->sh_addr + rec.size > fileSize - out->sh_offset)
      return "the map places an FDE outside the output's .eh_frame";
    uint64_t fileAt = out->sh_offset + (*at - out->sh_addr);
    const char *held = in_.oldOutput.getBufferStart() + fileAt;
    auto pcOf = [&](const char *fde) {
      return *at + 8 +
             static_cast<uint64_t>(static_cast<int64_t>(
                 static_cast<int32_t>(endian::read32le(fde + 8))));
    };
    if (endian::read32le(held) != rec.size - 4 || pcOf(held) != *startWas)
      return "the output's FDE at 0x" + utohexstr(*at) +
             " is not the object's (its start is not PC-relative 32-bit?)";
    Place p;
    p.address = *at - rec.offset;
    p.fileOffset = fileAt - rec.offset;
    p.room = rec.offset + rec.size;
    for (auto r = first; r != last; ++r) {
      if (std::string e = apply(eh, p, *r->second, buf); !e.empty())
        return e;
      ++extraRelocations_;
    }
    std::string bytes = buf.substr(rec.offset, rec.size);
    std::memcpy(bytes.data() + 4, held + 4, 4); // LLD's pointer to its CIE
    if (pcOf(bytes.data()) != *startNow)
      return "an FDE's new start is not where its code is";
    if (std::memcmp(bytes.data(), held, bytes.size()) != 0)
      edit(fileAt, std::move(bytes));
    if (*startWas != *startNow)
      fdes.push_back(FdeMove{*at, *startWas, *startNow});
  }
  return patchEhFrameHdr(fdes, *out);
}

std::string Patcher::patchEhFrameHdr(const std::vector<FdeMove> &fdes,
                                     const Shdr &ehFrame) {
  const Shdr *hdr = outputSection(".eh_frame_hdr");
  if (fdes.empty() || !hdr)
    return "";
  ArrayRef<uint8_t> file = arrayRefFromStringRef(in_.oldOutput.getBuffer());
  if (hdr->sh_offset > file.size() ||
      hdr->sh_size > file.size() - hdr->sh_offset || hdr->sh_size < 12 ||
      ehFrame.sh_offset > file.size() ||
      ehFrame.sh_size > file.size() - ehFrame.sh_offset)
    return "the output's .eh_frame_hdr is outside the file";
  const uint8_t *h = file.data() + hdr->sh_offset;
  // Version 1, eh_frame_ptr pcrel sdata4, fde_count udata4, table
  // datarel sdata4: what LLD writes.
  if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
    return "an .eh_frame_hdr LLD did not write";
  uint64_t count = endian::read32le(h + 8);
  if (count * 8 > hdr->sh_size - 12)
    return "the .eh_frame_hdr table runs past its section";
  // LLD keeps one entry per address: with two FDEs of one function (ICF)
  // the table is shorter than .eh_frame, and which one it kept depends on
  // the order of the rest.
  std::vector<EhRecord> records;
  if (!ehRecords(file.slice(ehFrame.sh_offset, ehFrame.sh_size), records))
    return "the output's .eh_frame is unreadable";
  if (static_cast<uint64_t>(
          std::count_if(records.begin(), records.end(),
                        [](const EhRecord &r) { return !r.cie; })) != count)
    return "the .eh_frame_hdr table has fewer entries than .eh_frame FDEs";
  uint64_t va = hdr->sh_addr;
  using Entry = std::pair<uint32_t, uint32_t>; // pc, FDE (from the header)
  std::vector<Entry> table(count);
  std::map<uint32_t, size_t> byFde;
  for (size_t k = 0; k < count; ++k) {
    table[k] = {endian::read32le(h + 12 + k * 8),
                endian::read32le(h + 16 + k * 8)};
    byFde[table[k].second] = k;
  }
  std::vector<Entry> was = table;
  for (const FdeMove &f : fdes) {
    auto it = byFde.find(static_cast<uint32_t>(f.fde - va));
    if (it == byFde.end() ||
        table[it->second].first != static_cast<uint32_t>(f.from - va))
      return "the .eh_frame_hdr entry of the FDE at 0x" + utohexstr(f.fde) +
             " is not the one expected";
    if (!isInt<32>(static_cast<int64_t>(f.to - va)))
      return "a function moved out of .eh_frame_hdr's reach";
    table[it->second].first = static_cast<uint32_t>(f.to - va);
  }
  // LLD sorts by PC (as unsigned 32-bit offsets) and keeps one per PC;
  // with no two alike (below) the order is the one stable sort gives.
  std::sort(table.begin(), table.end(),
            [](const Entry &a, const Entry &b) { return a.first < b.first; });
  for (size_t k = 1; k < table.size(); ++k)
    if (table[k].first == table[k - 1].first)
      return "two FDEs start at one address";
  size_t first = 0, last = table.size();
  while (first < last && table[first] == was[first])
    ++first;
  while (last > first && table[last - 1] == was[last - 1])
    --last;
  if (first == last)
    return "";
  std::string bytes((last - first) * 8, '\0');
  for (size_t k = first; k < last; ++k) {
    endian::write32le(bytes.data() + (k - first) * 8, table[k].first);
    endian::write32le(bytes.data() + (k - first) * 8 + 4, table[k].second);
  }
  edit(hdr->sh_offset + 12 + first * 8, std::move(bytes));
  return "";
}

std::string Patcher::patchSymbolTables() {
  if (moves_.empty())
    return "";
  // Where moved symbols were, and every symbol of the object there.
  std::map<uint64_t, std::vector<size_t>> at;
  for (size_t m = 0; m < moves_.size(); ++m)
    at[moves_[m].oldAddr].push_back(m);
  std::set<std::pair<std::string, uint64_t>> ours;
  for (const Sym &s : old_.symbols)
    if (s.getType() != ELF::STT_SECTION)
      if (std::optional<uint64_t> a = targetAddress(old_, s, 0))
        ours.emplace(symbolName(old_, s), *a);
  for (const Shdr &table : out_.sections) {
    if (table.sh_type != ELF::SHT_SYMTAB && table.sh_type != ELF::SHT_DYNSYM)
      continue;
    auto syms = out_.file.symbols(&table);
    if (!syms)
      return "the output's symbol table: " + errorText(syms.takeError());
    auto strtab = out_.file.getStringTableForSymtab(table);
    if (!strtab)
      return "the output's symbol table: " + errorText(strtab.takeError());
    std::vector<unsigned> found(moves_.size());
    for (size_t k = 0; k < syms->size(); ++k) {
      const Sym &y = (*syms)[k];
      if (y.st_shndx == ELF::SHN_UNDEF || y.getType() == ELF::STT_SECTION ||
          y.getType() == ELF::STT_FILE)
        continue;
      auto here = at.find(y.st_value);
      bool global = y.getBinding() != ELF::STB_LOCAL;
      if (here == at.end() && !global)
        continue;
      auto name = y.getName(*strtab);
      if (!name)
        return "the output's symbol table: " + errorText(name.takeError());
      if (here == at.end()) {
        // A moved global's name elsewhere: not the symbol that moved.
        auto g = movedGlobals_.find(name->str());
        if (g != movedGlobals_.end())
          return "the output has " + name->str() + " at 0x" +
                 utohexstr(y.st_value) + ", not where it was";
        continue;
      }
      std::optional<size_t> match;
      for (size_t m : here->second)
        if (moves_[m].name == *name)
          match = m;
      if (!match) {
        if (ours.count({name->str(), y.st_value}))
          continue;
        return "symbol " + name->str() +
               ", which no object of the link's "
               "defines there, is at the address of " +
               moves_[here->second.front()].name +
               " (an alias a script or --defsym made)";
      }
      const Move &m = moves_[*match];
      if (y.st_size != m.oldSize ||
          (m.oldSection != m.newSection && y.st_shndx != m.oldSection))
        return "the output gives " + m.name + " another size or section";
      ++found[*match];
      // st_shndx (another output section when the symbol changed its own),
      // st_value, st_size.
      std::string bytes(18, '\0');
      endian::write16le(bytes.data(),
                        m.oldSection == m.newSection
                            ? static_cast<uint16_t>(y.st_shndx)
                            : static_cast<uint16_t>(m.newSection));
      endian::write64le(bytes.data() + 2, m.newAddr);
      endian::write64le(bytes.data() + 10, m.newSize);
      edit(table.sh_offset + k * sizeof(Sym) + 6, std::move(bytes));
    }
    for (size_t m = 0; m < moves_.size(); ++m) {
      if (found[m] > 1)
        return "the output has " + moves_[m].name + " twice at one address";
      if (found[m] == 0 && moves_[m].global && table.sh_type == ELF::SHT_SYMTAB)
        return "global " + moves_[m].name +
               " is not in the output's symbol table where it was";
    }
  }
  return "";
}

std::string Patcher::moveDynamicSite(uint64_t pc, uint64_t at, uint64_t from,
                                     uint64_t to, uint64_t &inPlace) {
  uint64_t fileSize = in_.oldOutput.getBufferSize();
  if (!relaDyn_) {
    relaDyn_.emplace();
    for (size_t i = 0; i < out_.sections.size(); ++i) {
      const Shdr &s = out_.sections[i];
      if (s.sh_type == ELF::SHT_RELR || out_.names[i] == ".relr.dyn")
        relr_ = true;
      if (s.sh_type != ELF::SHT_RELA || out_.names[i] != ".rela.dyn" ||
          s.sh_offset > fileSize || s.sh_size > fileSize - s.sh_offset)
        continue;
      for (uint64_t e = 0; e + sizeof(Rela) <= s.sh_size; e += sizeof(Rela)) {
        uint64_t site =
            endian::read64le(in_.oldOutput.getBufferStart() + s.sh_offset + e);
        auto [it, fresh] = relaDyn_->emplace(site, s.sh_offset + e);
        if (!fresh)
          it->second = kTwice;
      }
    }
  }
  std::string where = "the dynamic relocation at 0x" + utohexstr(pc);
  uint64_t now = readValue(at, 8);
  auto it = relaDyn_->find(pc);
  if (it != relaDyn_->end()) {
    if (it->second == kTwice)
      return "two dynamic relocations at 0x" + utohexstr(pc);
    const char *e = in_.oldOutput.getBufferStart() + it->second;
    uint64_t info = endian::read64le(e + 8);
    uint64_t addend = endian::read64le(e + 16);
    uint32_t type = static_cast<uint32_t>(info), sym = info >> 32;
    if (type == ELF::R_X86_64_64 && sym != 0) {
      inPlace = now; // bound by name when the program is loaded
      return "";
    }
    if (type != ELF::R_X86_64_RELATIVE || sym != 0)
      return where + " is of a type the patch does not follow";
    if (addend != from)
      return where + " does not hold the address the patch moves";
    std::string bytes(8, '\0');
    endian::write64le(bytes.data(), to);
    edit(it->second + 16, std::move(bytes));
  } else if (!relr_) {
    return "no dynamic relocation at 0x" + utohexstr(pc) +
           " for an address that moved";
  }
  // The site holds the address too with --apply-dynamic-relocs or RELR.
  if (now != from && now != 0)
    return "the site of " + where + " holds neither its address nor 0";
  inPlace = now == from ? to : 0;
  return "";
}

std::string Patcher::retarget(const OtherInput &o, const Object &obj,
                              size_t sec, const Place &p, const Rela &r,
                              const Move &m) {
  uint32_t type = r.getType(false);
  TypeInfo t = typeInfo(type);
  std::string where =
      o.name + ":(" + obj.names[sec] + ")+0x" + utohexstr(r.r_offset);
  if (t.form == Form::Unsupported || std::string_view(t.via) == "TLS" ||
      std::string_view(t.via) == "DTP" || std::string_view(t.via) == "TP")
    return "moved " + m.name + " is referenced at " + where +
           " by a relocation of type " + std::to_string(type) +
           " the patch does not follow";
  if (p.nobits || r.r_offset > p.room || t.width > p.room - r.r_offset)
    return "a relocation at " + where + " is outside its section";
  uint64_t at = p.fileOffset + r.r_offset, pc = p.address + r.r_offset;
  uint64_t a = static_cast<uint64_t>(r.r_addend);
  bool alloc = obj.sections[sec].sh_flags & ELF::SHF_ALLOC;
  std::string bytes(t.width, '\0');
  if (out_.dynamic && alloc && type == ELF::R_X86_64_64) {
    uint64_t value = 0;
    if (std::string e =
            moveDynamicSite(pc, at, m.oldAddr + a, m.newAddr + a, value);
        !e.empty())
      return e + " (" + where + ")";
    endian::write64le(bytes.data(), value);
  } else {
    uint64_t relative = t.form == Form::PcRelative ? pc : 0;
    uint64_t was = m.oldAddr + a - relative, now = m.newAddr + a - relative;
    uint64_t held = readValue(at, t.width);
    bool direct =
        t.width == 8 ? held == was : held == static_cast<uint32_t>(was);
    if (!direct) {
      if (m.preemptible)
        return ""; // through an entry the loader fills
      return "the reference to moved " + m.name + " at " + where +
             " goes through a GOT or PLT entry, which holds its old address";
    }
    int64_t value = static_cast<int64_t>(now);
    if (t.width == 8) {
      endian::write64le(bytes.data(), now);
    } else {
      if (t.signed32 ? !isInt<32>(value) : !isUInt<32>(now))
        return "the reference to " + m.name + " at " + where +
               " no longer fits its 32 bits";
      endian::write32le(bytes.data(), static_cast<uint32_t>(now));
    }
  }
  if (readValue(at, t.width) != (t.width == 8 ? endian::read64le(bytes.data())
                                              : endian::read32le(bytes.data())))
    edit(at, std::move(bytes));
  ++extraRelocations_;
  return "";
}

std::string Patcher::others(const std::vector<OtherInput> *&out) {
  if (!others_) {
    // Every name either step asks about: the new references, the moved
    // globals and the names --wrap turns into them.
    std::set<std::string> names(newReferences_.begin(), newReferences_.end());
    names.insert(goneReferences_.begin(), goneReferences_.end());
    for (const auto &[name, index] : movedGlobals_) {
      names.insert(name);
      names.insert("__real_" + name);
    }
    others_.emplace();
    othersWhy_ = !in_.otherInputs ? "they were not given"
                                  : in_.otherInputs(names, *others_);
  }
  out = &*others_;
  return othersWhy_;
}

std::string Patcher::learnReferences() {
  if (newReferences_.empty() && goneReferences_.empty())
    return "";
  const std::string &first = !newReferences_.empty() ? newReferences_.front()
                                                     : *goneReferences_.begin();
  const std::vector<OtherInput> *all = nullptr;
  if (std::string e = others(all); !e.empty())
    return "a new or gone reference to " + first +
           ", and the link's other objects are not known: " + e;
  // A global LLD inserted before it read this object (a strong reference
  // or definition in an object read earlier) keeps its place in the symbol
  // table, and so its GOT and PLT entries theirs.
  std::set<std::string> wanted(newReferences_.begin(), newReferences_.end());
  wanted.insert(goneReferences_.begin(), goneReferences_.end());
  std::set<std::string> earlier;
  StringSet<> wantedSet = nameSet(wanted);
  for (const OtherInput &o : *all) {
    MemoryBufferRef ref(o.bytes, o.name);
    if (!notAnX8664Object(ref).empty())
      continue; // an archive's member the link did not read as an object
    if (!namesAnyGlobal(ref, wantedSet))
      continue;
    auto obj = readElfObject(ref);
    if (!obj)
      return o.name + ": " + errorText(obj.takeError());
    std::vector<bool> names(obj->symbols.size());
    bool any = false;
    for (size_t k = 0; k < obj->symbols.size(); ++k) {
      const Sym &sym = obj->symbols[k];
      if (sym.getBinding() == ELF::STB_LOCAL ||
          !wanted.count(symbolName(*obj, sym)))
        continue;
      names[k] = any = true;
      if (o.earlier && o.map && sym.getBinding() == ELF::STB_GLOBAL)
        earlier.insert(symbolName(*obj, sym));
    }
    if (!any || !o.map)
      continue;
    for (size_t sec = 0; sec < obj->sections.size(); ++sec) {
      if (!(obj->sections[sec].sh_flags & ELF::SHF_ALLOC) ||
          obj->names[sec] == ".eh_frame" ||
          std::none_of(obj->relocs[sec].begin(), obj->relocs[sec].end(),
                       [&](const Rela &r) {
                         return r.getSymbol(false) < names.size() &&
                                names[r.getSymbol(false)];
                       }))
        continue;
      std::string why;
      bool dropped = false;
      std::optional<Place> p = placeIn(*obj, *o.map, o.name, sec, why, dropped);
      if (!p)
        continue; // dropped, or not one place: nothing learned from it
      for (const Rela &r : obj->relocs[sec])
        if (r.getSymbol(false) < names.size() && names[r.getSymbol(false)])
          learnOne(*obj, sec, *p, r);
    }
  }
  for (const std::string &name : newReferences_)
    if (!earlier.count(name))
      return "a new reference to " + name +
             ", which no object read before this one names (LLD would place "
             "its symbol and entries anew)";
  // A gone reference leaves the output as it was when another object read
  // before names the global, and other objects' code and data still need
  // each thing its relocations needed (the same entry, or a reference of
  // the same kind: LLD would otherwise drop an entry, or a copy).
  for (const std::string &name : goneReferences_) {
    if (!earlier.count(name))
      return "a reference to " + name +
             " is gone, and no object read before this one names it (LLD "
             "would place its symbol and entries anew, or drop them)";
    for (const std::string &need : goneNeeds_[name])
      if (!othersNeed_.count(need))
        return "a reference to " + name +
               " is gone, and no other object needs what it needed (" + need +
               "): LLD would drop it";
  }
  return "";
}

std::string Patcher::patchReferencesElsewhere() {
  if (movedGlobals_.empty())
    return "";
  std::string first = movedGlobals_.begin()->first;
  const std::vector<OtherInput> *all = nullptr;
  if (std::string e = others(all); !e.empty())
    return "global " + first +
           " moved, and the link's other objects, "
           "which may refer to it, are not known: " +
           e;
  // The names that refer to a moved global (and --wrap's for them).
  std::set<std::string> names;
  for (const auto &[name, index] : movedGlobals_) {
    names.insert(name);
    names.insert("__real_" + name);
  }
  StringSet<> nameKeys = nameSet(names);
  for (const OtherInput &o : *all) {
    MemoryBufferRef ref(o.bytes, o.name);
    if (!notAnX8664Object(ref).empty()) {
      if (!o.map)
        continue; // an archive's member the link did not read as an object
      return o.name + " is not an x86-64 object the patch reads";
    }
    if (!namesAnyGlobal(ref, nameKeys))
      continue;
    auto obj = readElfObject(ref);
    if (!obj)
      return o.name + ": " + errorText(obj.takeError());
    // Its symbols that are a moved global (undefined, or a definition the
    // link did not take), and names --wrap would turn into one.
    std::vector<int> refersTo(obj->symbols.size(), -1);
    bool any = false;
    for (size_t k = 0; k < obj->symbols.size(); ++k) {
      const Sym &s = obj->symbols[k];
      if (s.getBinding() == ELF::STB_LOCAL)
        continue;
      std::string name = symbolName(*obj, s);
      if (StringRef(name).starts_with("__real_") &&
          movedGlobals_.count(name.substr(7)))
        return o.name + " refers to " + name + " (--wrap?), and " +
               name.substr(7) + " moved";
      auto it = movedGlobals_.find(name);
      if (it != movedGlobals_.end()) {
        refersTo[k] = static_cast<int>(it->second);
        any = true;
      }
    }
    if (!any)
      continue;
    if (!o.map)
      return o.name + " refers to moved " + first +
             ", and where its sections are is not known";
    for (size_t sec = 0; sec < obj->sections.size(); ++sec) {
      if (!isPatched(obj->sections[sec], obj->names[sec]) ||
          obj->names[sec] == ".eh_frame")
        continue;
      std::optional<Place> p;
      bool looked = false;
      for (const Rela &r : obj->relocs[sec]) {
        uint32_t k = r.getSymbol(false);
        if (k >= refersTo.size() || refersTo[k] < 0)
          continue;
        if (!looked) {
          std::string why;
          bool dropped = false;
          p = placeIn(*obj, *o.map, o.name, sec, why, dropped);
          looked = true;
          if (!p && !dropped)
            return o.name + ": " + why;
        }
        if (!p)
          break; // the link dropped the section
        if (std::string e = retarget(o, *obj, sec, *p, r,
                                     moves_[static_cast<size_t>(refersTo[k])]);
            !e.empty())
          return e;
      }
    }
  }
  return "";
}

PatchResult Patcher::run() {
  // The layout stays: every section keeps its size (a padded one its
  // slot). Symbols may move within them.
  for (size_t i = 0; i < new_.sections.size(); ++i)
    if (isPatched(new_.sections[i], new_.names[i]) &&
        old_.sections[i].sh_size != new_.sections[i].sh_size)
      return refuse("section_resized",
                    "section " + new_.names[i] + " changed size (" +
                        std::to_string(old_.sections[i].sh_size) + " -> " +
                        std::to_string(new_.sections[i].sh_size) +
                        " bytes): only a padded section's room may "
                        "change (incremental_slack)");
  if (std::string e = findMoves(); !e.empty())
    return refuse("symbols_moved", e);

  learn();
  if (std::string e = learnReferences(); !e.empty())
    return refuse("new_reference", e);
  bool symbolsChanged = old_.symtabBytes != new_.symtabBytes;
  PatchResult res;
  for (size_t sec = 0; sec < new_.sections.size(); ++sec) {
    const Shdr &s = new_.sections[sec];
    if (!isPatched(s, new_.names[sec]) || s.sh_type == ELF::SHT_NOBITS ||
        new_.names[sec] == ".eh_frame") // its records, below
      continue;
    bool changed = old_.contents[sec] != new_.contents[sec] ||
                   old_.relocBytes[sec] != new_.relocBytes[sec] ||
                   (symbolsChanged && !new_.relocs[sec].empty());
    if (!changed)
      continue;
    std::string why;
    bool dropped = false;
    std::optional<Place> p =
        placeIn(new_, *in_.map, in_.objectName, sec, why, dropped);
    // Debug sections LLD dropped (--strip-debug, --strip-all): the output
    // has none of that name, and nothing to write.
    if (!p && dropped && !(s.sh_flags & ELF::SHF_ALLOC) &&
        std::none_of(
            out_.names.begin(), out_.names.end(),
            [&](const std::string &n) { return n == new_.names[sec]; }))
      continue;
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
  if (std::string e = patchEhFrame(); !e.empty())
    return refuse("eh_frame_changed", ".eh_frame: " + e);
  if (std::string e = patchSymbolTables(); !e.empty())
    return refuse("symbols_moved", e);
  if (std::string e = patchReferencesElsewhere(); !e.empty())
    return refuse("symbols_moved", e);
  for (auto &[offset, bytes] : extra_) {
    res.bytesWritten += bytes.size();
    res.edits.push_back(Edit{offset, std::move(bytes)});
  }
  res.relocationsApplied += extraRelocations_;
  res.symbolsMoved = moves_.size();
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
  return Patcher(in, *oldObj, *newObj, *out, check.newReferences,
                 check.goneReferences)
      .run();
}

std::vector<uint8_t> buildIdChunkHashes(StringRef output) {
  Expected<File> file = File::create(output);
  if (!file) {
    consumeError(file.takeError());
    return {};
  }
  Expected<ArrayRef<Shdr>> sections = file->sections();
  if (!sections) {
    consumeError(sections.takeError());
    return {};
  }
  for (const Shdr &s : *sections) {
    if (s.sh_type != ELF::SHT_NOTE)
      continue;
    Expected<StringRef> name = file->getSectionName(s);
    if (!name) {
      consumeError(name.takeError());
      continue;
    }
    BuildIdNote note;
    if (*name == ".note.gnu.build-id")
      return buildIdNote(arrayRefFromStringRef(output), s, note).empty()
                 ? allChunkHashes(arrayRefFromStringRef(output), note)
                 : std::vector<uint8_t>{};
  }
  return {};
}

std::string applyEdits(StringRef oldOutput, const std::vector<Edit> &edits) {
  std::string out(oldOutput);
  for (const Edit &e : edits)
    if (e.offset <= out.size() && e.bytes.size() <= out.size() - e.offset)
      std::memcpy(out.data() + e.offset, e.bytes.data(), e.bytes.size());
  return out;
}

} // namespace linkd::incremental
