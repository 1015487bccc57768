// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/relink_check.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Object/ELFTypes.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace linkd::incremental {

using namespace llvm;
using ELFT = object::ELF64LE;
using File = object::ELFFile<ELFT>;
using Shdr = ELFT::Shdr;

uint64_t SlackPolicy::slot(uint64_t size, uint64_t align) const {
  if (percent == 0 && bytes == 0)
    return size; // no padding: the section's own bytes are its slot
  uint64_t s = size + size * percent / 100 + bytes;
  if (align > 1)
    s = (s + align - 1) / align * align;
  return s;
}

namespace {

// One object, read for the comparison.
struct Object {
  File file;
  std::vector<Shdr> sections;
  std::vector<std::string> names; // per section
  std::vector<ArrayRef<uint8_t>> contents;
};

// What a symbol is to the link, whatever its value and size.
using SymbolShape = std::tuple<std::string, uint8_t, uint8_t, std::string>;

// A relocation's need of a linker-made entry, and for whom.
using Need = std::pair<std::string, std::string>;

RelinkCheck refuse(std::string kind, std::string reason) {
  RelinkCheck c;
  c.kind = std::move(kind);
  c.reason = std::move(reason);
  return c;
}

std::optional<Object> readObject(MemoryBufferRef buf, std::string &why) {
  auto f = File::create(buf.getBuffer());
  if (!f) {
    why = buf.getBufferIdentifier().str() + ": " + toString(f.takeError());
    return std::nullopt;
  }
  if (f->getHeader().e_type != ELF::ET_REL ||
      f->getHeader().e_machine != ELF::EM_X86_64) {
    why =
        buf.getBufferIdentifier().str() + ": not an x86-64 relocatable object";
    return std::nullopt;
  }
  Object o{std::move(*f), {}, {}, {}};
  auto secs = o.file.sections();
  if (!secs) {
    why = toString(secs.takeError());
    return std::nullopt;
  }
  for (const Shdr &s : *secs) {
    auto name = o.file.getSectionName(s);
    ArrayRef<uint8_t> data;
    if (s.sh_type != ELF::SHT_NOBITS && s.sh_type != ELF::SHT_NULL) {
      auto c = o.file.getSectionContents(s);
      if (!c) {
        why = toString(c.takeError());
        return std::nullopt;
      }
      data = *c;
    }
    if (!name) {
      why = toString(name.takeError());
      return std::nullopt;
    }
    o.sections.push_back(s);
    o.names.push_back(name->str());
    o.contents.push_back(data);
  }
  return o;
}

const Shdr *symbolTable(const Object &o) {
  for (const Shdr &s : o.sections)
    if (s.sh_type == ELF::SHT_SYMTAB)
      return &s;
  return nullptr;
}

// The name a relocation or a comparison gives symbol `i`: its own, or its
// section's for a section symbol.
std::string symbolName(const Object &o, const ELFT::Sym &sym,
                       StringRef strtab) {
  if (sym.getType() == ELF::STT_SECTION)
    return sym.st_shndx < o.names.size() ? "section " + o.names[sym.st_shndx]
                                         : "section ?";
  auto name = sym.getName(strtab);
  if (!name) {
    consumeError(name.takeError());
    return "?";
  }
  return name->str();
}

// What an object's symbol table says: each symbol's shape (sorted, for the
// comparison), and by index its name and whether it is undefined (for the
// relocations).
struct Symbols {
  std::vector<SymbolShape> shapes;
  std::vector<std::string> names;
  std::vector<bool> undefined;
};

bool readSymbols(const Object &o, Symbols &out, std::string &why) {
  std::vector<SymbolShape> &shapes = out.shapes;
  std::vector<std::string> &names = out.names;
  const Shdr *symtab = symbolTable(o);
  if (!symtab)
    return true;
  auto syms = o.file.symbols(symtab);
  auto strtab = o.file.getStringTableForSymtab(*symtab);
  if (!syms || !strtab) {
    why = "unreadable symbol table";
    if (!syms)
      consumeError(syms.takeError());
    if (!strtab)
      consumeError(strtab.takeError());
    return false;
  }
  for (const ELFT::Sym &s : *syms) {
    std::string name = symbolName(o, s, *strtab);
    names.push_back(name);
    out.undefined.push_back(s.st_shndx == ELF::SHN_UNDEF);
    // A ".L" local in a mergeable section (a string's label) never reaches
    // the output's symbol table: LLD drops it. Its piece is compared with
    // the section.
    if (s.getBinding() == ELF::STB_LOCAL && name.starts_with(".L") &&
        s.st_shndx < o.sections.size() &&
        (o.sections[s.st_shndx].sh_flags & ELF::SHF_MERGE))
      continue;
    std::string section = s.st_shndx == ELF::SHN_UNDEF    ? "undefined"
                          : s.st_shndx == ELF::SHN_ABS    ? "absolute"
                          : s.st_shndx == ELF::SHN_COMMON ? "common"
                          : s.st_shndx < o.names.size()   ? o.names[s.st_shndx]
                                                          : "?";
    shapes.emplace_back(name, s.st_info, s.st_other, section);
  }
  std::sort(shapes.begin(), shapes.end());
  return true;
}

// The class of linker-made entry an x86-64 relocation may need, or "".
const char *needOf(uint32_t type, bool allocated, bool undefined) {
  switch (type) {
  case ELF::R_X86_64_GOT32:
  case ELF::R_X86_64_GOTPCREL:
  case ELF::R_X86_64_GOTPCRELX:
  case ELF::R_X86_64_REX_GOTPCRELX:
  case ELF::R_X86_64_GOTPCREL64:
  case ELF::R_X86_64_GOT64:
  case ELF::R_X86_64_GOTPLT64:
  case ELF::R_X86_64_GOTOFF64:
  case ELF::R_X86_64_GOTPC32:
  case ELF::R_X86_64_GOTPC64:
    return "GOT";
  case ELF::R_X86_64_PLT32:
  case ELF::R_X86_64_PLTOFF64:
    return undefined ? "PLT" : "";
  case ELF::R_X86_64_TLSGD:
  case ELF::R_X86_64_TLSLD:
  case ELF::R_X86_64_GOTTPOFF:
  case ELF::R_X86_64_TPOFF32:
  case ELF::R_X86_64_TPOFF64:
  case ELF::R_X86_64_DTPOFF32:
  case ELF::R_X86_64_DTPOFF64:
  case ELF::R_X86_64_GOTPC32_TLSDESC:
  case ELF::R_X86_64_TLSDESC_CALL:
    return "TLS";
  case ELF::R_X86_64_64:
    // In a PIE or shared object each may become a dynamic relocation.
    return allocated ? "absolute" : "";
  default:
    return "";
  }
}

// The entries the object's relocations need, and how many relocations
// each section has.
bool readNeeds(const Object &o, const Symbols &symbols, std::set<Need> &entries,
               std::multiset<Need> &absolute,
               std::map<uint32_t, uint64_t> &relocsOf, std::string &why) {
  for (const Shdr &s : o.sections) {
    if (s.sh_type == ELF::SHT_REL) {
      why = "REL relocations in an x86-64 object";
      return false;
    }
    if (s.sh_type != ELF::SHT_RELA)
      continue;
    if (s.sh_info >= o.sections.size()) {
      why = "a relocation section for a section that does not exist";
      return false;
    }
    bool allocated = o.sections[s.sh_info].sh_flags & ELF::SHF_ALLOC;
    auto relas = o.file.relas(s);
    if (!relas) {
      why = toString(relas.takeError());
      return false;
    }
    relocsOf[s.sh_info] += relas->size();
    for (const ELFT::Rela &r : *relas) {
      uint32_t sym = r.getSymbol(false);
      if (sym >= symbols.names.size()) {
        why = "a relocation names a symbol that does not exist";
        return false;
      }
      const char *need =
          needOf(r.getType(false), allocated, symbols.undefined[sym]);
      if (!*need)
        continue;
      Need n{need, symbols.names[sym]};
      if (std::string_view(need) == "absolute")
        absolute.insert(n);
      else
        entries.insert(n);
    }
  }
  return true;
}

// The first entry in one set and not the other, as words.
std::string firstDifference(const std::set<Need> &a, const std::set<Need> &b) {
  for (const Need &n : b)
    if (!a.count(n))
      return "a new " + n.first + " entry for " + n.second;
  for (const Need &n : a)
    if (!b.count(n))
      return "no more " + n.first + " entry for " + n.second;
  return "";
}

bool isDebug(const std::string &name) { return name.starts_with(".debug_"); }

// Sections the output carries, which a patch would rewrite.
bool isPatched(const Shdr &s, const std::string &name) {
  return (s.sh_flags & ELF::SHF_ALLOC) || isDebug(name);
}

uint64_t differingBytes(ArrayRef<uint8_t> a, ArrayRef<uint8_t> b) {
  uint64_t n = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  for (size_t i = 0, e = std::min(a.size(), b.size()); i < e; ++i)
    n += a[i] != b[i];
  return n;
}

// The section rules; fills the changed sections of `c`.
RelinkCheck compareSections(const Object &a, const Object &b,
                            const SlackPolicy &slack, RelinkCheck c) {
  if (a.sections.size() != b.sections.size())
    return refuse("sections_changed", std::to_string(b.sections.size()) +
                                          " sections, were " +
                                          std::to_string(a.sections.size()));
  for (size_t i = 0; i < a.sections.size(); ++i) {
    const Shdr &o = a.sections[i], &n = b.sections[i];
    const std::string &name = b.names[i];
    if (a.names[i] != name || o.sh_type != n.sh_type ||
        o.sh_flags != n.sh_flags || o.sh_addralign != n.sh_addralign ||
        o.sh_entsize != n.sh_entsize)
      return refuse("sections_changed", "section " + name + " (was " +
                                            a.names[i] +
                                            ") changed its name or kind");
    if (n.sh_type == ELF::SHT_GROUP && a.contents[i] != b.contents[i])
      return refuse("sections_changed", "section group " + name + " changed");
    if (n.sh_type == ELF::SHT_RELA || n.sh_type == ELF::SHT_SYMTAB ||
        n.sh_type == ELF::SHT_STRTAB || n.sh_type == ELF::SHT_LLVM_ADDRSIG ||
        n.sh_type == ELF::SHT_NULL)
      continue; // compared as symbols and needs, or not in the output
    bool same = o.sh_size == n.sh_size && a.contents[i] == b.contents[i];
    if (same)
      continue;
    if (n.sh_flags & ELF::SHF_MERGE)
      return refuse("merged_changed",
                    "mergeable section " + name +
                        " changed (its pieces are shared across the link)");
    if (name == ".eh_frame" && o.sh_size != n.sh_size)
      return refuse("eh_frame_changed",
                    ".eh_frame changed size (" + std::to_string(o.sh_size) +
                        " -> " + std::to_string(n.sh_size) + " bytes)");
    if (!isPatched(n, name))
      return refuse("sections_changed",
                    "section " + name + " changed and is not patched");
    uint64_t slot = slack.slot(o.sh_size, o.sh_addralign);
    if (n.sh_size > slot)
      return refuse("section_outgrew", "section " + name +
                                           " outgrew its slot (" +
                                           std::to_string(n.sh_size) + " > " +
                                           std::to_string(slot) + " bytes)");
    c.changedSections.push_back(name);
    c.changedBytes += n.sh_type == ELF::SHT_NOBITS
                          ? (n.sh_size > o.sh_size ? n.sh_size - o.sh_size
                                                   : o.sh_size - n.sh_size)
                          : differingBytes(a.contents[i], b.contents[i]);
  }
  c.patchable = true;
  return c;
}

} // namespace

RelinkCheck checkRelink(MemoryBufferRef oldObject, MemoryBufferRef newObject,
                        const SlackPolicy &slack) {
  std::string why;
  std::optional<Object> a = readObject(oldObject, why);
  if (!a)
    return refuse("not_x86_64_object", why);
  std::optional<Object> b = readObject(newObject, why);
  if (!b)
    return refuse("not_x86_64_object", why);

  // The symbols first: a new function also grows .text and .eh_frame, but
  // the symbol is what a full link is needed for.
  Symbols symA, symB;
  if (!readSymbols(*a, symA, why) || !readSymbols(*b, symB, why))
    return refuse("unreadable", why);
  const std::vector<SymbolShape> &shapesA = symA.shapes, &shapesB = symB.shapes;
  if (shapesA != shapesB) {
    std::vector<SymbolShape> added, removed;
    std::set_difference(shapesB.begin(), shapesB.end(), shapesA.begin(),
                        shapesA.end(), std::back_inserter(added));
    std::set_difference(shapesA.begin(), shapesA.end(), shapesB.begin(),
                        shapesB.end(), std::back_inserter(removed));
    return refuse("symbols_changed",
                  !added.empty() ? "symbol " + std::get<0>(added.front()) +
                                       " is new or changed its kind"
                                 : "symbol " + std::get<0>(removed.front()) +
                                       " is gone or changed its kind");
  }

  RelinkCheck c = compareSections(*a, *b, slack, {});
  if (!c.patchable)
    return c;

  std::set<Need> entriesA, entriesB;
  std::multiset<Need> absA, absB;
  std::map<uint32_t, uint64_t> relocsA, relocsB;
  if (!readNeeds(*a, symA, entriesA, absA, relocsA, why) ||
      !readNeeds(*b, symB, entriesB, absB, relocsB, why))
    return refuse("unreadable", why);
  if (entriesA != entriesB)
    return refuse("linker_entries_changed",
                  firstDifference(entriesA, entriesB));
  if (absA != absB)
    return refuse("linker_entries_changed",
                  "the absolute relocations changed (" +
                      std::to_string(absB.size()) + ", were " +
                      std::to_string(absA.size()) +
                      "): dynamic relocations may follow");
  for (size_t i = 0; i < b->sections.size(); ++i)
    if (std::find(c.changedSections.begin(), c.changedSections.end(),
                  b->names[i]) != c.changedSections.end())
      c.relocations += relocsB[static_cast<uint32_t>(i)];
  return c;
}

} // namespace linkd::incremental
