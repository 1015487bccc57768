// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The ELF reader: what a module needs loaded (DT_NEEDED, DT_RPATH,
// DT_RUNPATH), its exports, the state its symbol table (or, stripped, its
// dynamic symbols) defines and whether the loader binds each to one copy;
// and, for a stripped module, its separate debug file.

#include "daemon/linkd-lld/audit/format_readers.h"
#include "daemon/linkd-lld/audit/toolchain_names.h"

#include "audit/module_id.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace linkd::audit {

namespace {

using namespace llvm;

struct ElfSymbolFacts {
  uint8_t binding = ELF::STB_GLOBAL;
  uint8_t visibility = ELF::STV_DEFAULT;
  bool known = true; // false: from a link record (binding not recorded)
};

// Whether and why the loader keeps this module's copy apart.
void judgeElf(const ModuleInfo &m, const std::string &name,
              const ElfSymbolFacts &f, StateDef &d) {
  if (f.visibility == ELF::STV_HIDDEN || f.visibility == ELF::STV_INTERNAL) {
    d.why = "hidden visibility: not exported, this module's own copy";
    return;
  }
  if (f.binding == ELF::STB_LOCAL) {
    d.why = "local symbol: this module's own copy";
    return;
  }
  if (f.visibility == ELF::STV_PROTECTED) {
    d.why = "protected visibility: the module's own references are bound to "
            "its own copy";
    return;
  }
  if (!m.exportedState.count(name)) {
    d.why = f.known ? "default visibility but not exported (version script, "
                      "--exclude-libs or not dynamic): this module's own copy"
                    : "not exported (hidden or local; linkd's link record): "
                      "this module's own copy";
    return;
  }
  if (m.executable) {
    d.shared = true;
    d.why = "exported by the program: the loader binds every module to it";
    return;
  }
  if (f.binding == ELF::STB_GNU_UNIQUE) {
    d.shared = true;
    d.why = "STB_GNU_UNIQUE: one copy per process";
    return;
  }
  if (m.symbolic) {
    d.why = "exported, but the module is linked with -Bsymbolic "
            "(DF_SYMBOLIC): its own references are bound to its own copy";
    return;
  }
  d.shared = true;
  d.why = m.dynRelocated.count(name)
              ? "exported and interposable: the loader binds every module to "
                "one copy"
              : "exported and interposable (no reference of its own goes "
                "through the loader; one bound by --dynamic-list would not "
                "show)";
}

template <class ELFT> struct ElfReader {
  using Obj = object::ELFObjectFile<ELFT>;
  const Obj &obj;
  ModuleInfo &m;

  // The dynamic table, bounded by the file: ELFFile::dynamicEntries()
  // reads a PT_DYNAMIC that lies outside the file (found by the fuzzer).
  std::optional<ArrayRef<typename ELFT::Dyn>> dynamicEntries() {
    using Dyn = typename ELFT::Dyn;
    const auto &elf = obj.getELFFile();
    for (const Shdr &sh : sections)
      if (sh.sh_type == ELF::SHT_DYNAMIC)
        return take(elf.template getSectionContentsAsArray<Dyn>(sh));
    auto phdrs = take(elf.program_headers());
    if (!phdrs)
      return std::nullopt;
    for (const auto &ph : *phdrs) {
      if (ph.p_type != ELF::PT_DYNAMIC)
        continue;
      uint64_t size = elf.getBufSize();
      if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset ||
          ph.p_offset % alignof(Dyn) != 0)
        return std::nullopt;
      return ArrayRef<Dyn>(
          reinterpret_cast<const Dyn *>(elf.base() + ph.p_offset),
          ph.p_filesz / sizeof(Dyn));
    }
    return std::nullopt;
  }

  void dynamicSection() {
    const auto &elf = obj.getELFFile();
    std::optional<ArrayRef<typename ELFT::Dyn>> dyn = dynamicEntries();
    if (!dyn)
      return;
    uint64_t strtab = 0, strsz = 0, soname = UINT64_MAX, flags1 = 0;
    std::vector<uint64_t> needed, rpath, runpath;
    for (const auto &e : *dyn) {
      switch (e.d_tag) {
      case ELF::DT_NEEDED:
        needed.push_back(e.getVal());
        break;
      case ELF::DT_RPATH:
        rpath.push_back(e.getVal());
        break;
      case ELF::DT_RUNPATH:
        runpath.push_back(e.getVal());
        break;
      case ELF::DT_SONAME:
        soname = e.getVal();
        break;
      case ELF::DT_STRTAB:
        strtab = e.getPtr();
        break;
      case ELF::DT_STRSZ:
        strsz = e.getVal();
        break;
      case ELF::DT_SYMBOLIC:
        m.symbolic = true;
        break;
      case ELF::DT_FLAGS:
        if (e.getVal() & ELF::DF_SYMBOLIC)
          m.symbolic = true;
        break;
      case ELF::DT_FLAGS_1:
        flags1 = e.getVal();
        break;
      default:
        break;
      }
    }
    if (flags1 & ELF::DF_1_PIE)
      m.executable = true;
    if (!strtab)
      return;
    auto mapped = elf.toMappedAddr(strtab);
    if (!mapped) {
      consumeError(mapped.takeError());
      return;
    }
    const char *base = reinterpret_cast<const char *>(elf.base());
    const char *str = reinterpret_cast<const char *>(*mapped);
    if (str < base || str > base + elf.getBufSize())
      return;
    uint64_t avail = static_cast<uint64_t>(base + elf.getBufSize() - str);
    uint64_t size = std::min(strsz, avail);
    auto get = [&](uint64_t off) { return boundedString(str, size, off); };
    for (uint64_t off : needed)
      if (auto s = get(off))
        m.needed.push_back(*s);
    for (uint64_t off : rpath)
      if (auto s = get(off))
        splitPaths(*s, m.rpath);
    for (uint64_t off : runpath)
      if (auto s = get(off))
        splitPaths(*s, m.runpath);
    if (soname != UINT64_MAX)
      if (auto s = get(soname))
        m.soname = *s;
  }

  // Symbols are read through ELFFile, whose accessors return errors;
  // ELFObjectFile's symbol accessors call report_fatal_error on a bad
  // symbol table (found by tests/fuzz/audit_fuzzer.cpp).
  using Shdr = typename ELFT::Shdr;
  using Sym = typename ELFT::Sym;

  ArrayRef<Shdr> sections;

  template <typename T> std::optional<T> take(Expected<T> v) {
    if (!v) {
      consumeError(v.takeError());
      return std::nullopt;
    }
    return std::move(*v);
  }

  // Kind of state in the section a symbol is defined in, or 0.
  char sectionKind(const Sym &sym) {
    if (sym.st_shndx == ELF::SHN_UNDEF || sym.st_shndx >= ELF::SHN_LORESERVE ||
        sym.st_shndx >= sections.size())
      return 0;
    const Shdr &sec = sections[sym.st_shndx];
    uint64_t flags = sec.sh_flags;
    if (!(flags & ELF::SHF_WRITE) || !(flags & ELF::SHF_ALLOC) ||
        (flags & ELF::SHF_EXECINSTR))
      return 0;
    auto name = take(obj.getELFFile().getSectionName(sec));
    if (!name || isNotStateSection(*name))
      return 0;
    if (flags & ELF::SHF_TLS)
      return 'T';
    return sec.sh_type == ELF::SHT_NOBITS ? 'B' : 'D';
  }

  // A state definition's name and kind, or nullopt.
  std::optional<std::pair<std::string, char>> stateSymbol(const Sym &sym,
                                                          StringRef strtab) {
    uint8_t type = sym.getType();
    if ((type != ELF::STT_OBJECT && type != ELF::STT_TLS &&
         type != ELF::STT_COMMON) ||
        sym.st_size == 0)
      return std::nullopt;
    char kind = sectionKind(sym);
    if (!kind)
      return std::nullopt;
    auto name = take(sym.getName(strtab));
    if (!name || name->empty() || isToolchainName(*name))
      return std::nullopt;
    return std::make_pair(name->str(), kind);
  }

  // Each symbol of the table of `type` (SHT_SYMTAB, SHT_DYNSYM) with its
  // string table; false if there is none.
  template <typename Fn> bool forEachSymbol(uint32_t type, Fn fn) {
    const auto &elf = obj.getELFFile();
    for (const Shdr &sh : sections) {
      if (sh.sh_type != type)
        continue;
      auto syms = take(elf.symbols(&sh));
      auto strtab = take(elf.getStringTableForSymtab(sh, sections));
      if (!syms || !strtab)
        return false;
      for (const Sym &sym : syms->drop_front(syms->empty() ? 0 : 1))
        fn(sym, *strtab);
      return !syms->empty();
    }
    return false;
  }

  template <typename Rel>
  void relocatedNames(ArrayRef<Rel> rels, const Shdr &sh) {
    const auto &elf = obj.getELFFile();
    if (sh.sh_link >= sections.size())
      return;
    const Shdr &symtab = sections[sh.sh_link];
    auto syms = take(elf.symbols(&symtab));
    auto strtab = take(elf.getStringTableForSymtab(symtab, sections));
    if (!syms || !strtab)
      return;
    for (const Rel &r : rels) {
      uint32_t idx = r.getSymbol(false);
      if (idx == 0 || idx >= syms->size())
        continue;
      if (auto name = take((*syms)[idx].getName(*strtab))) {
        m.dynRelocated.insert(name->str());
        m.dynRelocated.insert(demangled(*name));
      }
    }
  }

  // A defined function's name, or nullopt (the toolchain's own too).
  std::optional<std::string> functionName(const Sym &sym, StringRef strtab) {
    uint8_t type = sym.getType();
    if ((type != ELF::STT_FUNC && type != ELF::STT_GNU_IFUNC) ||
        sym.st_shndx == ELF::SHN_UNDEF)
      return std::nullopt;
    auto name = take(sym.getName(strtab));
    if (!name || name->empty() || isToolchainFunction(*name))
      return std::nullopt;
    return name->str();
  }

  void dynamicSymbols() {
    forEachSymbol(ELF::SHT_DYNSYM, [&](const Sym &sym, StringRef strtab) {
      if (sym.getBinding() == ELF::STB_LOCAL)
        return;
      if (auto f = functionName(sym, strtab)) {
        m.exportedFuncs.insert(*f);
        if (sym.getVisibility() == ELF::STV_DEFAULT)
          m.interposableFuncs.insert(*f);
      }
      if (auto s = stateSymbol(sym, strtab)) {
        // Both spellings: link records hold demangled names.
        m.exportedState.insert(s->first);
        m.exportedState.insert(demangled(s->first));
      }
    });
    const auto &elf = obj.getELFFile();
    for (const Shdr &sh : sections) {
      if (!(sh.sh_flags & ELF::SHF_ALLOC))
        continue;
      if (sh.sh_type == ELF::SHT_RELA) {
        if (auto rels = take(elf.relas(sh)))
          relocatedNames(*rels, sh);
      } else if (sh.sh_type == ELF::SHT_REL) {
        if (auto rels = take(elf.rels(sh)))
          relocatedNames(*rels, sh);
      }
    }
  }

  void staticSymbols() {
    std::string file; // the STT_FILE that precedes a run of locals
    m.hasSymbolTable =
        forEachSymbol(ELF::SHT_SYMTAB, [&](const Sym &sym, StringRef strtab) {
          if (sym.getType() == ELF::STT_FILE) {
            auto name = take(sym.getName(strtab));
            file = name ? name->str() : "";
            return;
          }
          if (auto f = functionName(sym, strtab)) {
            if (sym.getBinding() != ELF::STB_LOCAL ||
                !isToolchainFile(fileStemOf(file)))
              m.definedFuncs.insert(*f);
            return;
          }
          auto s = stateSymbol(sym, strtab);
          if (!s)
            return;
          StateDef d;
          d.name = s->first;
          d.display = demangled(d.name);
          d.kind = s->second;
          ElfSymbolFacts f{sym.getBinding(), sym.getVisibility(), true};
          if (f.binding == ELF::STB_LOCAL) {
            d.fileStem = fileStemOf(file);
            if (isToolchainFile(d.fileStem))
              return;
          }
          judgeElf(m, d.name, f, d);
          m.defs.push_back(std::move(d));
        });
  }

  void exportsOnly() {
    std::set<std::string> done;
    forEachSymbol(ELF::SHT_DYNSYM, [&](const Sym &sym, StringRef strtab) {
      auto s = stateSymbol(sym, strtab);
      if (!s || sym.getBinding() == ELF::STB_LOCAL ||
          !done.insert(s->first).second)
        return;
      StateDef d;
      d.name = s->first;
      d.display = demangled(d.name);
      d.kind = s->second;
      judgeElf(m, d.name, {}, d);
      m.defs.push_back(std::move(d));
    });
  }

  void read() {
    const auto &hdr = obj.getELFFile().getHeader();
    m.format = "ELF";
    m.machine = Triple::getArchTypeName(obj.getArch()).str() +
                (ELFT::Is64Bits ? "/64" : "/32");
    m.executable = hdr.e_type == ELF::ET_EXEC;
    if (auto secs = take(obj.getELFFile().sections()))
      sections = *secs;
    dynamicSection();
    dynamicSymbols();
    staticSymbols();
    if (!m.hasSymbolTable) {
      m.definedFuncs = m.exportedFuncs;
      exportsOnly();
      debugLink();
    }
  }

  // What leads a stripped module to its separate debug file: its build-id
  // and its .gnu_debuglink (file name, CRC-32 of the debug file).
  void debugLink() {
    StringRef data = obj.getData();
    m.buildId = moduleBuildId(std::string_view(data.data(), data.size()));
    const auto &elf = obj.getELFFile();
    for (const Shdr &sh : sections) {
      auto name = take(elf.getSectionName(sh));
      if (!name || *name != ".gnu_debuglink")
        continue;
      auto bytes = take(elf.getSectionContents(sh));
      if (!bytes)
        return;
      StringRef c(reinterpret_cast<const char *>(bytes->data()), bytes->size());
      size_t nul = c.find('\0');
      size_t crcAt = (nul + 4) & ~size_t(3);
      if (nul == StringRef::npos || nul == 0 || crcAt + 4 > c.size())
        return;
      m.debugLinkName = c.substr(0, nul).str();
      m.debugLinkCrc =
          support::endian::read32<ELFT::Endianness>(bytes->data() + crcAt);
      return;
    }
  }

  // The build-id of a debug file, from its note sections (objcopy
  // --only-keep-debug keeps them; its segments may not point at them).
  std::string sectionBuildId() {
    const auto &elf = obj.getELFFile();
    for (const Shdr &sh : sections) {
      if (sh.sh_type != ELF::SHT_NOTE)
        continue;
      Error err = Error::success();
      for (const auto &note : elf.notes(sh, err))
        if (note.getType() == ELF::NT_GNU_BUILD_ID && note.getName() == "GNU") {
          ArrayRef<uint8_t> desc = note.getDesc(sh.sh_addralign);
          static constexpr char kDigits[] = "0123456789abcdef";
          std::string id = "elf-build-id:";
          for (uint8_t b : desc) {
            id += kDigits[b >> 4];
            id += kDigits[b & 15];
          }
          consumeError(std::move(err));
          return id;
        }
      consumeError(std::move(err));
    }
    return "";
  }

  // Reads the symbol table of `debug`, the module's debug file, as the
  // module's own: definitions, functions and file-local state, judged by
  // the module's exports (already read into `m`).
  void symbolsFromDebugFile() {
    if (auto secs = take(obj.getELFFile().sections()))
      sections = *secs;
    m.defs.clear();
    m.definedFuncs.clear();
    staticSymbols();
  }
};

template <class ELFT>
void readElfAs(const object::ObjectFile &o, ModuleInfo &m) {
  ElfReader<ELFT>{static_cast<const object::ELFObjectFile<ELFT> &>(o), m, {}}
      .read();
}

// The debug file at `path` if it is `m`'s: same build-id where the module
// has one, else the CRC-32 its .gnu_debuglink names; nullopt, with why not.
bool readDebugFileFor(ModuleInfo &m, const std::string &path,
                      std::string *why) {
  std::unique_ptr<MemoryBuffer> buf = readModuleFile(path, why);
  if (!buf)
    return false;
  auto bin = object::createBinary(buf->getMemBufferRef());
  if (!bin) {
    *why = path + ": " + errorText(bin.takeError());
    return false;
  }
  bool ok = false;
  auto use = [&]<class ELFT>(const object::ELFObjectFile<ELFT> &o) {
    ElfReader<ELFT> debug{o, m, {}};
    if (auto secs = debug.take(o.getELFFile().sections()))
      debug.sections = *secs;
    if (!m.buildId.empty()) {
      std::string id = debug.sectionBuildId();
      if (id != m.buildId) {
        *why = path + ": another module's debug file (build-id " +
               (id.empty() ? "none" : id.substr(id.find(':') + 1)) +
               ", the module's " + m.buildId.substr(m.buildId.find(':') + 1) +
               ")";
        return;
      }
    } else if (crc32(arrayRefFromStringRef(buf->getBuffer())) !=
               m.debugLinkCrc) {
      *why = path + ": its CRC-32 is not the one the module's "
                    ".gnu_debuglink names";
      return;
    }
    debug.symbolsFromDebugFile();
    ok = m.hasSymbolTable;
    if (!ok)
      *why = path + ": no symbol table";
  };
  if (auto *o = dyn_cast<object::ELF64LEObjectFile>(bin->get()))
    use(*o);
  else if (auto *o = dyn_cast<object::ELF32LEObjectFile>(bin->get()))
    use(*o);
  else if (auto *o = dyn_cast<object::ELF64BEObjectFile>(bin->get()))
    use(*o);
  else if (auto *o = dyn_cast<object::ELF32BEObjectFile>(bin->get()))
    use(*o);
  else
    *why = path + ": not an ELF file";
  return ok;
}

} // namespace

void readElf(const object::ELFObjectFileBase &e, ModuleInfo &m) {
  if (auto *o = dyn_cast<object::ELF64LEObjectFile>(&e))
    readElfAs<object::ELF64LE>(*o, m);
  else if (auto *o = dyn_cast<object::ELF32LEObjectFile>(&e))
    readElfAs<object::ELF32LE>(*o, m);
  else if (auto *o = dyn_cast<object::ELF64BEObjectFile>(&e))
    readElfAs<object::ELF64BE>(*o, m);
  else if (auto *o = dyn_cast<object::ELF32BEObjectFile>(&e))
    readElfAs<object::ELF32BE>(*o, m);
}

void judgeRecordedElf(const ModuleInfo &m, const std::string &name, bool local,
                      StateDef &d) {
  judgeElf(
      m, name,
      ElfSymbolFacts{local ? uint8_t(ELF::STB_LOCAL) : uint8_t(ELF::STB_GLOBAL),
                     ELF::STV_DEFAULT, false},
      d);
}

std::string useSeparateDebugFile(ModuleInfo &m,
                                 const std::vector<std::string> &searchDirs,
                                 std::string *mismatch) {
  if (m.format != "ELF" || m.hasSymbolTable ||
      (m.buildId.empty() && m.debugLinkName.empty()))
    return "";
  std::vector<std::string> candidates;
  std::string dir = m.path.substr(0, m.path.find_last_of('/') + 1);
  std::vector<std::string> debugDirs = {"/usr/lib/debug"};
  for (const std::string &d : searchDirs)
    debugDirs.push_back(d);
  if (!m.buildId.empty()) {
    std::string hex = m.buildId.substr(m.buildId.find(':') + 1);
    if (hex.size() > 2) {
      std::string rel =
          ".build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
      for (const std::string &d : debugDirs)
        candidates.push_back(d + "/" + rel);
      candidates.push_back((dir.empty() ? "./" : dir) + rel);
      // debuginfod's client cache.
      const char *cache = std::getenv("DEBUGINFOD_CACHE_PATH");
      const char *xdg = std::getenv("XDG_CACHE_HOME");
      const char *home = std::getenv("HOME");
      std::string root = cache && *cache ? cache
                         : xdg && *xdg ? std::string(xdg) + "/debuginfod_client"
                         : home && *home
                             ? std::string(home) + "/.cache/debuginfod_client"
                             : "";
      if (!root.empty())
        candidates.push_back(root + "/" + hex + "/debuginfo");
    }
  }
  if (!m.debugLinkName.empty() &&
      m.debugLinkName.find('/') == std::string::npos) {
    candidates.push_back((dir.empty() ? "./" : dir) + m.debugLinkName);
    candidates.push_back((dir.empty() ? "./" : dir) + ".debug/" +
                         m.debugLinkName);
    for (const std::string &d : debugDirs)
      candidates.push_back(d + "/" +
                           (dir.starts_with("/") ? dir.substr(1) : dir) +
                           m.debugLinkName);
    for (const std::string &d : searchDirs)
      candidates.push_back(d + "/" + m.debugLinkName);
  }
  for (const std::string &c : candidates) {
    if (c == m.path || !isRegularFile(c))
      continue;
    ModuleInfo trial = m;
    std::string why;
    if (readDebugFileFor(trial, c, &why)) {
      m = std::move(trial);
      return c;
    }
    if (mismatch && mismatch->empty())
      *mismatch = why;
  }
  return "";
}

} // namespace linkd::audit
