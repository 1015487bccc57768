// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Reading one module: the file, its format, the reader for it
// (elf_reader.cpp, pe_reader.cpp, macho_reader.cpp), and a link record
// applied to a stripped module.

#include "daemon/linkd-lld/audit/module_reader.h"

#include "daemon/linkd-lld/audit/format_readers.h"
#include "daemon/linkd-lld/audit/toolchain_names.h"

#include "util/files.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MachO.h"
#include "llvm/Object/Binary.h"
#include "llvm/Object/COFF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/MachO.h"
#include "llvm/Object/MachOUniversal.h"
#include "llvm/Support/MemoryBuffer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace linkd::audit {

using namespace llvm;

bool isRegularFile(const std::string &path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::unique_ptr<MemoryBuffer> readModuleFile(const std::string &path,
                                             std::string *error) {
  Result<OpenFile> file = openRegularFile(path, kMaxModuleBytes);
  if (!file) {
    if (error)
      *error = file.error();
    return nullptr;
  }
  auto buf = MemoryBuffer::getOpenFile(file->fd.get(), path, file->size,
                                       /*RequiresNullTerminator=*/false);
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
    readElf(*e, m);
    return m;
  }
  if (auto *c = dyn_cast<object::COFFObjectFile>(b)) {
    if (!c->getDOSHeader())
      return fail("a COFF object, not a PE image (audit linked modules)");
    readPe(*c, m);
    return m;
  }
  if (auto *mo = dyn_cast<object::MachOObjectFile>(b)) {
    uint32_t ft =
        mo->is64Bit() ? mo->getHeader64().filetype : mo->getHeader().filetype;
    if (ft != MachO::MH_EXECUTE && ft != MachO::MH_DYLIB &&
        ft != MachO::MH_BUNDLE)
      return fail("not a Mach-O executable, dylib or bundle");
    readMachO(*mo, m);
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
      judgeRecordedElf(m, r.name, r.binding == 'l', d);
    else
      d.why = peCopyWhy(m, from);
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

} // namespace linkd::audit
