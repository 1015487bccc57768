// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Renaming ELF symbols by rewriting the symbol string table only.
//
// In a relocatable ELF object a symbol's name lives in the string table its
// SHT_SYMTAB links to, and everything else refers to symbols by index:
// relocations, SHT_GROUP signatures (sh_info), SHT_SYMTAB_SHNDX,
// .llvm_addrsig, call-graph profiles. So renaming symbols is: append the new
// names to the string table (or rebuild it, when nothing else reads it),
// point the symbols' st_name at them, and place the table at the end of the
// file. Every other byte
// stays where it was, and every offset into the table stays valid — which
// matters because LLVM's assembler shares one table between symbol and
// section names (and GNU as's tables are tail-merged). This is what ObjCopy
// does for --redefine-sym (every symbol with the name, whatever its
// binding), without rebuilding the whole object: a fraction of the time on
// archives of thousands of members. In a shared table the old names stay,
// unreferenced (as they stay in debug info).
//
// Only the common, checkable layout: 64-bit little-endian (x86-64,
// AArch64), one SHT_SYMTAB. Anything else, or anything out of bounds,
// returns nullopt and the caller uses ObjCopy, whose checks report malformed
// input.
#include "rewrite/object_rewriter.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/Endian.h"

#include <cstring>

namespace linkd::rewrite {

using namespace llvm;

namespace {

uint16_t rd16(const char *p) { return support::endian::read16le(p); }
uint32_t rd32(const char *p) { return support::endian::read32le(p); }
uint64_t rd64(const char *p) { return support::endian::read64le(p); }

struct Shdr {
  uint32_t type, link;
  uint64_t offset, size, entsize;
};

bool inside(uint64_t off, uint64_t size, uint64_t total) {
  return off <= total && size <= total - off;
}

} // namespace

std::optional<std::string>
renameElfSymbols(StringRef image, const StringMap<std::string> &renames) {
  const char *p = image.data();
  uint64_t total = image.size();
  if (total < sizeof(ELF::Elf64_Ehdr) || std::memcmp(p, ELF::ElfMagic, 4) ||
      p[ELF::EI_CLASS] != ELF::ELFCLASS64 ||
      p[ELF::EI_DATA] != ELF::ELFDATA2LSB || rd16(p + 16) != ELF::ET_REL)
    return std::nullopt;
  uint64_t shoff = rd64(p + 0x28);
  uint16_t shentsize = rd16(p + 0x3a), shnum = rd16(p + 0x3c),
           shstrndx = rd16(p + 0x3e);
  if (shentsize != sizeof(ELF::Elf64_Shdr) || shnum == 0 || shstrndx >= shnum ||
      !inside(shoff, uint64_t(shnum) * shentsize, total))
    return std::nullopt; // (shnum 0 with extended numbering: ObjCopy's job)
  auto shdr = [&](unsigned i) {
    const char *h = p + shoff + uint64_t(i) * shentsize;
    return Shdr{rd32(h + 4), rd32(h + 40), rd64(h + 24), rd64(h + 32),
                rd64(h + 56)};
  };
  int symtab = -1;
  for (unsigned i = 0; i < shnum; ++i) {
    if (shdr(i).type != ELF::SHT_SYMTAB)
      continue;
    if (symtab >= 0)
      return std::nullopt;
    symtab = static_cast<int>(i);
  }
  if (symtab < 0)
    return std::nullopt;
  Shdr sym = shdr(symtab);
  if (sym.entsize != sizeof(ELF::Elf64_Sym) || sym.size % sym.entsize ||
      !inside(sym.offset, sym.size, total) || sym.link >= shnum ||
      sym.link == 0)
    return std::nullopt;
  Shdr str = shdr(sym.link);
  if (str.type != ELF::SHT_STRTAB || !inside(str.offset, str.size, total) ||
      str.size == 0 || p[str.offset + str.size - 1] != '\0')
    return std::nullopt;
  StringRef strtab(p + str.offset, str.size);

  // A table only the symbol table reads is rebuilt compactly (every name
  // once; the old bytes cleared). One shared with section names (LLVM's
  // assembler) or read by another section is grown instead: the old bytes,
  // then the new names, so every existing offset stays valid.
  bool exclusive = sym.link != shstrndx;
  for (unsigned i = 0; i < shnum && exclusive; ++i)
    exclusive = static_cast<int>(i) == symtab || shdr(i).link != sym.link ||
                shdr(i).type == ELF::SHT_NULL;
  std::string names = exclusive ? std::string(1, '\0') : strtab.str();
  StringMap<uint32_t> placed;
  auto place = [&](StringRef name) -> std::optional<uint32_t> {
    auto [slot, fresh] = placed.try_emplace(name, 0);
    if (fresh) {
      if (names.size() + name.size() + 1 > UINT32_MAX)
        return std::nullopt;
      slot->second = static_cast<uint32_t>(names.size());
      names += name;
      names.push_back('\0');
    }
    return slot->second;
  };
  uint64_t count = sym.size / sym.entsize;
  std::vector<std::pair<uint64_t, uint32_t>> newOffsets; // symbol, st_name
  bool renamedAny = false;
  for (uint64_t i = 1; i < count; ++i) {
    uint32_t nameOff = rd32(p + sym.offset + i * sym.entsize);
    if (nameOff == 0)
      continue;
    if (nameOff >= strtab.size())
      return std::nullopt;
    StringRef name(strtab.data() + nameOff); // NUL inside: checked above
    auto it = renames.find(name);
    bool renamed = it != renames.end();
    renamedAny |= renamed;
    if (!renamed && !exclusive)
      continue; // keeps its offset into the old bytes
    auto off = place(renamed ? StringRef(it->getValue()) : name);
    if (!off)
      return std::nullopt;
    newOffsets.emplace_back(i, *off);
  }
  if (!renamedAny)
    return image.str();

  std::string out;
  out.reserve(total + names.size());
  out.assign(image.data(), image.size());
  if (exclusive)
    std::memset(out.data() + str.offset, 0, str.size);
  for (auto [index, nameOff] : newOffsets)
    support::endian::write32le(out.data() + sym.offset + index * sym.entsize,
                               nameOff);
  uint64_t newOffset = out.size();
  out += names;
  char *h = out.data() + shoff + uint64_t(sym.link) * shentsize;
  support::endian::write64le(h + 24, newOffset);
  support::endian::write64le(h + 32, names.size());
  return out;
}

} // namespace linkd::rewrite
