// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The PE reader: imports, exports, and the state a PE image defines (from
// its COFF symbol table where the image has one, else its exports); every
// copy is the module's own, as the Windows loader binds by module.

#include "daemon/linkd-lld/audit/format_readers.h"
#include "daemon/linkd-lld/audit/toolchain_names.h"

#include "audit/module_id.h"
#include "llvm/BinaryFormat/COFF.h"
#include "llvm/Object/COFF.h"
#include "llvm/TargetParser/Triple.h"

#include <cstring>
#include <string>

namespace linkd::audit {

namespace {

using namespace llvm;

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
    return data.begin() + (p - b); // within the file's bytes, checked above
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

} // namespace

void readPe(const object::COFFObjectFile &o, ModuleInfo &m) {
  PeReader{o, m}.read();
}

std::string peCopyWhy(const ModuleInfo &m, const char *from) {
  return PeReader::why(m, from);
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

} // namespace linkd::audit
