// Loading, scanning and writing back the inputs of a rewrite (input_set.h).
#include "rewrite/input_set.h"

#include "rewrite/object_rewriter.h"

#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <deque>
#include <map>

namespace linkd::rewrite {

using namespace llvm;
using namespace llvm::object;

namespace {

Error joined(const std::vector<std::string> &messages) {
  std::string all;
  for (const std::string &m : messages)
    all += (all.empty() ? "" : "\n") + m;
  return createStringError(inconvertibleErrorCode(), all);
}

std::string memberName(const std::string &archive, StringRef member) {
  return archive + "(" + member.str() + ")";
}

std::string fileName(StringRef path) { return sys::path::filename(path).str(); }

} // namespace

Error InputSet::loadArchive(Loaded &loaded, const std::string &name,
                            std::vector<std::string> &errors) {
  Expected<std::unique_ptr<Archive>> archive =
      Archive::create(loaded.input.buffer);
  if (!archive)
    return createStringError(inconvertibleErrorCode(),
                             name + ": " + toString(archive.takeError()));
  loaded.archive = std::move(*archive);
  Error err = Error::success();
  size_t index = 0;
  for (const Archive::Child &child : loaded.archive->children(err)) {
    ++index;
    Expected<StringRef> mname = child.getName();
    std::string display = memberName(
        name, mname ? *mname : StringRef("member #" + std::to_string(index)));
    if (!mname)
      consumeError(mname.takeError());
    Expected<MemoryBufferRef> buf = child.getMemoryBufferRef();
    if (!buf) {
      errors.push_back(display + ": " + toString(buf.takeError()));
      continue;
    }
    Expected<InputKind> kind = classify(*buf, display);
    if (kind && *kind == InputKind::Archive)
      kind = createStringError(inconvertibleErrorCode(),
                               display + ": nested archives are not supported");
    if (!kind) {
      errors.push_back(toString(kind.takeError()));
      continue;
    }
    Unit unit{*buf, *kind, std::nullopt, child};
    if (*kind != InputKind::CoffImport) {
      Expected<ScannedObject> s =
          scanObject(*buf, *kind, display, loaded.input.scope);
      if (!s) {
        errors.push_back(toString(s.takeError()));
        continue;
      }
      unit.scanned = std::move(*s);
    }
    loaded.units.push_back(std::move(unit));
  }
  if (err)
    return createStringError(
        inconvertibleErrorCode(),
        name + ": corrupt archive: " + toString(std::move(err)));
  return Error::success();
}

Expected<InputSet> InputSet::load(ArrayRef<RewriteInput> inputs) {
  InputSet set;
  std::vector<std::string> errors;
  for (const RewriteInput &in : inputs) {
    std::string name = in.buffer.getBufferIdentifier().str();
    Expected<InputKind> kind = classify(in.buffer, name);
    if (!kind) {
      errors.push_back(toString(kind.takeError()));
      continue;
    }
    Loaded loaded{in, *kind, nullptr, {}};
    if (*kind == InputKind::Archive) {
      if (Error e = loadArchive(loaded, name, errors))
        errors.push_back(toString(std::move(e)));
    } else if (*kind == InputKind::CoffImport) {
      errors.push_back(name + ": is a COFF short import object; only "
                              "relocatable objects and archives are rewritten");
    } else {
      Expected<ScannedObject> s = scanObject(in.buffer, *kind, name, in.scope);
      if (!s)
        errors.push_back(toString(s.takeError()));
      else
        loaded.units.push_back({in.buffer, *kind, std::move(*s), std::nullopt});
    }
    set.inputs_.push_back(std::move(loaded));
  }
  if (!errors.empty())
    return joined(errors);
  return std::move(set);
}

std::vector<ScannedObject> InputSet::scannedObjects() const {
  std::vector<ScannedObject> out;
  for (const Loaded &in : inputs_)
    for (const Unit &unit : in.units)
      if (unit.scanned)
        out.push_back(*unit.scanned);
  return out;
}

Expected<RewriteOutput> InputSet::rewriteInput(size_t index,
                                               const RenameTable &table) const {
  const Loaded &in = inputs_.at(index);
  if (in.archive)
    return rewriteArchive(in, table);
  const Unit &unit = in.units.at(0);
  Expected<std::string> bytes =
      rewriteObject(unit.buffer, unit.kind, *unit.scanned, table);
  if (!bytes)
    return bytes.takeError();
  std::string name = in.input.buffer.getBufferIdentifier().str();
  return RewriteOutput{name, {{fileName(name), std::move(*bytes)}}};
}

Expected<RewriteOutput>
InputSet::rewriteArchive(const Loaded &in, const RenameTable &table) const {
  std::string name = in.input.buffer.getBufferIdentifier().str();
  bool thin = in.archive->isThin();
  RewriteOutput out{name, {{fileName(name), {}}}};
  std::vector<NewArchiveMember> members;
  std::vector<std::string> errors;
  std::map<std::string, int> thinNames;
  // MemberName is a StringRef: getOldMember points it into the old Buf,
  // which is replaced below; the names live here instead.
  std::deque<std::string> names;
  out.files.reserve(in.units.size() + 1);
  for (const Unit &unit : in.units) {
    Expected<NewArchiveMember> member =
        NewArchiveMember::getOldMember(*unit.child, /*Deterministic=*/true);
    if (!member) {
      errors.push_back(name + ": " + toString(member.takeError()));
      continue;
    }
    std::string bytes = unit.buffer.getBuffer().str(); // import members as-is
    if (unit.scanned) {
      Expected<std::string> b =
          rewriteObject(unit.buffer, unit.kind, *unit.scanned, table);
      if (!b) {
        errors.push_back(toString(b.takeError()));
        continue;
      }
      bytes = std::move(*b);
    }
    if (thin) {
      // A new file next to the new archive; the original stays untouched.
      std::string base = fileName(member->MemberName);
      int n = thinNames[base]++;
      std::string rel = fileName(name) + ".members/" +
                        (n ? std::to_string(n) + "-" : "") + base;
      out.files.push_back({rel, bytes});
      names.push_back(rel);
    } else {
      names.push_back(member->MemberName.str());
    }
    member->MemberName = names.back();
    member->Buf = MemoryBuffer::getMemBufferCopy(bytes, member->MemberName);
    members.push_back(std::move(*member));
  }
  if (!errors.empty())
    return joined(errors);
  Expected<std::unique_ptr<MemoryBuffer>> archive = writeArchiveToBuffer(
      members, SymtabWritingMode::NormalSymtab, in.archive->kind(),
      /*Deterministic=*/true, thin);
  if (!archive)
    return createStringError(
        inconvertibleErrorCode(),
        name + ": writing the archive: " + toString(archive.takeError()));
  out.files[0].contents = (*archive)->getBuffer().str();
  return std::move(out);
}

} // namespace linkd::rewrite
