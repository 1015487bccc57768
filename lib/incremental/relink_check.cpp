// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/relink_check.h"

#include "incremental/elf_object.h"

#include "llvm/BinaryFormat/ELF.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace linkd::incremental {

using namespace llvm;
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

// What an object's symbol table says: each symbol's shape (sorted, for the
// comparison), and by index its name and whether it is undefined (for the
// relocations).
struct Symbols {
  std::vector<SymbolShape> shapes;
  std::vector<std::string> names;
  std::vector<bool> undefined;
};

void readSymbols(const ElfObject &o, Symbols &out) {
  std::vector<SymbolShape> &shapes = out.shapes;
  std::vector<std::string> &names = out.names;
  for (const ELFT::Sym &s : o.symbols) {
    std::string name = symbolName(o, s);
    names.push_back(name);
    out.undefined.push_back(s.st_shndx == ELF::SHN_UNDEF);
    // A ".L" local in a mergeable section (a string's label) never reaches
    // the output's symbol table: LLD drops it. Its piece is compared with
    // the section.
    if (s.getBinding() == ELF::STB_LOCAL && name.starts_with(".L") &&
        s.st_shndx < o.sections.size() &&
        (o.sections[s.st_shndx].sh_flags & ELF::SHF_MERGE))
      continue;
    // Nor does a section symbol, and one with a name is such a label the
    // padder handed LLD as one (its section no longer merged).
    if (isLabel(s))
      continue;
    std::string section = s.st_shndx == ELF::SHN_UNDEF    ? "undefined"
                          : s.st_shndx == ELF::SHN_ABS    ? "absolute"
                          : s.st_shndx == ELF::SHN_COMMON ? "common"
                          : s.st_shndx < o.names.size()   ? o.names[s.st_shndx]
                                                          : "?";
    // A symbol may move between the object's own allocated sections (an
    // initializer now zero: .data to .bss); the patch follows the move.
    if (s.st_shndx < o.sections.size() && s.getType() != ELF::STT_SECTION) {
      uint64_t flags = o.sections[s.st_shndx].sh_flags;
      if ((flags & ELF::SHF_ALLOC) &&
          !(flags & (ELF::SHF_MERGE | ELF::SHF_TLS | ELF::SHF_GROUP)))
        section = "an allocated section";
    }
    shapes.emplace_back(name, s.st_info, s.st_other, section);
  }
  std::sort(shapes.begin(), shapes.end());
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
// each section has; "" or what is wrong with them.
std::string readNeeds(const ElfObject &o, const Symbols &symbols,
                      std::set<Need> &entries, std::multiset<Need> &absolute,
                      std::map<uint32_t, uint64_t> &relocsOf) {
  for (size_t sec = 0; sec < o.sections.size(); ++sec) {
    bool allocated = o.sections[sec].sh_flags & ELF::SHF_ALLOC;
    relocsOf[static_cast<uint32_t>(sec)] += o.relocs[sec].size();
    for (const ELFT::Rela &r : o.relocs[sec]) {
      uint32_t sym = r.getSymbol(false);
      if (sym >= symbols.names.size())
        return "a relocation names a symbol that does not exist";
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
  return "";
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

uint64_t differingBytes(ArrayRef<uint8_t> a, ArrayRef<uint8_t> b) {
  uint64_t n = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  for (size_t i = 0, e = std::min(a.size(), b.size()); i < e; ++i)
    n += a[i] != b[i];
  return n;
}

// The section rules; fills the changed sections of `c`.
RelinkCheck compareSections(const ElfObject &a, const ElfObject &b,
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
  for (MemoryBufferRef buf : {oldObject, newObject})
    if (std::string why = notAnX8664Object(buf); !why.empty())
      return refuse("not_x86_64_object", why);
  auto a = readElfObject(oldObject);
  if (!a)
    return refuse("unreadable", oldObject.getBufferIdentifier().str() + ": " +
                                    toString(a.takeError()));
  auto b = readElfObject(newObject);
  if (!b)
    return refuse("unreadable", newObject.getBufferIdentifier().str() + ": " +
                                    toString(b.takeError()));
  return checkRelink(*a, *b, slack);
}

RelinkCheck checkRelink(const ElfObject &oldObject, const ElfObject &newObject,
                        const SlackPolicy &slack) {
  const ElfObject *a = &oldObject, *b = &newObject;
  // The symbols first: a new function also grows .text and .eh_frame, but
  // the symbol is what a full link is needed for.
  Symbols symA, symB;
  readSymbols(*a, symA);
  readSymbols(*b, symB);
  const std::vector<SymbolShape> &shapesA = symA.shapes, &shapesB = symB.shapes;
  std::vector<std::string> newReferences, goneReferences;
  if (shapesA != shapesB) {
    std::vector<SymbolShape> added, removed;
    std::set_difference(shapesB.begin(), shapesB.end(), shapesA.begin(),
                        shapesA.end(), std::back_inserter(added));
    std::set_difference(shapesA.begin(), shapesA.end(), shapesB.begin(),
                        shapesB.end(), std::back_inserter(removed));
    // A global the object now refers to and did not name (or named and no
    // longer does): undefined, strong, of default visibility, and not a
    // name the other version has in another way.
    auto referenceNotIn = [](const std::vector<SymbolShape> &other) {
      return [&other](const SymbolShape &s) {
        const auto &[name, info, visibility, section] = s;
        return section == "undefined" && (info >> 4) == ELF::STB_GLOBAL &&
               (visibility & 3) == ELF::STV_DEFAULT &&
               std::none_of(other.begin(), other.end(),
                            [&](const SymbolShape &x) {
                              return std::get<0>(x) == name;
                            });
      };
    };
    auto isNew = referenceNotIn(shapesA), isGone = referenceNotIn(shapesB);
    auto gone = std::find_if_not(removed.begin(), removed.end(), isGone);
    if (gone != removed.end())
      return refuse("symbols_changed", "symbol " + std::get<0>(*gone) +
                                           " is gone or changed its kind");
    auto added1 = std::find_if_not(added.begin(), added.end(), isNew);
    if (added1 != added.end())
      return refuse("symbols_changed", "symbol " + std::get<0>(*added1) +
                                           " is new or changed its kind");
    for (const SymbolShape &s : added)
      newReferences.push_back(std::get<0>(s));
    for (const SymbolShape &s : removed)
      goneReferences.push_back(std::get<0>(s));
  }

  RelinkCheck c = compareSections(*a, *b, slack, {});
  if (!c.patchable)
    return c;
  c.newReferences = newReferences;
  c.goneReferences = goneReferences;

  std::set<Need> entriesA, entriesB;
  std::multiset<Need> absA, absB;
  std::map<uint32_t, uint64_t> relocsA, relocsB;
  for (const std::string &why : {readNeeds(*a, symA, entriesA, absA, relocsA),
                                 readNeeds(*b, symB, entriesB, absB, relocsB)})
    if (!why.empty())
      return refuse("unreadable", why);
  // A new reference's entries are the output's to have, a gone one's the
  // output's to keep (the patch asks the other objects).
  auto dropEntriesOf = [](std::set<Need> &entries,
                          const std::vector<std::string> &names) {
    for (auto n = entries.begin(); n != entries.end();)
      n = std::find(names.begin(), names.end(), n->second) != names.end()
              ? entries.erase(n)
              : std::next(n);
  };
  dropEntriesOf(entriesB, newReferences);
  dropEntriesOf(entriesA, goneReferences);
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
