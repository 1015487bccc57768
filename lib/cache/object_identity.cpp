// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/object_identity.h"

#include "util/files.h"

#include <elf.h>

#include <cstring>

namespace linkd {

namespace {

template <class T> bool readAt(std::string_view b, uint64_t off, T &out) {
  if (off > b.size() || b.size() - off < sizeof(T))
    return false;
  std::memcpy(&out, b.data() + off, sizeof(T));
  return true;
}

// [off, off + size) within the file.
bool inFile(std::string_view b, uint64_t off, uint64_t size) {
  return off <= b.size() && size <= b.size() - off;
}

// The NUL-terminated string at `off` in the string table `tab`.
std::optional<std::string_view> stringAt(std::string_view tab, uint32_t off) {
  if (off >= tab.size())
    return std::nullopt;
  size_t end = tab.find('\0', off);
  if (end == std::string_view::npos)
    return std::nullopt;
  return tab.substr(off, end - off);
}

} // namespace

std::optional<ObjectIdentity> identityWithoutFileSymbols(std::string_view b) {
  Elf64_Ehdr eh;
  if (!readAt(b, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_REL ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shstrndx == SHN_UNDEF || eh.e_shstrndx >= eh.e_shnum ||
      !inFile(b, eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)))
    return std::nullopt;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (size_t i = 0; i < sh.size(); ++i)
    if (!readAt(b, eh.e_shoff + i * sizeof(Elf64_Shdr), sh[i]))
      return std::nullopt;
  auto contents = [&](const Elf64_Shdr &s) -> std::optional<std::string_view> {
    if (s.sh_type == SHT_NOBITS)
      return std::string_view();
    if (!inFile(b, s.sh_offset, s.sh_size))
      return std::nullopt;
    return b.substr(s.sh_offset, s.sh_size);
  };
  size_t symtab = 0;
  for (size_t i = 1; i < sh.size(); ++i)
    if (sh[i].sh_type == SHT_SYMTAB) {
      if (symtab)
        return std::nullopt;
      symtab = i;
    }
  if (!symtab || sh[symtab].sh_entsize != sizeof(Elf64_Sym) ||
      sh[symtab].sh_size % sizeof(Elf64_Sym) != 0 || sh[symtab].sh_link == 0 ||
      sh[symtab].sh_link >= sh.size() ||
      sh[sh[symtab].sh_link].sh_type != SHT_STRTAB)
    return std::nullopt;
  const size_t strtab = sh[symtab].sh_link;
  // The string table's bytes are left out: nothing but the symbols (and
  // section names, resolved below) may read it.
  for (size_t i = 1; i < sh.size(); ++i)
    if (i != symtab && sh[i].sh_link == strtab)
      return std::nullopt;
  auto shstr = contents(sh[eh.e_shstrndx]);
  auto str = contents(sh[strtab]);
  if (!shstr || !str)
    return std::nullopt;

  ObjectIdentity out;
  Sha256 h;
  h.field("elf64-rel-without-file-symbols-1");
  Elf64_Ehdr hdr = eh;
  hdr.e_shoff = 0; // where the headers are follows the string table's size
  h.field(std::string_view(reinterpret_cast<const char *>(&hdr), sizeof hdr));
  for (size_t i = 0; i < sh.size(); ++i) {
    Elf64_Shdr s = sh[i];
    std::optional<std::string_view> name =
        i == 0 ? std::string_view() : stringAt(*shstr, s.sh_name);
    auto data = contents(s);
    if (!name || !data)
      return std::nullopt;
    s.sh_name = 0;
    s.sh_offset = 0;
    if (i == strtab)
      s.sh_size = 0;
    h.field(*name).field(
        std::string_view(reinterpret_cast<const char *>(&s), sizeof s));
    if (i == strtab)
      continue;
    if (i != symtab) {
      h.field(*data);
      continue;
    }
    for (size_t off = 0; off < data->size(); off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, data->data() + off, sizeof sym);
      std::optional<std::string_view> symName =
          sym.st_name == 0 ? std::string_view() : stringAt(*str, sym.st_name);
      if (!symName)
        return std::nullopt;
      bool file = ELF64_ST_TYPE(sym.st_info) == STT_FILE;
      if (file)
        out.fileSymbols.emplace_back(*symName);
      sym.st_name = 0;
      h.field(file ? std::string_view("\x01"
                                      "file")
                   : *symName)
          .field(std::string_view(reinterpret_cast<const char *>(&sym),
                                  sizeof sym));
    }
  }
  out.digest = h.finish();
  out.bytes = sha256(b);
  return out;
}

std::optional<ObjectIdentity>
fileIdentityWithoutFileSymbols(const std::string &path, size_t maxBytes) {
  Result<std::string> bytes = readFile(path, maxBytes);
  if (!bytes)
    return std::nullopt;
  return identityWithoutFileSymbols(*bytes);
}

} // namespace linkd
