// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/elf_object.h"

#include "llvm/BinaryFormat/ELF.h"

namespace linkd::incremental {

using namespace llvm;

std::string notAnX8664Object(MemoryBufferRef buf) {
  auto f = object::ELFFile<ELFT>::create(buf.getBuffer());
  if (!f)
    return buf.getBufferIdentifier().str() + ": " + toString(f.takeError());
  if (f->getHeader().e_type != ELF::ET_REL ||
      f->getHeader().e_machine != ELF::EM_X86_64)
    return buf.getBufferIdentifier().str() +
           ": not an x86-64 relocatable object";
  return "";
}

Expected<ElfObject> readElfObject(MemoryBufferRef buf) {
  auto f = object::ELFFile<ELFT>::create(buf.getBuffer());
  if (!f)
    return f.takeError();
  ElfObject o{std::move(*f), {}, {}, {}, {}, {}, {}, {}, {}};
  auto secs = o.file.sections();
  if (!secs)
    return secs.takeError();
  size_t n = secs->size();
  o.relocs.resize(n);
  o.relocBytes.resize(n);
  for (const ELFT::Shdr &s : *secs) {
    auto name = o.file.getSectionName(s);
    if (!name)
      return name.takeError();
    ArrayRef<uint8_t> data;
    if (s.sh_type != ELF::SHT_NOBITS && s.sh_type != ELF::SHT_NULL) {
      auto c = o.file.getSectionContents(s);
      if (!c)
        return c.takeError();
      data = *c;
    }
    o.sections.push_back(s);
    o.names.push_back(name->str());
    o.contents.push_back(data);
  }
  bool sawSymtab = false;
  for (size_t i = 0; i < n; ++i) {
    const ELFT::Shdr &s = o.sections[i];
    if (s.sh_type == ELF::SHT_REL)
      return createStringError(inconvertibleErrorCode(),
                               "REL relocations in an x86-64 object");
    if (s.sh_type == ELF::SHT_SYMTAB) {
      if (sawSymtab)
        return createStringError(inconvertibleErrorCode(), "two symbol tables");
      sawSymtab = true;
      auto syms = o.file.symbols(&s);
      if (!syms)
        return syms.takeError();
      auto strtab = o.file.getStringTableForSymtab(s);
      if (!strtab)
        return strtab.takeError();
      o.symbols.assign(syms->begin(), syms->end());
      o.strtab = *strtab;
      o.symtabBytes = o.contents[i];
    } else if (s.sh_type == ELF::SHT_RELA) {
      if (s.sh_info >= n)
        return createStringError(inconvertibleErrorCode(),
                                 "a relocation section for a section that "
                                 "does not exist");
      auto relas = o.file.relas(s);
      if (!relas)
        return relas.takeError();
      o.relocs[s.sh_info].assign(relas->begin(), relas->end());
      o.relocBytes[s.sh_info] = o.contents[i];
    }
  }
  return o;
}

StringSet<> nameSet(const std::set<std::string> &names) {
  StringSet<> set;
  for (const std::string &n : names)
    set.insert(n);
  return set;
}

bool namesAnyGlobal(MemoryBufferRef ref, const StringSet<> &names) {
  auto file = object::ELFFile<ELFT>::create(ref.getBuffer());
  if (!file) {
    consumeError(file.takeError());
    return true;
  }
  auto sections = file->sections();
  if (!sections) {
    consumeError(sections.takeError());
    return true;
  }
  for (const ELFT::Shdr &sec : *sections) {
    if (sec.sh_type != ELF::SHT_SYMTAB)
      continue;
    auto symbols = file->symbols(&sec);
    auto strtab = file->getStringTableForSymtab(sec);
    if (!symbols || !strtab) {
      consumeError(symbols.takeError());
      consumeError(strtab.takeError());
      return true;
    }
    // Globals follow the locals (sh_info: the first global's index).
    for (const ELFT::Sym &sym :
         symbols->drop_front(std::min<size_t>(sec.sh_info, symbols->size()))) {
      if (sym.getBinding() == ELF::STB_LOCAL)
        continue;
      auto name = sym.getName(*strtab);
      if (!name) {
        consumeError(name.takeError());
        return true;
      }
      if (names.contains(*name))
        return true;
    }
    return false;
  }
  return false;
}

std::string symbolName(const ElfObject &o, const ELFT::Sym &s) {
  if (s.getType() == ELF::STT_SECTION)
    return s.st_shndx < o.names.size() ? "section " + o.names[s.st_shndx]
                                       : "section ?";
  auto name = s.getName(o.strtab);
  if (!name) {
    consumeError(name.takeError());
    return "?";
  }
  return name->str();
}

bool isPatched(const ELFT::Shdr &s, const std::string &name) {
  return (s.sh_flags & ELF::SHF_ALLOC) || name.starts_with(".debug_");
}

} // namespace linkd::incremental
