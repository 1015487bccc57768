// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/audit/pdb_reader.h"

#include "llvm/DebugInfo/CodeView/SymbolDeserializer.h"
#include "llvm/DebugInfo/CodeView/SymbolRecord.h"
#include "llvm/DebugInfo/MSF/MappedBlockStream.h"
#include "llvm/DebugInfo/PDB/Native/DbiModuleDescriptor.h"
#include "llvm/DebugInfo/PDB/Native/DbiModuleList.h"
#include "llvm/DebugInfo/PDB/Native/DbiStream.h"
#include "llvm/DebugInfo/PDB/Native/ISectionContribVisitor.h"
#include "llvm/DebugInfo/PDB/Native/InfoStream.h"
#include "llvm/DebugInfo/PDB/Native/ModuleDebugStream.h"
#include "llvm/DebugInfo/PDB/Native/PDBFile.h"
#include "llvm/DebugInfo/PDB/Native/RawConstants.h"
#include "llvm/DebugInfo/PDB/Native/RawTypes.h"
#include "llvm/DebugInfo/PDB/Native/SymbolStream.h"
#include "llvm/Object/COFF.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/BinaryByteStream.h"
#include "llvm/Support/MemoryBuffer.h"

#include <unistd.h>

#include <map>
#include <set>
#include <tuple>
#include <type_traits>

namespace linkd::audit {
namespace {

using namespace llvm;
using namespace llvm::codeview;

std::string hexOf(ArrayRef<uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string baseName(StringRef p) {
  size_t slash = p.find_last_of("/\\");
  return (slash == StringRef::npos ? p : p.substr(slash + 1)).str();
}

std::string lowerCase(StringRef s) { return s.lower(); }

// The C runtime's and the linker's compilands: MSVC's CRT and C++ runtime
// libraries (static and import), the UCRT, Windows SDK import libraries,
// lld's and link.exe's own "* Linker *" module, and MinGW's CRT.
bool isToolchainCompiland(StringRef module, StringRef objFile) {
  std::string lib = lowerCase(baseName(objFile));
  std::string mod = lowerCase(baseName(module));
  if (module.starts_with("* ") || mod.empty())
    return true;
  for (const char *l :
       {"msvcrt",       "msvcrtd",  "libcmt",       "libcmtd",   "vcruntime",
        "libvcruntime", "ucrt",     "libucrt",      "msvcprt",   "msvcprtd",
        "libcpmt",      "libcpmtd", "oldnames",     "kernel32",  "user32",
        "advapi32",     "uuid",     "legacy_stdio", "libconcrt", "concrt"})
    if (lib.starts_with(l) && (lib.ends_with(".lib") || lib.ends_with(".a")))
      return true;
  return isToolchainInput(objFile.str()) || isToolchainInput(module.str());
}

struct Section {
  bool writable = false;
  char kind = 0;
};

char kindOf(const object::coff_section &s) {
  StringRef name(s.Name, strnlen(s.Name, sizeof s.Name));
  if (!(s.Characteristics & COFF::IMAGE_SCN_MEM_WRITE))
    return 0;
  if (name.starts_with(".tls"))
    return 'T';
  if (s.Characteristics & COFF::IMAGE_SCN_CNT_UNINITIALIZED_DATA ||
      name == ".bss")
    return 'B';
  if (s.Characteristics & COFF::IMAGE_SCN_CNT_INITIALIZED_DATA)
    return 'D';
  return 0;
}

} // namespace

static bool pdbStateFromBuffer(const std::string &path,
                               std::unique_ptr<MemoryBuffer> buf,
                               std::string_view expectedId,
                               std::vector<RecordedSymbol> &out,
                               std::string *error);

bool pdbStateSymbols(const std::string &path, std::string_view expectedId,
                     std::vector<RecordedSymbol> &out, std::string *error) {
  std::unique_ptr<MemoryBuffer> buf = readModuleFile(path, error);
  if (!buf)
    return false;
  return pdbStateFromBuffer(path, std::move(buf), expectedId, out, error);
}

bool pdbStateSymbolsFromBytes(const std::string &name, std::string_view bytes,
                              std::string_view expectedId,
                              std::vector<RecordedSymbol> &out,
                              std::string *error) {
  return pdbStateFromBuffer(
      name,
      MemoryBuffer::getMemBuffer(StringRef(bytes.data(), bytes.size()), name,
                                 /*RequiresNullTerminator=*/false),
      expectedId, out, error);
}

static bool pdbStateFromBuffer(const std::string &path,
                               std::unique_ptr<MemoryBuffer> buf,
                               std::string_view expectedId,
                               std::vector<RecordedSymbol> &out,
                               std::string *error) {
  auto fail = [&](const std::string &why) {
    *error = path + ": " + why;
    return false;
  };
  BumpPtrAllocator alloc;
  auto stream = std::make_unique<MemoryBufferByteStream>(
      std::move(buf), llvm::endianness::little);
  pdb::PDBFile file(path, std::move(stream), alloc);
  auto err = [&](Error e) { return fail(toString(std::move(e))); };
  if (Error e = file.parseFileHeaders())
    return err(std::move(e));
  if (Error e = file.parseStreamData())
    return err(std::move(e));
  auto info = file.getPDBInfoStream();
  if (!info)
    return err(info.takeError());
  if (!file.hasPDBDbiStream())
    return fail("no DBI stream");
  auto dbi = file.getPDBDbiStream();
  if (!dbi)
    return err(dbi.takeError());
  GUID guid = info->getGuid();
  std::string guidHex = hexOf(ArrayRef<uint8_t>(guid.Guid, sizeof guid.Guid));
  if (!expectedId.empty()) {
    // "pe-codeview:<guid>-<age>": the age of the image's record is the
    // PDB's (lld, link.exe: the info stream's; older tools: the DBI's).
    std::string want(expectedId.substr(expectedId.find(':') + 1));
    std::string a = guidHex + "-" + std::to_string(info->getAge());
    std::string b = guidHex + "-" + std::to_string(dbi->getAge());
    if (want != a && want != b)
      return fail("another build's PDB (GUID-age " + a + ", the module's " +
                  want + ")");
  }
  // Sections by 1-based index, from the PDB's copy of the image's headers.
  std::vector<char> kinds{0};
  for (const object::coff_section &s : dbi->getSectionHeaders())
    kinds.push_back(kindOf(s));
  auto kindAt = [&](uint16_t segment) {
    return segment < kinds.size() ? kinds[segment] : char(0);
  };
  // Compiland by section contribution, for globals (their records live in
  // the globals stream, not in a module's).
  struct Contribution {
    uint16_t section;
    uint32_t offset, size;
    uint16_t module;
  };
  std::vector<Contribution> contributions;
  struct Visitor : pdb::ISectionContribVisitor {
    std::vector<Contribution> &out;
    explicit Visitor(std::vector<Contribution> &o) : out(o) {}
    void visit(const pdb::SectionContrib &c) override {
      if (c.Off >= 0 && c.Size >= 0)
        out.push_back({c.ISect, static_cast<uint32_t>(c.Off),
                       static_cast<uint32_t>(c.Size), c.Imod});
    }
    void visit(const pdb::SectionContrib2 &c) override { visit(c.Base); }
  } visitor(contributions);
  dbi->visitSectionContributions(visitor);
  const pdb::DbiModuleList &mods = dbi->modules();
  auto moduleOf = [&](uint16_t segment, uint32_t offset) -> int {
    for (const Contribution &c : contributions)
      if (c.section == segment && offset >= c.offset &&
          offset - c.offset < c.size)
        return c.module;
    return -1;
  };
  std::set<std::tuple<uint16_t, uint32_t, std::string>> seen;
  auto add = [&](char kind, bool global, const std::string &name,
                 uint16_t segment, uint32_t offset, int module) {
    if (!kind || name.empty() || module < 0 ||
        static_cast<uint32_t>(module) >= mods.getModuleCount())
      return;
    if (!seen.insert({segment, offset, name}).second)
      return;
    pdb::DbiModuleDescriptor d = mods.getModuleDescriptor(module);
    if (isToolchainCompiland(d.getModuleName(), d.getObjFileName()))
      return;
    RecordedSymbol r;
    r.kind = kind;
    r.name = name;
    r.input = d.getModuleName().str();
    r.binding = global ? 'g' : 'l';
    r.source = global ? "" : baseName(d.getModuleName());
    out.push_back(std::move(r));
  };
  // File and function statics, per compiland (a function's statics are
  // named "function::name", as ELF's demangled names are).
  for (uint32_t i = 0; i < mods.getModuleCount(); ++i) {
    pdb::DbiModuleDescriptor d = mods.getModuleDescriptor(i);
    uint16_t sn = d.getModuleStreamIndex();
    if (sn == pdb::kInvalidStreamIndex)
      continue;
    auto ms = file.safelyCreateIndexedStream(sn);
    if (!ms) {
      consumeError(ms.takeError());
      continue;
    }
    pdb::ModuleDebugStreamRef mod(d, std::move(*ms));
    if (Error e = mod.reload()) {
      consumeError(std::move(e));
      continue;
    }
    std::vector<std::string> scopes; // enclosing procedures, "" for blocks
    // A data or thread-local symbol of this compiland; in a function, its
    // static, named "function::name".
    auto addScoped = [&]<class Record>(const CVSymbol &sym, bool global) {
      auto rec = SymbolDeserializer::deserializeAs<Record>(sym);
      if (!rec) {
        consumeError(rec.takeError());
        return;
      }
      std::string fn;
      for (auto it = scopes.rbegin(); it != scopes.rend() && fn.empty(); ++it)
        fn = *it;
      char kind = std::is_same_v<Record, ThreadLocalDataSym>
                      ? 'T'
                      : kindAt(rec->Segment);
      add(kind, global && fn.empty(),
          fn.empty() ? rec->Name.str() : fn + "::" + rec->Name.str(),
          rec->Segment, rec->DataOffset, static_cast<int>(i));
    };
    bool bad = false;
    for (const CVSymbol &sym : mod.symbols(&bad)) {
      switch (sym.kind()) {
      case SymbolKind::S_GPROC32:
      case SymbolKind::S_LPROC32:
      case SymbolKind::S_GPROC32_ID:
      case SymbolKind::S_LPROC32_ID: {
        auto p = SymbolDeserializer::deserializeAs<ProcSym>(sym);
        scopes.push_back(p ? p->Name.str() : "");
        if (!p)
          consumeError(p.takeError());
        break;
      }
      case SymbolKind::S_BLOCK32:
      case SymbolKind::S_THUNK32:
      case SymbolKind::S_INLINESITE:
      case SymbolKind::S_SEPCODE:
        scopes.push_back("");
        break;
      case SymbolKind::S_END:
      case SymbolKind::S_PROC_ID_END:
      case SymbolKind::S_INLINESITE_END:
        if (!scopes.empty())
          scopes.pop_back();
        break;
      case SymbolKind::S_LDATA32:
      case SymbolKind::S_GDATA32:
      case SymbolKind::S_LMANDATA:
      case SymbolKind::S_GMANDATA:
        addScoped.template operator()<DataSym>(
            sym, sym.kind() == SymbolKind::S_GDATA32 ||
                     sym.kind() == SymbolKind::S_GMANDATA);
        break;
      case SymbolKind::S_LTHREAD32:
      case SymbolKind::S_GTHREAD32:
        addScoped.template operator()<ThreadLocalDataSym>(
            sym, sym.kind() == SymbolKind::S_GTHREAD32);
        break;
      default:
        break;
      }
    }
  }
  // Globals: the globals stream's records, each placed in the compiland
  // whose section contribution holds it.
  if (file.hasPDBSymbolStream()) {
    auto syms = file.getPDBSymbolStream();
    if (!syms)
      return err(syms.takeError());
    for (const CVSymbol &sym : syms->getSymbolArray()) {
      if (sym.kind() == SymbolKind::S_GDATA32 ||
          sym.kind() == SymbolKind::S_LDATA32) {
        auto ds = SymbolDeserializer::deserializeAs<DataSym>(sym);
        if (!ds) {
          consumeError(ds.takeError());
          continue;
        }
        add(kindAt(ds->Segment), sym.kind() == SymbolKind::S_GDATA32,
            ds->Name.str(), ds->Segment, ds->DataOffset,
            moduleOf(ds->Segment, ds->DataOffset));
      } else if (sym.kind() == SymbolKind::S_GTHREAD32 ||
                 sym.kind() == SymbolKind::S_LTHREAD32) {
        auto ts = SymbolDeserializer::deserializeAs<ThreadLocalDataSym>(sym);
        if (!ts) {
          consumeError(ts.takeError());
          continue;
        }
        add('T', sym.kind() == SymbolKind::S_GTHREAD32, ts->Name.str(),
            ts->Segment, ts->DataOffset, moduleOf(ts->Segment, ts->DataOffset));
      }
    }
  }
  return true;
}

std::string usePdb(ModuleInfo &m, const std::vector<std::string> &searchDirs,
                   std::string *mismatch, std::string *blind) {
  if (m.format != "PE" || m.buildId.empty())
    return "";
  std::vector<std::string> candidates;
  std::string dir = m.path.substr(0, m.path.find_last_of('/') + 1);
  std::string here = dir.empty() ? "./" : dir;
  std::string stem = baseName(m.path);
  stem = stem.substr(0, stem.rfind('.')) + ".pdb";
  if (!m.pdbPath.empty()) {
    candidates.push_back(m.pdbPath);
    candidates.push_back(here + baseName(m.pdbPath));
  }
  candidates.push_back(here + stem);
  for (const std::string &d : searchDirs) {
    if (!m.pdbPath.empty())
      candidates.push_back(d + "/" + baseName(m.pdbPath));
    candidates.push_back(d + "/" + stem);
  }
  std::set<std::string> tried;
  for (const std::string &c : candidates) {
    if (!tried.insert(c).second || !isRegularFile(c))
      continue;
    std::vector<RecordedSymbol> syms;
    std::string why;
    if (!pdbStateSymbols(c, m.buildId, syms, &why)) {
      if (mismatch && mismatch->empty())
        *mismatch = why;
      continue;
    }
    *blind = applyRecord(m, syms, "its PDB");
    return c;
  }
  return "";
}

} // namespace linkd::audit
