// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "archive/member_list.h"

#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

namespace linkd::archive {
namespace {

using llvm::NewArchiveMember;
using llvm::StringRef;
using Members = std::vector<NewArchiveMember>;

std::string memberKey(const ArCommand &cmd, StringRef path) {
  return cmd.compareFullPath ? llvm::sys::path::convert_to_slash(path)
                             : llvm::sys::path::filename(path).str();
}

// A thin archive's member name for a file: its path relative to the
// archive's directory, or as given when that cannot be computed.
StringRef thinMemberName(ArchiverContext &ctx, const ArCommand &cmd,
                         StringRef path) {
  if (llvm::sys::path::is_absolute(path))
    return ctx.strings().save(llvm::sys::path::convert_to_slash(path));
  llvm::Expected<std::string> rel =
      llvm::computeArchiveRelativePath(cmd.archive, path);
  if (rel)
    return ctx.strings().save(*rel);
  llvm::consumeError(rel.takeError());
  return ctx.strings().save(llvm::sys::path::convert_to_slash(path));
}

bool isArchive(const NewArchiveMember &m) {
  return llvm::identify_magic(m.Buf->getBuffer()) == llvm::file_magic::archive;
}

// Appends the members of `lib` instead of `lib` itself where llvm-ar
// flattens; false if it keeps the archive as one member.
bool appendLibraryMembers(ArchiverContext &ctx, const ArCommand &cmd,
                          Members &members, llvm::object::Archive &lib) {
  if (cmd.thin && !lib.isThin())
    return false;
  llvm::Error err = llvm::Error::success();
  for (const auto &child : lib.children(err))
    appendOldMember(ctx, cmd, members, child, /*flatten=*/cmd.thin);
  ctx.check(std::move(err));
  return true;
}

// What the update does with one existing member.
enum class Fate { Keep, Drop, MoveOld, UseFile, MoveFile };

struct Walk {
  ArchiverContext &ctx;
  const ArCommand &cmd;
  std::vector<std::string> pending; // command-line names not used up yet
  std::map<std::string, int, std::less<>> seen; // for N
  Members kept, moved;
  std::optional<size_t> insertAt;

  // The first pending name that matches `name`.
  std::vector<std::string>::iterator match(StringRef name) {
    return std::find_if(
        pending.begin(), pending.end(), [&](const std::string &path) {
          if (cmd.thin && !llvm::sys::path::is_absolute(path)) {
            llvm::Expected<std::string> rel =
                llvm::computeArchiveRelativePath(cmd.archive, path);
            if (rel)
              return sameMemberName(cmd, name, *rel);
            llvm::consumeError(rel.takeError());
          }
          return sameMemberName(cmd, name, path);
        });
  }

  // r with u: the file replaces the member only if it is not older.
  bool fileIsOlder(const std::string &path,
                   const llvm::object::Archive::Child &child) {
    llvm::sys::fs::file_status status;
    ctx.check(llvm::sys::fs::status(path, status), path);
    auto memberTime = ctx.take(child.getLastModified());
    return status.getLastModificationTime() < memberTime;
  }

  Fate fateOf(const llvm::object::Archive::Child &child, StringRef name,
              const std::string &path) {
    bool positioned = !cmd.relPos.empty();
    switch (cmd.operation) {
    case ArOperation::Delete:
      if (cmd.count && ++seen[name.str()] != cmd.count)
        return Fate::Keep;
      return Fate::Drop;
    case ArOperation::Move:
      return Fate::MoveOld;
    case ArOperation::ReplaceOrInsert:
      if (cmd.onlyUpdate && fileIsOlder(path, child))
        return positioned ? Fate::MoveOld : Fate::Keep;
      return positioned ? Fate::MoveFile : Fate::UseFile;
    default:
      return Fate::Keep;
    }
  }

  void visit(const llvm::object::Archive::Child &child) {
    size_t here = kept.size();
    StringRef name = ctx.take(child.getName());
    if (!cmd.relPos.empty() && sameMemberName(cmd, name, cmd.relPos))
      insertAt = cmd.addBefore ? here : here + 1;
    auto it = pending.end();
    Fate fate = Fate::Keep;
    if (cmd.operation != ArOperation::QuickAppend && !pending.empty()) {
      it = match(name);
      if (it != pending.end())
        fate = fateOf(child, name, *it);
    }
    switch (fate) {
    case Fate::Keep:
      appendOldMember(ctx, cmd, kept, child, /*flatten=*/cmd.thin);
      break;
    case Fate::Drop:
      break;
    case Fate::MoveOld:
      appendOldMember(ctx, cmd, moved, child, /*flatten=*/cmd.thin);
      break;
    case Fate::UseFile:
      kept.push_back(memberFromFile(ctx, cmd, *it));
      break;
    case Fate::MoveFile:
      moved.push_back(memberFromFile(ctx, cmd, *it));
      break;
    }
    // With N a name goes on matching: "dN 2 a.a x.o" deletes the second x.o.
    if (it != pending.end() && !cmd.count)
      pending.erase(it);
  }
};

} // namespace

bool sameMemberName(const ArCommand &cmd, StringRef a, StringRef b) {
  return memberKey(cmd, a) == memberKey(cmd, b);
}

NewArchiveMember memberFromFile(ArchiverContext &ctx, const ArCommand &cmd,
                                StringRef path) {
  NewArchiveMember m =
      ctx.take(NewArchiveMember::getFile(path, cmd.deterministic), path);
  if (cmd.thin)
    m.MemberName = thinMemberName(ctx, cmd, path);
  else
    m.MemberName = llvm::sys::path::filename(m.MemberName);
  return m;
}

void appendFile(ArchiverContext &ctx, const ArCommand &cmd, Members &members,
                StringRef path, bool flatten) {
  NewArchiveMember m = memberFromFile(ctx, cmd, path);
  if (flatten && isArchive(m) &&
      appendLibraryMembers(ctx, cmd, members, ctx.readLibrary(path)))
    return;
  members.push_back(std::move(m));
}

void appendOldMember(ArchiverContext &ctx, const ArCommand &cmd,
                     Members &members,
                     const llvm::object::Archive::Child &child, bool flatten) {
  NewArchiveMember m =
      ctx.take(NewArchiveMember::getOldMember(child, cmd.deterministic));
  if (cmd.thin && flatten) {
    std::string name = ctx.take(child.getName()).str();
    if (llvm::sys::path::is_absolute(name))
      m.MemberName =
          ctx.strings().save(llvm::sys::path::convert_to_slash(name));
    else
      m.MemberName = thinMemberName(ctx, cmd, ctx.take(child.getFullName()));
  }
  if (flatten && isArchive(m)) {
    std::string path = ctx.take(child.getFullName());
    if (appendLibraryMembers(ctx, cmd, members, ctx.readLibrary(path)))
      return;
  }
  members.push_back(std::move(m));
}

std::vector<NewArchiveMember> planMembers(ArchiverContext &ctx,
                                          const ArCommand &cmd,
                                          llvm::object::Archive *old) {
  Walk walk{ctx, cmd, cmd.members, {}, {}, {}, std::nullopt};
  if (old) {
    llvm::Error err = llvm::Error::success();
    for (const auto &child : old->children(err))
      walk.visit(child);
    ctx.check(std::move(err));
  }
  if (cmd.operation == ArOperation::Delete)
    return std::move(walk.kept);
  if (!cmd.relPos.empty() && !walk.insertAt)
    ctx.fail("insertion point not found");
  Members &out = walk.kept;
  size_t at = cmd.relPos.empty() ? out.size() : *walk.insertAt;
  out.insert(out.begin() + at, std::make_move_iterator(walk.moved.begin()),
             std::make_move_iterator(walk.moved.end()));
  if (cmd.addLibrary) {
    for (const std::string &path : walk.pending)
      appendFile(ctx, cmd, out, path, /*flatten=*/true);
    return std::move(out);
  }
  Members added;
  for (const std::string &path : walk.pending)
    appendFile(ctx, cmd, added, path, /*flatten=*/cmd.thin);
  out.insert(out.begin() + at, std::make_move_iterator(added.begin()),
             std::make_move_iterator(added.end()));
  return std::move(out);
}

} // namespace linkd::archive
