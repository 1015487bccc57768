// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The Mach-O reader: LC_LOAD_DYLIB and LC_RPATH, exports, and the state an
// executable, dylib or bundle defines.

#include "daemon/linkd-lld/audit/format_readers.h"
#include "daemon/linkd-lld/audit/toolchain_names.h"

#include "llvm/BinaryFormat/MachO.h"
#include "llvm/Object/MachO.h"
#include "llvm/TargetParser/Triple.h"

#include <string>

namespace linkd::audit {

namespace {

using namespace llvm;

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

} // namespace

void readMachO(const object::MachOObjectFile &o, ModuleInfo &m) {
  MachOReader{o, m}.read();
}

} // namespace linkd::audit
