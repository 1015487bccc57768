// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Scanning symbols and groups out of ELF, COFF, Mach-O and bitcode (see
// symbol_scan.h). Symbols come from the generic SymbolicFile view; groups
// need each format's own structures.
#include "rewrite/symbol_scan.h"
#include "rewrite/amdgpu_metadata.h"
#include "rewrite/errors.h"

#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/COFF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/MachO.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"
#include "llvm/TargetParser/Triple.h"

#include <map>
#include <set>

namespace linkd::rewrite {

using namespace llvm;
using namespace llvm::object;

namespace {

Error wrap(const std::string &file, Error e) {
  std::string msg = toString(std::move(e));
  return fail(file, msg);
}

// A symbol whose flags or name cannot be read makes the file corrupt. The
// first one ends the scan: an ELF symbol table's size is not checked
// against the file, and skipping bad entries one by one walked millions of
// nonexistent symbols (seconds per input, found by the fuzzer).
Error scanSymbols(const ObjectFile &obj, bool coff, ScannedObject &out) {
  for (const SymbolRef &sym : obj.symbols()) {
    Expected<uint32_t> flags = sym.getFlags();
    if (!flags)
      return flags.takeError();
    Expected<StringRef> name = sym.getName();
    if (!name)
      return name.takeError();
    if (!(*flags & SymbolRef::SF_Global) ||
        (*flags & SymbolRef::SF_FormatSpecific) || name->empty())
      continue;
    bool defined = !(*flags & SymbolRef::SF_Undefined) ||
                   (*flags & SymbolRef::SF_Common) ||
                   // A COFF weak external always carries its default.
                   (coff && (*flags & SymbolRef::SF_Weak));
    out.symbols.push_back({name->str(), defined});
  }
  return Error::success();
}

// --- ELF: SHT_GROUP sections with GRP_COMDAT ---------------------------

// Section index -> names of the global symbols defined in it.
template <class ELFT>
Expected<std::multimap<uint32_t, std::string>>
globalsBySection(const ELFObjectFile<ELFT> &obj) {
  std::multimap<uint32_t, std::string> out;
  for (const ELFSymbolRef &sym : obj.symbols()) {
    auto elfSym = obj.getSymbol(sym.getRawDataRefImpl());
    if (!elfSym)
      return elfSym.takeError();
    if ((*elfSym)->getBinding() == ELF::STB_LOCAL ||
        (*elfSym)->st_shndx == ELF::SHN_UNDEF)
      continue;
    Expected<StringRef> name = sym.getName();
    if (!name)
      return name.takeError();
    out.emplace((*elfSym)->st_shndx, name->str());
  }
  return out;
}

// The group's key: its signature symbol's name, or for a signature that is
// a section symbol, the section's name (not something a rename reaches).
template <class ELFT>
Error groupKey(const ELFFile<ELFT> &f, const typename ELFT::Shdr &sec,
               ScannedGroup &group) {
  auto symtab = f.getSection(sec.sh_link);
  if (!symtab)
    return symtab.takeError();
  auto sig = f.template getEntry<typename ELFT::Sym>(**symtab, sec.sh_info);
  if (!sig)
    return sig.takeError();
  if ((*sig)->getType() == ELF::STT_SECTION) {
    auto target = f.getSection((*sig)->st_shndx);
    if (!target)
      return target.takeError();
    auto name = f.getSectionName(**target);
    if (!name)
      return name.takeError();
    group.key = name->str();
    group.keyIsSymbol = false;
    return Error::success();
  }
  auto strtab = f.getStringTableForSymtab(**symtab);
  if (!strtab)
    return strtab.takeError();
  auto name = (*sig)->getName(*strtab);
  if (!name)
    return name.takeError();
  group.key = name->str();
  return Error::success();
}

template <class ELFT>
Error scanElfGroups(const ELFObjectFile<ELFT> &obj, ScannedObject &out) {
  const ELFFile<ELFT> &f = obj.getELFFile();
  auto sections = f.sections();
  if (!sections)
    return sections.takeError();
  auto globals = globalsBySection(obj);
  if (!globals)
    return globals.takeError();
  for (const auto &sec : *sections) {
    // ObjCopy lays sections out at their alignment: a bogus sh_addralign
    // made it ask for an exabyte output buffer (found by the fuzzer). The
    // same rule as LLD's.
    if (sec.sh_addralign > UINT32_MAX ||
        (sec.sh_addralign & (sec.sh_addralign - 1)))
      return createStringError(inconvertibleErrorCode(),
                               "a section's sh_addralign (" +
                                   Twine(uint64_t(sec.sh_addralign)) +
                                   ") is not a power of 2 up to 2^32");
    if (sec.sh_type != ELF::SHT_GROUP)
      continue;
    auto words = f.template getSectionContentsAsArray<typename ELFT::Word>(sec);
    if (!words)
      return words.takeError();
    if (words->empty() || !((*words)[0] & ELF::GRP_COMDAT))
      continue;
    ScannedGroup group;
    if (Error e = groupKey(f, sec, group))
      return e;
    for (uint32_t member : words->drop_front()) {
      auto [begin, end] = globals->equal_range(member);
      for (auto it = begin; it != end; ++it)
        group.members.push_back(it->second);
    }
    out.groups.push_back(std::move(group));
  }
  return Error::success();
}

Error scanElf(const ObjectFile &obj, ScannedObject &out) {
  if (auto *o = dyn_cast<ELF64LEObjectFile>(&obj))
    return scanElfGroups(*o, out);
  if (auto *o = dyn_cast<ELF32LEObjectFile>(&obj))
    return scanElfGroups(*o, out);
  return createStringError(inconvertibleErrorCode(),
                           "big-endian ELF is not supported");
}

// --- Offload bundles: refused (docs/rewrite.md, "AMDGPU") ---------------

// Sections holding device code for offload runtimes. Their kernels are
// finished code objects, or objects a device link merges by name, named in
// the host only by the strings it registers (__hipRegisterFunction): a
// rename of the host object alone would not reach them.
constexpr StringRef kOffloadSections[] = {".hip_fatbin", ".llvm.offloading",
                                          ".nv_fatbin", "__nv_relfatbin"};

std::string bundleKind(StringRef data) {
  if (data.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
    return "a clang offload bundle (__CLANG_OFFLOAD_BUNDLE__)";
  if (data.starts_with("CCOB"))
    return "a compressed clang offload bundle (CCOB)";
  return "device code";
}

Error offloadRefusal(StringRef section, StringRef data) {
  return createStringError(
      inconvertibleErrorCode(),
      "section " + section + " holds " + bundleKind(data) +
          ", whose kernels the host names only by the strings it registers "
          "(__hipRegisterFunction/__hipRegisterVar); offload bundles are not "
          "rewritten. Rewrite the device code before it is bundled (compile "
          "it with --offload-device-only -c, or -fgpu-rdc, and rewrite those "
          "objects), or leave this object out of the rewrite");
}

Error refuseOffloadBundles(const ObjectFile &obj) {
  for (const SectionRef &sec : obj.sections()) {
    Expected<StringRef> name = sec.getName();
    if (!name) {
      consumeError(name.takeError());
      continue;
    }
    if (!is_contained(kOffloadSections, *name))
      continue;
    StringRef data;
    if (Expected<StringRef> d = sec.getContents())
      data = *d;
    else
      consumeError(d.takeError());
    return offloadRefusal(*name, data);
  }
  return Error::success();
}

// --- AMDGPU: kernels, exports and slots ----------------------------------

struct AmdgpuNames {
  std::set<std::string> kernels, managed; // C-level bases
};

AmdgpuNames amdgpuPairs(const ScannedObject &out) {
  AmdgpuNames n;
  for (const std::string &m : out.metadataSymbols)
    n.kernels.insert(std::string(amdgpuBase(m)));
  for (const ScannedSymbol &sym : out.symbols) {
    StringRef name = sym.name;
    if (!sym.defined)
      continue;
    if (name.ends_with(".kd"))
      n.kernels.insert(std::string(amdgpuBase(sym.name)));
    else if (name.ends_with(".managed"))
      n.managed.insert(std::string(amdgpuBase(sym.name)));
  }
  return n;
}

// The role of one defined global symbol (see SymbolRole).
SymbolRole amdgpuRole(const ELF64LEObjectFile &obj, const ELF64LE::Sym &sym,
                      StringRef base, const AmdgpuNames &names) {
  if (names.kernels.count(base.str()))
    return SymbolRole::Kernel;
  uint8_t vis = sym.getVisibility();
  if (vis == ELF::STV_HIDDEN || vis == ELF::STV_INTERNAL)
    return SymbolRole::Plain;
  if (names.managed.count(base.str()))
    return SymbolRole::Export;
  if (sym.getType() != ELF::STT_OBJECT)
    return SymbolRole::Export;
  if (sym.st_shndx == ELF::SHN_COMMON)
    return SymbolRole::Slot;
  auto sec = obj.getELFFile().getSection(sym.st_shndx);
  if (!sec) {
    consumeError(sec.takeError());
    return SymbolRole::Export;
  }
  return ((*sec)->sh_flags & ELF::SHF_WRITE) ? SymbolRole::Slot
                                             : SymbolRole::Export;
}

Error scanAmdgpu(const ObjectFile &file, ScannedObject &out) {
  auto *obj = dyn_cast<ELF64LEObjectFile>(&file);
  if (!obj)
    return createStringError(inconvertibleErrorCode(),
                             "an AMDGPU object that is not 64-bit "
                             "little-endian ELF");
  auto meta = amdgpuMetadataSymbols(*obj);
  if (!meta)
    return meta.takeError();
  out.metadataSymbols = std::move(*meta);
  AmdgpuNames names = amdgpuPairs(out);
  std::map<std::string, std::pair<SymbolRole, bool>> roles; // role, weak
  for (const ELFSymbolRef &ref : obj->symbols()) {
    auto sym = obj->getSymbol(ref.getRawDataRefImpl());
    if (!sym)
      return sym.takeError();
    if ((*sym)->getBinding() == ELF::STB_LOCAL ||
        (*sym)->st_shndx == ELF::SHN_UNDEF)
      continue;
    Expected<StringRef> name = ref.getName();
    if (!name)
      return name.takeError();
    StringRef base = amdgpuBase(name->split('@').first);
    roles[name->str()] = {amdgpuRole(*obj, **sym, base, names),
                          (*sym)->getBinding() == ELF::STB_WEAK};
  }
  for (ScannedSymbol &sym : out.symbols)
    if (auto it = roles.find(sym.name); it != roles.end()) {
      sym.role = it->second.first;
      sym.weak = it->second.second;
    }
  return Error::success();
}

// --- COFF: COMDAT sections, their leaders and associative sections ----

struct CoffComdat {
  int32_t root; // section number of the non-associative COMDAT
  std::string leader;
};

// ObjCopy's COFF reader walks every section's relocations through
// getRelocations(), which returns a null array with a non-zero count when
// the table lies outside the file (a SEGV found by the fuzzer).
Error checkCoffRelocations(const COFFObjectFile &obj) {
  for (const SectionRef &sec : obj.sections()) {
    ArrayRef<coff_relocation> relocs =
        obj.getRelocations(obj.getCOFFSection(sec));
    if (!relocs.empty() && !relocs.data())
      return createStringError(inconvertibleErrorCode(),
                               "section #" + Twine(sec.getIndex() + 1) +
                                   ": relocations outside the file");
  }
  return Error::success();
}

// COFFObjectFile::getString() takes a long name from the string table with
// strlen: a table whose last string is unterminated reads past the file (a
// heap overflow in the first name lookup, found by the fuzzer). The table
// follows the symbol table and starts with its own size.
Error checkCoffStringTable(const COFFObjectFile &obj) {
  using support::endian::read32le;
  StringRef data = obj.getData();
  uint64_t at = uint64_t(obj.getPointerToSymbolTable()) +
                uint64_t(obj.getRawNumberOfSymbols()) *
                    obj.getSymbolTableEntrySize();
  if (!obj.getPointerToSymbolTable())
    return Error::success(); // no symbols: no long names
  // LLVM adds these in 32 bits: a huge symbol count wrapped around and
  // put the string table inside the headers.
  if (at > data.size())
    return createStringError(inconvertibleErrorCode(),
                             "the symbol table (" +
                                 Twine(obj.getRawNumberOfSymbols()) +
                                 " symbols) runs past the file");
  if (at + 4 > data.size())
    return Error::success();
  uint32_t size = read32le(data.data() + at);
  if (size <= 4)
    return Error::success();
  if (at + size > data.size() || data[at + size - 1] != '\0')
    return createStringError(inconvertibleErrorCode(),
                             "the string table runs past the file or its "
                             "last string is unterminated");
  return Error::success();
}

Error scanCoff(const COFFObjectFile &obj, ScannedObject &out) {
  if (Error e = checkCoffRelocations(obj))
    return e;
  std::map<int32_t, int32_t> assocParent;  // section -> associated section
  std::map<int32_t, ScannedGroup> comdats; // by section number
  std::map<int32_t, bool> needLeader;
  std::vector<std::pair<int32_t, std::string>> externals;
  uint32_t n = obj.getNumberOfSymbols();
  for (uint32_t i = 0; i < n; ++i) {
    auto sym = obj.getSymbol(i);
    if (!sym)
      return sym.takeError();
    // getSymbol() checks the index, not the file: a malformed header left
    // a symbol past the end of the buffer, and a symbol's aux records may
    // claim to run past the table (overflows found by the fuzzer).
    const char *entry = static_cast<const char *>(sym->getRawPtr());
    StringRef data = obj.getData();
    if (entry < data.begin() || entry > data.end() ||
        size_t(data.end() - entry) < obj.getSymbolTableEntrySize() ||
        sym->getNumberOfAuxSymbols() >= n - i)
      return createStringError(inconvertibleErrorCode(),
                               "symbol #" + Twine(i) +
                                   " or its aux records lie outside the "
                                   "symbol table");
    int32_t secNum = sym->getSectionNumber();
    StringRef name;
    if (auto nm = obj.getSymbolName(*sym))
      name = *nm;
    else
      return nm.takeError();
    if (secNum > 0 && needLeader[secNum] && !sym->isSectionDefinition()) {
      comdats[secNum].key = name.str();
      needLeader[secNum] = false;
    }
    if (const coff_aux_section_definition *def = sym->getSectionDefinition()) {
      if (sym->isSectionDefinition() && secNum > 0) {
        if (def->Selection == COFF::IMAGE_COMDAT_SELECT_ASSOCIATIVE)
          assocParent[secNum] = def->getNumber(sym->isBigObj());
        else if (def->Selection != 0)
          needLeader[secNum] = true, comdats[secNum];
      }
    }
    if ((sym->isExternal() || sym->isWeakExternal()) && secNum > 0)
      externals.emplace_back(secNum, name.str());
    i += sym->getNumberOfAuxSymbols();
  }
  auto root = [&](int32_t sec) {
    for (int hops = 0; hops < 64 && assocParent.count(sec); ++hops)
      sec = assocParent[sec];
    return sec;
  };
  for (auto &[sec, name] : externals)
    if (auto it = comdats.find(root(sec)); it != comdats.end())
      it->second.members.push_back(name);
  for (auto &[sec, group] : comdats)
    if (!group.key.empty())
      out.groups.push_back(std::move(group));
  return Error::success();
}

// --- Mach-O: no groups; names ObjCopy would read unchecked ------------

// ObjCopy's Mach-O reader takes every symbol's name (locals included) with
// strlen from n_strx, unchecked: an index past the string table, or a table
// whose last string is unterminated, reads outside the file (found by the
// fuzzer: a SEGV in MachOReader::readSymbolTable).
Error checkMachONames(const MachOObjectFile &obj) {
  StringRef strtab = obj.getStringTableData();
  bool terminated = !strtab.empty() && strtab.back() == '\0';
  for (const SymbolRef &sym : obj.symbols()) {
    DataRefImpl d = sym.getRawDataRefImpl();
    uint32_t strx = obj.is64Bit() ? obj.getSymbol64TableEntry(d).n_strx
                                  : obj.getSymbolTableEntry(d).n_strx;
    if (strx >= strtab.size() || !terminated)
      return createStringError(inconvertibleErrorCode(),
                               "symbol name offset " + Twine(strx) +
                                   " is outside the string table (" +
                                   Twine(strtab.size()) +
                                   " bytes) or the table is unterminated");
  }
  return Error::success();
}

// ObjCopy's Mach-O reader resolves every plain relocation's symbol or
// section number by indexing, unchecked (a SEGV found by the fuzzer).
Error checkMachORelocations(const MachOObjectFile &obj) {
  uint32_t nsyms = obj.getSymtabLoadCommand().nsyms;
  uint64_t nsects = std::distance(obj.section_begin(), obj.section_end());
  bool arm64 = obj.getHeader().cputype == MachO::CPU_TYPE_ARM64;
  for (const SectionRef &sec : obj.sections())
    for (const RelocationRef &rel : sec.relocations()) {
      MachO::any_relocation_info info =
          obj.getRelocation(rel.getRawDataRefImpl());
      if (obj.isRelocationScattered(info) ||
          (arm64 &&
           obj.getAnyRelocationType(info) == MachO::ARM64_RELOC_ADDEND))
        continue;
      uint32_t num = obj.getPlainRelocationSymbolNum(info);
      bool ok = obj.getPlainRelocationExternal(info)
                    ? num < nsyms
                    : num >= 1 && num <= nsects;
      if (!ok)
        return createStringError(
            inconvertibleErrorCode(),
            "section #" + Twine(sec.getIndex() + 1) + ": relocation names " +
                (obj.getPlainRelocationExternal(info) ? "symbol" : "section") +
                " #" + Twine(num) + ", which does not exist");
    }
  return Error::success();
}

// --- LLVM bitcode --------------------------------------------------------
// Names under `llvm.` (llvm.global_ctors/dtors, llvm.used,
// llvm.compiler.used, intrinsics) have a meaning to LLVM, not to the linker:
// they are never a definition, and renaming one made a constructor list an
// ordinary global (destructors and initializers never ran). What they list
// are pointers to values, which follow those values' renames by themselves.

// The role of an AMDGPU global value, as amdgpuRole() for objects: kernels
// by calling convention (their descriptors exist only after code
// generation), then visibility and writability.
SymbolRole irAmdgpuRole(const Module &mod, const GlobalValue &gv) {
  if (auto *f = dyn_cast<Function>(&gv);
      f && f->getCallingConv() == CallingConv::AMDGPU_KERNEL)
    return SymbolRole::Kernel;
  if (gv.isDeclaration() || gv.hasHiddenVisibility())
    return SymbolRole::Plain;
  bool managed = gv.getName().ends_with(".managed") ||
                 mod.getNamedValue((gv.getName() + ".managed").str());
  auto *var = dyn_cast<GlobalVariable>(&gv);
  if (managed || !var || var->isConstant())
    return SymbolRole::Export;
  return SymbolRole::Slot;
}

Error scanBitcode(MemoryBufferRef buf, ScannedObject &out) {
  LLVMContext ctx;
  Expected<std::unique_ptr<Module>> mod = parseBitcodeFile(buf, ctx);
  if (!mod)
    return mod.takeError();
  Triple triple((*mod)->getTargetTriple());
  if (triple.getArch() == Triple::x86 && triple.isOSWindows())
    out.style = NameStyle::IrCoff32;
  if (triple.isAMDGPU())
    out.style = NameStyle::IrAmdgpu;
  for (const GlobalVariable &gv : (*mod)->globals())
    if (gv.hasSection() && is_contained(kOffloadSections, gv.getSection()))
      return offloadRefusal(gv.getSection(), "");
  std::map<std::string, ScannedGroup> groups;
  for (const GlobalValue &gv : (*mod)->global_values()) {
    if (gv.hasLocalLinkage() || !gv.hasName() ||
        isLlvmReservedName(gv.getName()))
      continue;
    out.symbols.push_back({gv.getName().str(), !gv.isDeclaration(),
                           out.style == NameStyle::IrAmdgpu
                               ? irAmdgpuRole(**mod, gv)
                               : SymbolRole::Plain,
                           gv.isWeakForLinker()});
    if (const Comdat *c = gv.getComdat(); c && !gv.isDeclaration()) {
      ScannedGroup &g = groups[c->getName().str()];
      g.key = c->getName().str();
      g.members.push_back(gv.getName().str());
    }
  }
  for (auto &[name, group] : groups)
    out.groups.push_back(std::move(group));
  return Error::success();
}

// e_machine of a little-endian ELF64 image, read from the header.
bool isAmdgpuImage(StringRef image) {
  return image.size() >= 20 && image[4] == ELF::ELFCLASS64 &&
         image[5] == ELF::ELFDATA2LSB &&
         support::endian::read16le(image.data() + 18) == ELF::EM_AMDGPU;
}

} // namespace

Expected<InputKind> classify(MemoryBufferRef buf, StringRef displayName) {
  std::string file = displayName.str();
  switch (identify_magic(buf.getBuffer())) {
  case file_magic::elf_relocatable:
    return InputKind::Elf;
  case file_magic::coff_object:
  case file_magic::coff_cl_gl_object:
    return InputKind::Coff;
  case file_magic::macho_object:
    return InputKind::MachO;
  case file_magic::bitcode:
    return InputKind::Bitcode;
  case file_magic::archive:
    return InputKind::Archive;
  case file_magic::coff_import_library:
    return InputKind::CoffImport;
  case file_magic::elf_shared_object:
    if (isAmdgpuImage(buf.getBuffer()))
      return fail(file, "is a finished AMDGPU code object (ET_DYN): its "
                        "section .dynsym, the hash tables and the "
                        "NT_AMDGPU_METADATA note would all have to be "
                        "rebuilt, so it is not rewritten; rewrite the "
                        "relocatable objects it was linked from (clang -c) "
                        "and link them again with ld.lld -shared");
    [[fallthrough]];
  case file_magic::macho_dynamically_linked_shared_lib:
  case file_magic::macho_dynamically_linked_shared_lib_stub:
  case file_magic::tapi_file:
    return fail(file, "is a shared library; only relocatable objects and "
                      "static archives can be rewritten");
  case file_magic::elf_executable:
  case file_magic::elf_core:
  case file_magic::macho_executable:
  case file_magic::pecoff_executable:
    return fail(file, "is an executable or image; only relocatable objects "
                      "and static archives can be rewritten");
  case file_magic::macho_universal_binary:
    return fail(file, "is a universal (fat) Mach-O file; rewrite each "
                      "architecture's slice separately");
  default:
    return fail(file, "unknown file format (not an ELF, COFF or Mach-O "
                      "relocatable object, LLVM bitcode or archive)");
  }
}

Expected<ScannedObject> scanObject(MemoryBufferRef buf, InputKind kind,
                                   const std::string &displayName,
                                   Scope scope) {
  ScannedObject out;
  out.file = displayName;
  out.scope = scope;
  if (kind == InputKind::Bitcode) {
    out.style = NameStyle::Ir; // scanBitcode refines it by target
    if (Error e = scanBitcode(buf, out))
      return wrap(displayName, std::move(e));
    return out;
  }
  Expected<std::unique_ptr<ObjectFile>> obj = ObjectFile::createObjectFile(buf);
  if (!obj)
    return wrap(displayName, obj.takeError());
  Error err = Error::success();
  switch (kind) {
  case InputKind::Elf:
    out.style = isAmdgpu(**obj) ? NameStyle::Amdgpu : NameStyle::Elf;
    err = refuseOffloadBundles(**obj);
    if (!err)
      err = scanSymbols(**obj, false, out);
    if (!err)
      err = scanElf(**obj, out);
    if (!err && out.style == NameStyle::Amdgpu)
      err = scanAmdgpu(**obj, out);
    break;
  case InputKind::Coff:
    // i386 C names carry a leading underscore and call decorations.
    out.style = cast<COFFObjectFile>(obj->get())->getMachine() ==
                        COFF::IMAGE_FILE_MACHINE_I386
                    ? NameStyle::Coff32
                    : NameStyle::Coff;
    err = checkCoffStringTable(*cast<COFFObjectFile>(obj->get()));
    if (!err)
      err = refuseOffloadBundles(**obj);
    if (!err)
      err = scanSymbols(**obj, true, out);
    if (!err)
      err = scanCoff(*cast<COFFObjectFile>(obj->get()), out);
    break;
  case InputKind::MachO:
    out.style = NameStyle::MachO; // no COMDATs: weak definitions merge by name
    // Names first: reading one past an unterminated table overruns.
    err = joinErrors(checkMachONames(*cast<MachOObjectFile>(obj->get())),
                     checkMachORelocations(*cast<MachOObjectFile>(obj->get())));
    if (!err)
      err = scanSymbols(**obj, false, out);
    break;
  default:
    return fail(displayName, "not an object file");
  }
  if (err)
    return wrap(displayName, std::move(err));
  return out;
}

} // namespace linkd::rewrite
