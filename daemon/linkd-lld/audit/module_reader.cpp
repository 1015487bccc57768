// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/audit/module_reader.h"

#include "audit/module_id.h"

#include "util/files.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MachO.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Object/COFF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/MachO.h"
#include "llvm/Object/MachOUniversal.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/TargetParser/Triple.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd::audit {

namespace {

using namespace llvm;

std::string errorText(Error e) { return toString(std::move(e)); }

std::string demangled(std::string_view name) {
  return llvm::demangle(std::string(name));
}

// Names of the C runtime's and the linker's own state, which every module
// has a copy of by design (seen only when a symbol table lists them).
bool isToolchainName(std::string_view n) {
  static constexpr std::string_view kExact[] = {"__dso_handle",
                                                "__TMC_END__",
                                                "__stack_chk_guard",
                                                "_IO_stdin_used",
                                                "__data_start",
                                                "data_start",
                                                "__bss_start",
                                                "_edata",
                                                "_end",
                                                "_dowildcard",
                                                "_newmode",
                                                "_fmode",
                                                "_commode",
                                                "__security_cookie",
                                                "__security_cookie_complement",
                                                "__ImageBase",
                                                "__globallocalestatus",
                                                "_charmax",
                                                "__proc_attached",
                                                "atexit_table",
                                                "__onexitbegin",
                                                "__onexitend",
                                                "_tls_index",
                                                "_tls_used",
                                                "mingw_app_type",
                                                "__imp___initenv",
                                                "initialized",
                                                "__CTOR_LIST__",
                                                "__DTOR_LIST__",
                                                "__dyn_tls_init_callback",
                                                "_CRT_MT",
                                                "__xl_a",
                                                "__xl_z",
                                                "__xl_c",
                                                "__xl_d",
                                                "_MINGW_INSTALL_DEBUG_MATHERR",
                                                "__mingw_module_is_dll",
                                                "__native_startup_state",
                                                "__native_startup_lock",
                                                "__native_dllmain_reason",
                                                "__native_vcclrit_reason",
                                                "__dll__",
                                                "managedapp",
                                                "mainret",
                                                "has_cctor",
                                                "__mingw_app_type",
                                                "__mingw_initltsdrot_force",
                                                "__mingw_initltsdyn_force",
                                                "__mingw_initltssuo_force",
                                                "_gnu_exception_handler",
                                                "__mingw_winmain_hInstance",
                                                "_tls_start",
                                                "_tls_end",
                                                "key_dtor_list",
                                                "maxSections",
                                                "the_secs",
                                                "__cpu_features_init",
                                                "__mingw_oldexcpt_handler"};
  for (std::string_view e : kExact)
    if (n == e)
      return true;
  for (std::string_view p :
       {"completed.", "__mingw", "_CRT_", "__native_", "__xi_", "__xc_",
        "__xp_", "__xt_", "__tls_", "__dyn_tls", "__imp_", ".refptr.",
        "__RUNTIME_PSEUDO", "__rt_psrelocs", "__bss_", "__data_", "was_init.",
        "__iob", "__lconv", "_head_lib", "__libc_csu", "object.", "dtor_idx.",
        // GNU ld's PE images: TLS and CRT section
        // bounds, image layout symbols.
        "___tls_", "___crt_", "__end__", "__image_base__", "__major_",
        "__minor_", "__size_of_", "__subsystem__", "__dll_characteristics__",
        "__file_alignment__", "__section_alignment__", "__loader_flags__",
        "_head_", "__tls_used", "_tls_"})
    if (n.starts_with(p))
      return true;
  // GCC's numbered function-local statics of the CRT (crtstuff's `p.0`,
  // `completed.1`): C runtime code, in every module.
  for (std::string_view p : {"p.", "completed.", "dtor_idx.", "__EH_FRAME_"})
    if (n.starts_with(p) && n.size() > p.size() &&
        n.find_first_not_of("0123456789", p.size()) == std::string_view::npos)
      return true;
  return false;
}

// Functions of the C runtime's startup files every module has (crti.o's
// _init, crtstuff's helpers): never a runtime's accessor.
bool isToolchainFunction(std::string_view n) {
  for (std::string_view e :
       {"_init", "_fini", "_start", "main", "deregister_tm_clones",
        "register_tm_clones", "__do_global_dtors_aux", "frame_dummy",
        "_dl_relocate_static_pie", "__libc_csu_init", "__libc_csu_fini"})
    if (n == e)
      return true;
  return n.starts_with("__x86.get_pc_thunk.");
}

// Source files of the MinGW/GCC C runtime, whose file-local state a PE or
// ELF symbol table lists for every module.
bool isToolchainFile(std::string_view stem) {
  static constexpr std::string_view kStems[] = {"crtexe",
                                                "crtdll",
                                                "tlssup",
                                                "tlsthrd",
                                                "pseudo-reloc",
                                                "cinitexe",
                                                "gccmain",
                                                "natstart",
                                                "wildcard",
                                                "dllentry",
                                                "atonexit",
                                                "mingw_helpers",
                                                "merr",
                                                "xtxtmode",
                                                "charmax",
                                                "dllargv",
                                                "gs_support",
                                                "tlsmcrt",
                                                "pesect",
                                                "_newmode",
                                                "xncommod",
                                                "cpu_features",
                                                "crtstuff",
                                                "crtbegin",
                                                "crtend",
                                                "cxa_atexit",
                                                "mingw_custom",
                                                "usermatherr",
                                                "mingw_matherr",
                                                "ucrtbase_compat",
                                                "txtmode",
                                                "CRT_fp10",
                                                "CRT_glob",
                                                "dll_dependency",
                                                "onexit_table",
                                                "mingw_pformat",
                                                "crt_handler",
                                                "acrt_iob_func",
                                                "init",
                                                "emutls",
                                                "lib64_libmingw32_a-crtexe"};
  for (std::string_view s : kStems)
    if (stem == s)
      return true;
  return false;
}

bool isNotStateSection(StringRef s) {
  return s.starts_with(".data.rel.ro") || s.starts_with(".got") ||
         s == ".dynamic" || s.starts_with(".init_array") ||
         s.starts_with(".fini_array") || s.starts_with(".preinit_array") ||
         s == ".tm_clone_table" || s == ".jcr" || s.starts_with(".ctors") ||
         s.starts_with(".dtors") || s == ".idata" || s.starts_with(".CRT");
}

// A NUL-terminated string at `off` in [base, base+size), or nullopt.
std::optional<std::string> boundedString(const char *base, uint64_t size,
                                         uint64_t off) {
  if (!base || off >= size)
    return std::nullopt;
  size_t len = strnlen(base + off, size - off);
  if (len == size - off)
    return std::nullopt;
  return std::string(base + off, len);
}

void splitPaths(const std::string &list, std::vector<std::string> &out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t colon = list.find(':', start);
    std::string p =
        list.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!p.empty())
      out.push_back(p);
    if (colon == std::string::npos)
      break;
    start = colon + 1;
  }
}

// --- ELF -------------------------------------------------------------------

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

// --- PE --------------------------------------------------------------------

struct PeReader {
  const object::COFFObjectFile &obj;
  ModuleInfo &m;

  static char sectionKind(const object::coff_section *s, StringRef name) {
    uint32_t c = s->Characteristics;
    if (!(c & COFF::IMAGE_SCN_MEM_WRITE) || (c & COFF::IMAGE_SCN_MEM_EXECUTE) ||
        (c & COFF::IMAGE_SCN_CNT_CODE))
      return 0;
    if (name == ".tls" || name.starts_with(".tls$"))
      return 'T';
    if (name == ".idata" || name.starts_with(".CRT") || name == ".reloc")
      return 0;
    return (c & COFF::IMAGE_SCN_CNT_UNINITIALIZED_DATA) ? 'B' : 'D';
  }

  // The kind of state at `rva`, or 0.
  char kindAt(uint32_t rva) {
    for (const object::SectionRef &sr : obj.sections()) {
      const object::coff_section *s = obj.getCOFFSection(sr);
      uint32_t size = std::max(s->VirtualSize, s->SizeOfRawData);
      if (rva >= s->VirtualAddress && rva - s->VirtualAddress < size) {
        auto name = obj.getSectionName(s);
        if (!name) {
          consumeError(name.takeError());
          return 0;
        }
        return sectionKind(s, *name);
      }
    }
    return 0;
  }

  static std::string why(const ModuleInfo &m, const char *from) {
    std::string w =
        m.executable ? "the program's own copy" : "a DLL's own copy";
    w += ": a PE module shares a definition only by importing it";
    if (from)
      w += std::string(" (") + from + ")";
    return w;
  }

  // `need` bytes at `rva`, inside the file, or nullptr. LLVM's own name
  // accessors (ImportDirectoryEntryRef::getName, export names) read a
  // string without a bound, off the end of a truncated file (found by
  // tests/fuzz/audit_fuzzer.cpp).
  const char *rvaPointer(uint32_t rva, uint64_t need) {
    uintptr_t p = 0;
    if (Error e = obj.getRvaPtr(rva, p)) {
      consumeError(std::move(e));
      return nullptr;
    }
    StringRef data = obj.getData();
    auto b = reinterpret_cast<uintptr_t>(data.begin());
    auto e = reinterpret_cast<uintptr_t>(data.end());
    if (p < b || p > e || e - p < need)
      return nullptr;
    return reinterpret_cast<const char *>(p);
  }

  std::optional<std::string> rvaString(uint32_t rva) {
    const char *p = rvaPointer(rva, 1);
    if (!p)
      return std::nullopt;
    StringRef data = obj.getData();
    return boundedString(p, static_cast<uint64_t>(data.end() - p), 0);
  }

  template <typename T> bool inFile(const T *p) {
    StringRef data = obj.getData();
    auto b = reinterpret_cast<uintptr_t>(data.begin());
    auto e = reinterpret_cast<uintptr_t>(data.end());
    auto at = reinterpret_cast<uintptr_t>(p);
    return p && at >= b && at <= e && e - at >= sizeof(T);
  }

  template <typename T> T readAt(const char *p, size_t i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    return v; // PE images are little-endian; so is every host we build for
  }

  // The import tables read by hand, bounded by the data directory and the
  // file: LLVM's iterators walk a delay-import table they failed to find
  // (null + i) for as many entries as its directory claims.
  template <typename Entry, typename NameOf>
  void importTable(uint32_t index, NameOf nameOf) {
    const object::data_directory *dir = obj.getDataDirectory(index);
    if (!dir || dir->RelativeVirtualAddress == 0 || dir->Size < sizeof(Entry))
      return;
    const char *table = rvaPointer(dir->RelativeVirtualAddress, dir->Size);
    if (!table)
      return;
    for (uint32_t i = 0; i < dir->Size / sizeof(Entry); ++i) {
      Entry e;
      std::memcpy(&e, table + i * sizeof(Entry), sizeof(Entry));
      uint32_t nameRva = nameOf(e);
      if (nameRva == 0)
        break; // the null entry ends the table
      if (auto name = rvaString(nameRva))
        m.needed.push_back(*name);
    }
  }

  void imports() {
    importTable<object::coff_import_directory_table_entry>(
        COFF::IMPORT_TABLE,
        [](const auto &e) -> uint32_t { return e.NameRVA; });
    importTable<object::delay_import_directory_table_entry>(
        COFF::DELAY_IMPORT_DESCRIPTOR,
        [](const auto &e) -> uint32_t { return e.Name; });
  }

  // The export directory read by hand, every table bounded by the file.
  void exports() {
    const object::export_directory_table_entry *t = obj.getExportTable();
    const object::data_directory *dir =
        obj.getDataDirectory(COFF::EXPORT_TABLE);
    if (!t || !dir)
      return;
    uint32_t names = t->NumberOfNamePointers;
    uint32_t entries = t->AddressTableEntries;
    const char *namePtrs = rvaPointer(t->NamePointerRVA, 4ull * names);
    const char *ordinals = rvaPointer(t->OrdinalTableRVA, 2ull * names);
    const char *addresses =
        rvaPointer(t->ExportAddressTableRVA, 4ull * entries);
    if (!namePtrs || !ordinals || !addresses)
      return;
    for (uint32_t i = 0; i < names; ++i) {
      uint16_t ord = readAt<uint16_t>(ordinals, i);
      if (ord >= entries)
        continue;
      uint32_t rva = readAt<uint32_t>(addresses, ord);
      bool forwarder = rva >= dir->RelativeVirtualAddress &&
                       rva - dir->RelativeVirtualAddress < dir->Size;
      if (forwarder || !kindAt(rva))
        continue;
      if (auto name = rvaString(readAt<uint32_t>(namePtrs, i)))
        if (!name->empty())
          m.exportedState.insert(*name);
    }
  }

  void symbols() {
    if (!obj.getSymbolTable() || obj.getNumberOfSymbols() == 0)
      return;
    m.hasSymbolTable = true;
    std::string file;
    for (const object::SymbolRef &sr : obj.symbols()) {
      object::COFFSymbolRef sym = obj.getCOFFSymbol(sr);
      if (sym.isFileRecord()) {
        if (std::optional<std::string> name = coffFileRecordName(obj, sym))
          file = std::move(*name);
        continue;
      }
      if (sym.isSectionDefinition() || sym.getSectionNumber() <= 0)
        continue;
      bool external = sym.isExternal();
      if (!external && sym.getStorageClass() != COFF::IMAGE_SYM_CLASS_STATIC)
        continue;
      auto sec = obj.getSection(sym.getSectionNumber());
      auto name = obj.getSymbolName(sym);
      if (!sec || !name) {
        if (!sec)
          consumeError(sec.takeError());
        if (!name)
          consumeError(name.takeError());
        continue;
      }
      auto secName = obj.getSectionName(*sec);
      if (!secName) {
        consumeError(secName.takeError());
        continue;
      }
      char kind = sectionKind(*sec, *secName);
      if (!kind || name->empty() || name->starts_with(".") ||
          name->starts_with("$") || isToolchainName(*name))
        continue;
      StateDef d;
      d.name = name->str();
      d.display = demangled(d.name);
      d.kind = kind;
      if (!external) {
        d.fileStem = fileStemOf(file);
        if (isToolchainFile(d.fileStem))
          continue;
      }
      d.why = why(m, nullptr);
      m.defs.push_back(std::move(d));
    }
  }

  void exportsOnly() {
    for (const std::string &name : m.exportedState) {
      StateDef d;
      d.name = name;
      d.display = demangled(name);
      d.why = why(m, nullptr) + " (seen in its exports)";
      m.defs.push_back(std::move(d));
    }
  }

  void read() {
    m.format = "PE";
    m.machine = Triple::getArchTypeName(obj.getArch()).str();
    m.executable = !(obj.getCharacteristics() & COFF::IMAGE_FILE_DLL);
    StringRef data = obj.getData();
    m.buildId = moduleBuildId(std::string_view(data.data(), data.size()));
    const codeview::DebugInfo *cv = nullptr;
    StringRef pdb;
    if (Error e = obj.getDebugPDBInfo(cv, pdb))
      consumeError(std::move(e));
    else if (cv)
      m.pdbPath = pdb.str();
    imports();
    exports();
    symbols();
    if (!m.hasSymbolTable)
      exportsOnly();
  }
};

// --- Mach-O ----------------------------------------------------------------

struct MachOReader {
  const object::MachOObjectFile &obj;
  ModuleInfo &m;

  std::optional<std::string>
  commandString(const object::MachOObjectFile::LoadCommandInfo &lc,
                uint32_t off) {
    return boundedString(lc.Ptr, lc.C.cmdsize, off);
  }

  void loadCommands() {
    for (const auto &lc : obj.load_commands()) {
      switch (lc.C.cmd) {
      case MachO::LC_LOAD_DYLIB:
      case MachO::LC_LOAD_WEAK_DYLIB:
      case MachO::LC_REEXPORT_DYLIB:
      case MachO::LC_LAZY_LOAD_DYLIB:
      case MachO::LC_LOAD_UPWARD_DYLIB:
        if (auto s =
                commandString(lc, obj.getDylibIDLoadCommand(lc).dylib.name))
          m.needed.push_back(*s);
        break;
      case MachO::LC_ID_DYLIB:
        if (auto s =
                commandString(lc, obj.getDylibIDLoadCommand(lc).dylib.name))
          m.soname = *s;
        break;
      case MachO::LC_RPATH:
        if (auto s = commandString(lc, obj.getRpathCommand(lc).path))
          m.rpath.push_back(*s);
        break;
      default:
        break;
      }
    }
  }

  static char sectionKind(StringRef seg, StringRef sect) {
    if (seg != "__DATA" && seg != "__DATA_DIRTY")
      return 0;
    if (sect == "__thread_vars")
      return 'T';
    if (sect == "__bss" || sect == "__common")
      return 'B';
    if (sect == "__data")
      return 'D';
    return 0;
  }

  void symbols() {
    bool twoLevel =
        (obj.is64Bit() ? obj.getHeader64().flags : obj.getHeader().flags) &
        MachO::MH_TWOLEVEL;
    for (const object::SymbolRef &sr : obj.symbols()) {
      m.hasSymbolTable = true;
      object::DataRefImpl dr = sr.getRawDataRefImpl();
      struct {
        uint8_t n_type;
        uint16_t n_desc;
      } nl;
      if (obj.is64Bit()) {
        MachO::nlist_64 e = obj.getSymbol64TableEntry(dr);
        nl = {e.n_type, e.n_desc};
      } else {
        MachO::nlist e = obj.getSymbolTableEntry(dr);
        nl = {e.n_type, static_cast<uint16_t>(e.n_desc)};
      }
      if ((nl.n_type & MachO::N_STAB) ||
          (nl.n_type & MachO::N_TYPE) != MachO::N_SECT)
        continue;
      auto sec = sr.getSection();
      if (!sec) {
        consumeError(sec.takeError());
        continue;
      }
      if (*sec == obj.section_end())
        continue;
      auto sectName = (*sec)->getName();
      if (!sectName) {
        consumeError(sectName.takeError());
        continue;
      }
      StringRef seg =
          obj.getSectionFinalSegmentName((*sec)->getRawDataRefImpl());
      char kind = sectionKind(seg, *sectName);
      auto name = sr.getName();
      if (!name) {
        consumeError(name.takeError());
        continue;
      }
      if (!kind || name->empty() || name->contains("$tlv$"))
        continue;
      StringRef bare = name->starts_with("_") ? name->drop_front() : *name;
      if (isToolchainName(bare))
        continue;
      StateDef d;
      d.name = name->str();
      d.display = demangled(bare);
      d.kind = kind;
      bool ext = nl.n_type & MachO::N_EXT, pext = nl.n_type & MachO::N_PEXT;
      if (!ext) {
        d.why = "local symbol: this image's own copy";
      } else if (pext) {
        d.why = "private extern (hidden): this image's own copy";
      } else if (nl.n_desc & MachO::N_WEAK_DEF) {
        d.shared = true;
        d.why = "exported weak definition: dyld coalesces them across images";
      } else if (twoLevel) {
        d.why = "two-level namespace: each image's references are bound to "
                "its own copy";
      } else {
        d.shared = true;
        d.why = "flat namespace export: dyld binds every image to one copy";
      }
      if (ext && !pext)
        m.exportedState.insert(d.name);
      m.defs.push_back(std::move(d));
    }
  }

  void read() {
    m.format = "Mach-O";
    m.machine = Triple::getArchTypeName(obj.getArch()).str();
    uint32_t filetype =
        obj.is64Bit() ? obj.getHeader64().filetype : obj.getHeader().filetype;
    m.executable = filetype == MachO::MH_EXECUTE;
    loadCommands();
    symbols();
  }
};

template <class ELFT>
void readElfAs(const object::ObjectFile &o, ModuleInfo &m) {
  ElfReader<ELFT>{static_cast<const object::ELFObjectFile<ELFT> &>(o), m, {}}
      .read();
}

} // namespace

namespace {

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

bool isRegularFile(const std::string &path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::optional<std::string>
coffFileRecordName(const object::COFFObjectFile &obj,
                   const object::COFFSymbolRef &sym) {
  if (!sym.isFileRecord() ||
      obj.getSymbolIndex(sym) + 1ull + sym.getNumberOfAuxSymbols() >
          obj.getNumberOfSymbols())
    return std::nullopt;
  ArrayRef<uint8_t> aux = obj.getSymbolAuxData(sym);
  return std::string(
      reinterpret_cast<const char *>(aux.data()),
      strnlen(reinterpret_cast<const char *>(aux.data()), aux.size()));
}

std::unique_ptr<MemoryBuffer> readModuleFile(const std::string &path,
                                             std::string *error) {
  uint64_t size = 0;
  int fd = openRegularFile(path, kMaxModuleBytes, size, error);
  if (fd < 0)
    return nullptr;
  auto buf = MemoryBuffer::getOpenFile(fd, path, size,
                                       /*RequiresNullTerminator=*/false);
  close(fd);
  if (!buf) {
    if (error)
      *error = path + ": " + buf.getError().message();
    return nullptr;
  }
  return std::move(*buf);
}

std::optional<ModuleInfo> readModule(const std::string &path,
                                     std::string *error) {
  std::unique_ptr<MemoryBuffer> buf = readModuleFile(path, error);
  if (!buf)
    return std::nullopt;
  return readModuleBytes(path, buf->getBuffer(), error);
}

std::optional<ModuleInfo> readModuleBytes(const std::string &path,
                                          std::string_view bytes,
                                          std::string *error) {
  auto fail = [&](const std::string &why) -> std::optional<ModuleInfo> {
    if (error)
      *error = path + ": " + why;
    return std::nullopt;
  };
  auto bin = object::createBinary(
      MemoryBufferRef(StringRef(bytes.data(), bytes.size()), path));
  if (!bin)
    return fail(errorText(bin.takeError()));
  ModuleInfo m;
  m.path = path;
  object::Binary *b = bin->get();
  if (auto *e = dyn_cast<object::ELFObjectFileBase>(b)) {
    if (e->getEType() != ELF::ET_EXEC && e->getEType() != ELF::ET_DYN)
      return fail("not an executable or shared object (ELF type " +
                  std::to_string(e->getEType()) + ")");
    if (auto *o = dyn_cast<object::ELF64LEObjectFile>(b))
      readElfAs<object::ELF64LE>(*o, m);
    else if (auto *o = dyn_cast<object::ELF32LEObjectFile>(b))
      readElfAs<object::ELF32LE>(*o, m);
    else if (auto *o = dyn_cast<object::ELF64BEObjectFile>(b))
      readElfAs<object::ELF64BE>(*o, m);
    else if (auto *o = dyn_cast<object::ELF32BEObjectFile>(b))
      readElfAs<object::ELF32BE>(*o, m);
    return m;
  }
  if (auto *c = dyn_cast<object::COFFObjectFile>(b)) {
    if (!c->getDOSHeader())
      return fail("a COFF object, not a PE image (audit linked modules)");
    PeReader{*c, m}.read();
    return m;
  }
  if (auto *mo = dyn_cast<object::MachOObjectFile>(b)) {
    uint32_t ft =
        mo->is64Bit() ? mo->getHeader64().filetype : mo->getHeader().filetype;
    if (ft != MachO::MH_EXECUTE && ft != MachO::MH_DYLIB &&
        ft != MachO::MH_BUNDLE)
      return fail("not a Mach-O executable, dylib or bundle");
    MachOReader{*mo, m}.read();
    return m;
  }
  if (isa<object::MachOUniversalBinary>(b))
    return fail("a universal (fat) Mach-O file: extract the slice to audit "
                "(lipo -thin)");
  return fail("not an ELF, PE or Mach-O module");
}

std::string applyRecord(ModuleInfo &m,
                        const std::vector<RecordedSymbol> &record,
                        const char *from) {
  m.defs.clear();
  // The user's inputs that wrote into writable sections, and how much.
  uint64_t written = 0;
  std::string writer;
  size_t writers = 0;
  for (const RecordedSymbol &r : record) {
    if (r.kind == 'W') {
      if (!isToolchainInput(r.input)) {
        uint64_t n = std::strtoull(r.name.c_str(), nullptr, 10);
        if (n > 0 && writers++ == 0)
          writer = r.input;
        written += n;
      }
      continue;
    }
    if (isToolchainInput(r.input) || isToolchainName(r.name))
      continue;
    StateDef d;
    // LLD's map demangles; MSVC's demangling of a variable carries its type
    // ("struct Q * ns::queue"), which a PDB's name does not.
    d.name = m.format == "PE" ? plainVariableName(r.name) : r.name;
    d.display = d.name;
    d.kind = r.kind;
    // A global is one entity by its name alone; a local pairs with copies
    // from a source of the same name (its object's, else its input's).
    if (r.binding != 'g')
      d.fileStem = recordedStemOf(r.source.empty() ? r.input : r.source);
    if (m.format == "ELF")
      judgeElf(m, r.name,
               ElfSymbolFacts{r.binding == 'l' ? uint8_t(ELF::STB_LOCAL)
                                               : uint8_t(ELF::STB_GLOBAL),
                              ELF::STV_DEFAULT, false},
               d);
    else
      d.why = PeReader::why(m, from);
    if (d.shared)
      d.fileStem.clear(); // one copy for everyone: pairs by name alone
    m.defs.push_back(std::move(d));
  }
  // A record that names no state while the user's objects wrote data into
  // writable sections cannot tell "no state" from "state it did not see".
  if (m.defs.empty() && written > 0)
    return "its link record names no state, yet " + writer +
           (writers > 1
                ? " and " + std::to_string(writers - 1) + " other inputs"
                : "") +
           " put " + std::to_string(written) +
           " bytes in writable sections (state without a symbol, or not "
           "seen)";
  return "";
}

namespace {

// The first module before `before` whose exports bind `func`, or SIZE_MAX.
size_t firstExporter(const std::vector<ModuleInfo *> &mods, size_t before,
                     const std::string &func) {
  for (size_t k = 0; k < before; ++k)
    if (mods[k]->format == "ELF" && mods[k]->exportedFuncs.count(func))
      return k;
  return SIZE_MAX;
}

// The earliest module before `m` with a copy of `d` (same name, same source
// file where both know it), or SIZE_MAX.
size_t earlierCopy(const std::vector<ModuleInfo *> &mods, size_t m,
                   const StateDef &d) {
  for (size_t n = 0; n < m; ++n) {
    if (mods[n]->format != "ELF")
      continue;
    for (const StateDef &o : mods[n]->defs)
      if (o.display == d.display && (o.fileStem.empty() || d.fileStem.empty() ||
                                     o.fileStem == d.fileStem))
        return n;
  }
  return SIZE_MAX;
}

// The functions through which module `m` reaches its copy of `d`: those it
// shares with module `n` (the same objects linked into both) and its own of
// the same runtime.
std::set<std::string> accessorsOf(const ModuleInfo &m, const ModuleInfo &n,
                                  const StateDef &d) {
  std::set<std::string> out;
  std::string rt = runtimeOf(d.display);
  for (const std::string &f : m.definedFuncs)
    if (n.definedFuncs.count(f) || runtimeOf(demangled(f)) == rt)
      out.insert(f);
  return out;
}

// Why `d` of `m` is never reached, or empty: every accessor is interposable
// and an earlier module's export binds it.
std::string boundElsewhere(const std::vector<ModuleInfo *> &mods, size_t m,
                           const std::set<std::string> &accessors) {
  if (accessors.empty() || mods[m]->symbolic || mods[m]->executable)
    return {};
  std::set<size_t> binders;
  for (const std::string &f : accessors) {
    size_t k = firstExporter(mods, m, f);
    if (!mods[m]->interposableFuncs.count(f) || k == SIZE_MAX)
      return {};
    binders.insert(k);
  }
  std::string names, whose;
  size_t shown = 0;
  for (const std::string &f : accessors)
    if (shown++ < 4)
      names += std::string(names.empty() ? "" : ", ") + demangled(f);
  if (accessors.size() > 4)
    names += ", ...";
  for (size_t k : binders)
    whose += std::string(whose.empty() ? "" : ", ") + mods[k]->path + "'s";
  return "never reached: its accessors (" + names +
         ") are exported and interposable, and the loader binds them to " +
         whose;
}

} // namespace

void modelInterposition(std::vector<ModuleInfo *> &mods) {
  auto firstStateExporter = [&](const StateDef &d) {
    for (size_t k = 0; k < mods.size(); ++k)
      if (mods[k]->format == "ELF" && (mods[k]->exportedState.count(d.name) ||
                                       mods[k]->exportedState.count(d.display)))
        return k;
    return SIZE_MAX;
  };
  for (size_t m = 0; m < mods.size(); ++m) {
    if (mods[m]->format != "ELF")
      continue;
    for (StateDef &d : mods[m]->defs) {
      size_t k = firstStateExporter(d);
      // An exported copy kept for the module's own references (-Bsymbolic,
      // protected) is the one the loader binds the others to when this
      // module exports it first: one copy, not two.
      if (!d.shared && k == m && !mods[m]->executable) {
        d.shared = true;
        d.why += "; exported first in the search order, so it is also the "
                 "copy the loader binds the other modules to";
        d.fileStem.clear(); // one copy for everyone: pairs by name alone
        continue;
      }
      if (d.shared) {
        // Say whose copy the loader binds: the first module exporting it.
        if (k != SIZE_MAX)
          d.why += k == m ? " (this module's copy)"
                          : " (" + mods[k]->path + "'s copy)";
        continue;
      }
      size_t n = earlierCopy(mods, m, d);
      if (n == SIZE_MAX)
        continue;
      std::string why =
          boundElsewhere(mods, m, accessorsOf(*mods[m], *mods[n], d));
      if (!why.empty()) {
        d.interposed = true;
        d.why = why;
      }
    }
  }
}

} // namespace linkd::audit
