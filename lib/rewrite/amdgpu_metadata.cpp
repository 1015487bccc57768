// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Reading and rewriting the NT_AMDGPU_METADATA note (see amdgpu_metadata.h).
// Notes are walked here, bounds-checked, rather than through ELFFile::notes:
// a rewritten section is the same notes with one descriptor replaced, and
// that needs each note's exact bytes.
#include "rewrite/amdgpu_metadata.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/BinaryFormat/MsgPackReader.h"
#include "llvm/Support/Endian.h"

namespace linkd::rewrite {

using namespace llvm;
using namespace llvm::object;

namespace {

// Fields of a kernel's map that name a symbol.
constexpr StringRef kSymbolFields[] = {
    ".name", ".symbol", ".device_enqueue_symbol", ".runtime_handle"};

struct RawNote {
  StringRef header; // namesz, descsz, type, name and its padding
  StringRef desc;   // without padding
  StringRef padding;
  StringRef name; // without the terminating NUL
  uint32_t type;
};

Error noteError(StringRef section, const Twine &what) {
  return createStringError(inconvertibleErrorCode(),
                           "section " + section + ": " + what);
}

uint64_t roundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

Expected<std::vector<RawNote>> splitNotes(StringRef data, uint64_t align,
                                          StringRef section) {
  using support::endian::read32le;
  std::vector<RawNote> out;
  uint64_t at = 0;
  while (at < data.size()) {
    if (data.size() - at < 12)
      return noteError(section, "a note header runs past the section");
    uint32_t namesz = read32le(data.data() + at);
    uint32_t descsz = read32le(data.data() + at + 4);
    uint64_t descAt = roundUp(at + 12 + uint64_t(namesz), align);
    uint64_t end = roundUp(descAt + uint64_t(descsz), align);
    if (descAt > data.size() || descAt + descsz > data.size())
      return noteError(section, "a note runs past the section");
    end = std::min<uint64_t>(end, data.size()); // the last one's padding
    RawNote n;
    n.header = data.slice(at, descAt);
    n.desc = data.substr(descAt, descsz);
    n.padding = data.slice(descAt + descsz, end);
    n.name = data.substr(at + 12, namesz).split('\0').first;
    n.type = read32le(data.data() + at + 8);
    out.push_back(n);
    at = end;
  }
  return out;
}

bool isMetadata(const RawNote &n) {
  return n.name == "AMDGPU" && n.type == ELF::NT_AMDGPU_METADATA;
}

// Calls `visit` on every string node that names a symbol; an error if the
// document does not have the shape the loaders read.
Error forEachSymbolNode(msgpack::Document &doc, StringRef section,
                        const std::function<void(msgpack::DocNode &)> &visit) {
  msgpack::DocNode &root = doc.getRoot();
  if (!root.isMap())
    return noteError(section, "the AMDGPU metadata is not a msgpack map");
  msgpack::MapDocNode map = root.getMap();
  auto kernels = map.find("amdhsa.kernels");
  if (kernels == map.end())
    return Error::success();
  if (!kernels->second.isArray())
    return noteError(section, "amdhsa.kernels is not an array");
  for (msgpack::DocNode &kernel : kernels->second.getArray()) {
    if (!kernel.isMap())
      return noteError(section, "an amdhsa.kernels entry is not a map");
    msgpack::MapDocNode fields = kernel.getMap();
    for (StringRef field : kSymbolFields) {
      auto it = fields.find(field);
      if (it == fields.end())
        continue;
      if (!it->second.isString())
        return noteError(section, "a kernel's " + field + " is not a string");
      visit(it->second);
    }
  }
  return Error::success();
}

struct NoteSection {
  std::string name;
  uint64_t align;
  std::vector<RawNote> notes;
};

Expected<std::vector<NoteSection>> noteSections(const ELF64LEObjectFile &obj) {
  const ELFFile<ELF64LE> &f = obj.getELFFile();
  auto sections = f.sections();
  if (!sections)
    return sections.takeError();
  std::vector<NoteSection> out;
  for (const ELF64LE::Shdr &sec : *sections) {
    if (sec.sh_type != ELF::SHT_NOTE)
      continue;
    auto name = f.getSectionName(sec);
    if (!name)
      return name.takeError();
    auto data = f.getSectionContents(sec);
    if (!data)
      return data.takeError();
    uint64_t align = sec.sh_addralign == 8 ? 8 : 4;
    auto notes = splitNotes(toStringRef(*data), align, *name);
    if (!notes)
      return notes.takeError();
    out.push_back({name->str(), align, std::move(*notes)});
  }
  return out;
}

// MsgPackDocument orders map keys with an operator< that reaches
// llvm_unreachable for two keys that are maps or arrays (undefined
// behaviour in a release build: a SEGV found by the fuzzer). So the first
// document of the blob is walked with the plain reader first, and a map key
// that is not a scalar is refused.
Error checkMapKeys(StringRef desc, StringRef section) {
  struct Frame {
    uint64_t left; // objects still to come: 2 per map entry
    bool map, keyNext;
  };
  msgpack::Reader reader(MemoryBufferRef(desc, section));
  std::vector<Frame> open;
  do {
    msgpack::Object obj;
    Expected<bool> got = reader.read(obj);
    if (!got) {
      consumeError(got.takeError());
      return noteError(section, "NT_AMDGPU_METADATA is not a valid msgpack "
                                "document");
    }
    if (!*got)
      return noteError(section, "NT_AMDGPU_METADATA ends inside its msgpack "
                                "document");
    bool key = false;
    if (!open.empty()) {
      Frame &f = open.back();
      key = f.map && f.keyNext;
      f.keyNext = !f.keyNext;
      --f.left;
    }
    bool container =
        obj.Kind == msgpack::Type::Map || obj.Kind == msgpack::Type::Array;
    if (key && (container || obj.Kind == msgpack::Type::Extension))
      return noteError(section, "a msgpack map key in NT_AMDGPU_METADATA is "
                                "not a scalar");
    if (container && obj.Length)
      open.push_back({obj.Kind == msgpack::Type::Map ? 2 * uint64_t(obj.Length)
                                                     : uint64_t(obj.Length),
                      obj.Kind == msgpack::Type::Map, true});
    while (!open.empty() && open.back().left == 0)
      open.pop_back();
  } while (!open.empty());
  return Error::success();
}

Error readDocument(msgpack::Document &doc, StringRef desc, StringRef section) {
  if (Error e = checkMapKeys(desc, section))
    return e;
  if (!doc.readFromBlob(desc, /*Multi=*/false))
    return noteError(section, "NT_AMDGPU_METADATA is not a valid msgpack "
                              "document");
  return Error::success();
}

} // namespace

bool isAmdgpu(const ObjectFile &obj) {
  auto *elf = dyn_cast<ELFObjectFileBase>(&obj);
  return elf && elf->getEMachine() == ELF::EM_AMDGPU;
}

Expected<std::vector<std::string>>
amdgpuMetadataSymbols(const ELF64LEObjectFile &obj) {
  auto sections = noteSections(obj);
  if (!sections)
    return sections.takeError();
  std::vector<std::string> out;
  for (const NoteSection &sec : *sections)
    for (const RawNote &note : sec.notes) {
      if (!isMetadata(note))
        continue;
      msgpack::Document doc;
      if (Error e = readDocument(doc, note.desc, sec.name))
        return std::move(e);
      if (Error e = forEachSymbolNode(doc, sec.name, [&](msgpack::DocNode &n) {
            out.push_back(n.getString().str());
          }))
        return std::move(e);
    }
  return out;
}

Expected<std::vector<SectionUpdate>>
rewriteAmdgpuMetadata(const ELF64LEObjectFile &obj,
                      const SymbolRenamer &rename) {
  auto sections = noteSections(obj);
  if (!sections)
    return sections.takeError();
  std::vector<SectionUpdate> out;
  for (const NoteSection &sec : *sections) {
    std::string contents;
    bool changed = false;
    for (const RawNote &note : sec.notes) {
      contents += note.header;
      if (!isMetadata(note)) {
        contents += note.desc;
        contents += note.padding;
        continue;
      }
      msgpack::Document doc;
      if (Error e = readDocument(doc, note.desc, sec.name))
        return std::move(e);
      bool renamed = false;
      if (Error e = forEachSymbolNode(doc, sec.name, [&](msgpack::DocNode &n) {
            if (auto to = rename(n.getString())) {
              n = doc.getNode(*to, /*Copy=*/true);
              renamed = true;
            }
          }))
        return std::move(e);
      if (!renamed) {
        contents += note.desc;
        contents += note.padding;
        continue;
      }
      std::string desc;
      doc.writeToBlob(desc);
      // descsz sits at offset 4 of the header.
      support::endian::write32le(contents.data() + contents.size() -
                                     note.header.size() + 4,
                                 uint32_t(desc.size()));
      contents += desc;
      contents.append(roundUp(desc.size(), sec.align) - desc.size(), '\0');
      changed = true;
    }
    if (changed)
      out.push_back({sec.name, std::move(contents)});
  }
  return out;
}

} // namespace linkd::rewrite
