// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Loading, scanning and writing back the inputs of a rewrite (input_set.h).
#include "rewrite/input_set.h"
#include "rewrite/errors.h"

#include "rewrite/object_rewriter.h"
#include "rewrite/parallel.h"

#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>
#include <map>

namespace linkd::rewrite {

using namespace llvm;
using namespace llvm::object;

namespace {

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
  // One slot per member, in archive order: its unit or its error.
  struct Slot {
    std::string display, error;
    std::optional<Unit> unit;
  };
  std::vector<Slot> slots;
  Error err = Error::success();
  for (const Archive::Child &child : loaded.archive->children(err)) {
    Expected<StringRef> mname = child.getName();
    Slot &slot = slots.emplace_back();
    slot.display = memberName(
        name, mname ? mname->str() : "member #" + std::to_string(slots.size()));
    if (!mname)
      consumeError(mname.takeError());
    Expected<MemoryBufferRef> buf = child.getMemoryBufferRef();
    if (!buf) {
      slot.error = slot.display + ": " + toString(buf.takeError());
      continue;
    }
    // Archive::Child does not always keep a member inside the archive
    // (fuzzer: a member buffer ending past it, read by the checks below).
    StringRef whole = loaded.input.buffer.getBuffer();
    if (!loaded.archive->isThin() && (buf->getBufferStart() < whole.begin() ||
                                      buf->getBufferEnd() > whole.end())) {
      slot.error =
          slot.display + ": member extends past the end of the archive";
      continue;
    }
    Expected<InputKind> kind = classify(*buf, slot.display);
    if (kind && *kind == InputKind::Archive)
      kind = createStringError(inconvertibleErrorCode(),
                               slot.display +
                                   ": nested archives are not supported");
    if (!kind) {
      slot.error = toString(kind.takeError());
      continue;
    }
    // A short import member is copied as it is, but LLVM's archive writer
    // reads its symbol name with strlen: it must end inside the member (a
    // read past the archive found by the fuzzer).
    if (*kind == InputKind::CoffImport &&
        buf->getBuffer().drop_front(20).count('\0') < 2) {
      slot.error = slot.display + ": COFF import member with an unterminated "
                                  "symbol or DLL name";
      continue;
    }
    slot.unit = Unit{*buf, *kind, std::nullopt, child};
  }
  if (err)
    return createStringError(
        inconvertibleErrorCode(),
        name + ": corrupt archive: " + toString(std::move(err)));
  // Scanning parses every member: on every core.
  forEachIndex(slots.size(), [&](size_t i) {
    Slot &slot = slots[i];
    if (!slot.unit || slot.unit->kind == InputKind::CoffImport)
      return;
    Expected<ScannedObject> s = scanObject(slot.unit->buffer, slot.unit->kind,
                                           slot.display, loaded.input.scope);
    if (s)
      slot.unit->scanned = std::move(*s);
    else
      slot.error = toString(s.takeError());
  });
  for (Slot &slot : slots) {
    if (!slot.error.empty())
      errors.push_back(std::move(slot.error));
    else
      loaded.units.push_back(std::move(*slot.unit));
  }
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

std::vector<const ScannedObject *> InputSet::scannedObjects() const {
  std::vector<const ScannedObject *> out;
  for (const Loaded &in : inputs_)
    for (const Unit &unit : in.units)
      if (unit.scanned)
        out.push_back(&*unit.scanned);
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
  // Every member's new bytes first, on every core; COFF import members are
  // copied as they are.
  std::vector<std::optional<Expected<std::string>>> rewritten(in.units.size());
  forEachIndex(in.units.size(), [&](size_t i) {
    const Unit &unit = in.units[i];
    if (unit.scanned)
      rewritten[i].emplace(
          rewriteObject(unit.buffer, unit.kind, *unit.scanned, table));
  });
  RewriteOutput out{name, {{fileName(name), {}}}};
  std::vector<NewArchiveMember> members;
  std::vector<std::string> errors;
  std::map<std::string, int> thinNames;
  // MemberName is a StringRef: getOldMember points it into the old Buf,
  // which is replaced below; the names live here instead.
  std::deque<std::string> names;
  out.files.reserve(in.units.size() + 1);
  for (size_t i = 0; i < in.units.size(); ++i) {
    const Unit &unit = in.units[i];
    if (rewritten[i] && !*rewritten[i]) {
      errors.push_back(toString(rewritten[i]->takeError()));
      continue;
    }
    Expected<NewArchiveMember> member =
        NewArchiveMember::getOldMember(*unit.child, /*Deterministic=*/true);
    if (!member) {
      errors.push_back(name + ": " + toString(member.takeError()));
      continue;
    }
    StringRef bytes =
        rewritten[i] ? StringRef(**rewritten[i]) : unit.buffer.getBuffer();
    if (thin) {
      // A new file next to the new archive; the original stays untouched.
      std::string base = fileName(member->MemberName);
      int n = thinNames[base]++;
      std::string rel = fileName(name) + ".members/" +
                        (n ? std::to_string(n) + "-" : "") + base;
      out.files.push_back({rel, bytes.str()});
      names.push_back(rel);
    } else {
      names.push_back(member->MemberName.str());
    }
    member->MemberName = names.back();
    // Not a copy: `rewritten` and the input outlive the archive writer.
    member->Buf = MemoryBuffer::getMemBuffer(bytes, member->MemberName,
                                             /*RequiresNullTerminator=*/false);
    members.push_back(std::move(*member));
  }
  if (!errors.empty())
    return joined(errors);
  // Straight into the output string (no second copy of a large archive).
  std::string &bytes = out.files[0].contents;
  bytes.reserve(in.input.buffer.getBufferSize() +
                in.input.buffer.getBufferSize() / 8);
  raw_string_ostream os(bytes);
  if (Error e = writeArchiveToStream(
          os, members, SymtabWritingMode::NormalSymtab, in.archive->kind(),
          /*Deterministic=*/true, thin))
    return createStringError(
        inconvertibleErrorCode(),
        name + ": writing the archive: " + toString(std::move(e)));
  os.flush();
  return std::move(out);
}

} // namespace linkd::rewrite
