// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Object files through LLVM ObjCopy with an exact rename map (see
// object_rewriter.h for what ObjCopy covers and what is done here).
#include "rewrite/object_rewriter.h"
#include "rewrite/amdgpu_metadata.h"
#include "rewrite/errors.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/BinaryFormat/COFF.h"
#include "llvm/ObjCopy/ConfigManager.h"
#include "llvm/ObjCopy/ObjCopy.h"
#include "llvm/Object/COFF.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <set>

namespace linkd::rewrite {

using namespace llvm;
using namespace llvm::object;

namespace {

// raw name -> new raw name, for every name in the file that changes.
StringMap<std::string> renameMap(const ScannedObject &obj,
                                 const RenameTable &table) {
  StringMap<std::string> out;
  auto add = [&](const std::string &raw) {
    if (auto to = table.rename(obj.scope, obj.style, raw))
      out[raw] = *to;
  };
  for (const ScannedSymbol &sym : obj.symbols)
    add(sym.name);
  for (const ScannedGroup &group : obj.groups) {
    if (group.keyIsSymbol)
      add(group.key); // a local signature symbol is not in obj.symbols
    for (const std::string &member : group.members)
      add(member);
  }
  return out;
}

std::optional<std::string> directivesOf(const COFFObjectFile &coff) {
  for (const SectionRef &sec : coff.sections()) {
    Expected<StringRef> name = sec.getName();
    if (!name) {
      consumeError(name.takeError());
      continue;
    }
    if (*name != ".drectve")
      continue;
    if (Expected<StringRef> data = sec.getContents())
      return data->str();
    else
      consumeError(data.takeError());
  }
  return std::nullopt;
}

// The 40-byte section headers of a COFF object image (regular or bigobj),
// those that lie inside it.
std::vector<uint8_t *> coffSectionHeaders(std::string &image) {
  using namespace support::endian;
  std::vector<uint8_t *> out;
  auto *p = reinterpret_cast<uint8_t *>(image.data());
  if (image.size() < 20)
    return out;
  bool bigobj =
      image.size() >= 56 && read16le(p) == 0 && read16le(p + 2) == 0xffff;
  size_t headers = bigobj ? 56 : 20 + read16le(p + 16);
  uint32_t count = bigobj ? read32le(p + 44) : read16le(p + 2);
  for (uint32_t i = 0; i < count && headers + 40 * (i + 1) <= image.size(); ++i)
    out.push_back(p + headers + 40 * i);
  return out;
}

// A section added by ObjCopy gets data characteristics; `.drectve` is
// IMAGE_SCN_LNK_INFO | IMAGE_SCN_LNK_REMOVE for every linker.
void markDirectives(std::string &image) {
  for (uint8_t *h : coffSectionHeaders(image))
    if (std::memcmp(h, ".drectve", 8) == 0)
      support::endian::write32le(h + 36, COFF::IMAGE_SCN_LNK_INFO |
                                             COFF::IMAGE_SCN_LNK_REMOVE |
                                             COFF::IMAGE_SCN_ALIGN_1BYTES);
}

// In an object, a section without file data (PointerToRawData 0: .bss)
// keeps its size in SizeOfRawData. ObjCopy's COFF writer gives it that much
// file space: a 16 MiB .bss came out as 16 MiB of zeros (and a corrupt size
// as an allocation of gigabytes, found by the fuzzer). ObjCopy reads a copy
// with those sizes zeroed; restoreBssSizes() puts them back in order.
// ObjCopy writes a section without file data exactly when its size is 0
// (in the input: no data, or empty), keeps the order of the sections it
// does not remove, and any section it adds has data.
bool inputHasNoData(const uint8_t *h) {
  using namespace support::endian;
  return read32le(h + 20) == 0 || read32le(h + 16) == 0;
}

std::vector<uint32_t> zeroBssSizes(std::string &image) {
  std::vector<uint32_t> sizes;
  for (uint8_t *h : coffSectionHeaders(image))
    if (inputHasNoData(h)) {
      sizes.push_back(support::endian::read32le(h + 16));
      support::endian::write32le(h + 16, 0);
    }
  return sizes;
}

bool restoreBssSizes(std::string &image, const std::vector<uint32_t> &sizes) {
  size_t next = 0;
  for (uint8_t *h : coffSectionHeaders(image))
    if (support::endian::read32le(h + 20) == 0) {
      if (next == sizes.size())
        return false;
      support::endian::write32le(h + 16, sizes[next++]);
    }
  return next == sizes.size();
}

// New `.drectve` text, or nullopt when no directive names a renamed symbol.
std::optional<std::string> newDirectives(const ObjectFile &obj,
                                         const ScannedObject &scanned,
                                         const RenameTable &table) {
  auto *coff = dyn_cast<COFFObjectFile>(&obj);
  if (!coff)
    return std::nullopt;
  std::optional<std::string> text = directivesOf(*coff);
  if (!text)
    return std::nullopt;
  if (scanned.style != NameStyle::Coff32)
    return rewriteDirectives(*text, [&](std::string_view name) {
      return table.rename(scanned.scope, scanned.style, name);
    });
  // i386: MSVC spells a directive's symbol as it is in the symbol table
  // (`/EXPORT:_f`, `/EXPORT:_f@4`), MinGW without the leading underscore
  // (`-export:f`, `-export:f@4`; fastcall `@f@4` stays whole). A name that
  // is not one of the file's symbols is read as MinGW's form.
  std::set<std::string_view> symbols;
  for (const ScannedSymbol &sym : scanned.symbols)
    symbols.insert(sym.name);
  return rewriteDirectives(
      *text, [&](std::string_view name) -> std::optional<std::string> {
        if (symbols.count(name))
          return table.rename(scanned.scope, scanned.style, name);
        auto to = table.rename(scanned.scope, scanned.style,
                               "_" + std::string(name));
        if (!to || !to->starts_with('_'))
          return std::nullopt;
        return to->substr(1);
      });
}

// AMDGPU: the metadata note sections that name a renamed symbol.
Expected<std::vector<SectionUpdate>>
metadataUpdates(const ObjectFile &obj, const ScannedObject &scanned,
                const RenameTable &table) {
  auto *elf = dyn_cast<ELF64LEObjectFile>(&obj);
  if (scanned.style != NameStyle::Amdgpu || !elf)
    return std::vector<SectionUpdate>{};
  return rewriteAmdgpuMetadata(*elf, [&](std::string_view raw) {
    return table.rename(scanned.scope, scanned.style, raw);
  });
}

} // namespace

Expected<std::string> rewriteObject(MemoryBufferRef buf, InputKind kind,
                                    const ScannedObject &scanned,
                                    const RenameTable &table) {
  if (kind == InputKind::Bitcode)
    return rewriteBitcode(buf, scanned, table);
  StringMap<std::string> renames = renameMap(scanned, table);
  if (renames.empty() && kind != InputKind::Coff)
    return buf.getBuffer().str(); // nothing to do: the same bytes
  // AMDGPU objects go through ObjCopy: their metadata note changes too.
  if (kind == InputKind::Elf && scanned.style != NameStyle::Amdgpu)
    if (auto fast = renameElfSymbols(buf.getBuffer(), renames))
      return std::move(*fast);
  Expected<std::unique_ptr<ObjectFile>> obj = ObjectFile::createObjectFile(buf);
  if (!obj)
    return fail(scanned.file, toString(obj.takeError()));

  std::optional<std::string> directives = newDirectives(**obj, scanned, table);
  auto notes = metadataUpdates(**obj, scanned, table);
  if (!notes)
    return fail(scanned.file, toString(notes.takeError()));
  if (renames.empty() && !directives && notes->empty())
    return buf.getBuffer().str(); // nothing to do: the same bytes

  objcopy::ConfigManager config;
  config.Common.InputFilename = scanned.file;
  config.Common.OutputFilename = scanned.file;
  for (const auto &entry : renames)
    config.Common.SymbolsToRename[entry.getKey()] = entry.getValue();
  for (SectionUpdate &note : *notes)
    config.Common.UpdateSection.emplace_back(
        note.section, MemoryBuffer::getMemBufferCopy(note.contents));
  bool added = false;
  if (directives) {
    size_t oldSize = directivesOf(*cast<COFFObjectFile>(obj->get()))->size();
    if (directives->size() <= oldSize) {
      directives->resize(oldSize, ' '); // same size: keeps section order
      config.Common.UpdateSection.emplace_back(
          ".drectve", MemoryBuffer::getMemBufferCopy(*directives));
    } else {
      if (Error e =
              config.Common.ToRemove.addMatcher(objcopy::NameOrPattern::create(
                  ".drectve", objcopy::MatchStyle::Literal,
                  [](Error e) { return e; })))
        return fail(scanned.file, toString(std::move(e)));
      config.Common.AddSection.emplace_back(
          ".drectve", MemoryBuffer::getMemBufferCopy(*directives));
      added = true;
    }
  }

  std::string input; // COFF: a copy with .bss sizes zeroed
  std::vector<uint32_t> bssSizes;
  if (kind == InputKind::Coff) {
    input = buf.getBuffer().str();
    bssSizes = zeroBssSizes(input);
    if (std::none_of(bssSizes.begin(), bssSizes.end(),
                     [](uint32_t size) { return size != 0; }))
      bssSizes.clear(); // nothing changed: ObjCopy reads the input itself
    if (!bssSizes.empty()) {
      obj = ObjectFile::createObjectFile(
          MemoryBufferRef(input, buf.getBufferIdentifier()));
      if (!obj)
        return fail(scanned.file, toString(obj.takeError()));
    }
  }

  std::string out;
  raw_string_ostream os(out);
  if (Error e = objcopy::executeObjcopyOnBinary(config, **obj, os))
    return fail(scanned.file, toString(std::move(e)));
  os.flush();
  if (added)
    markDirectives(out);
  if (!bssSizes.empty() && !restoreBssSizes(out, bssSizes))
    return fail(scanned.file, "ObjCopy changed the uninitialised sections");
  return out;
}

} // namespace linkd::rewrite
