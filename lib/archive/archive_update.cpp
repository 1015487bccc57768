// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "archive/archive_update.h"

#include "archive/member_list.h"

#include <optional>

namespace linkd::archive {
namespace {

using Kind = llvm::object::Archive::Kind;

// The kind of the first member's object file, or `otherwise`.
Kind firstMemberKind(const std::vector<llvm::NewArchiveMember> &members,
                     Kind otherwise) {
  return members.empty() ? otherwise : members.front().detectKindFromObject();
}

// --format=default: what llvm-ar infers (see the header).
Kind inferredKind(const ArCommand &cmd, llvm::object::Archive *old,
                  const std::vector<llvm::NewArchiveMember> &members) {
  if (cmd.thin)
    return Kind::K_GNU;
  if (!old)
    return firstMemberKind(members, llvm::object::Archive::getDefaultKind());
  Kind kind = old->kind();
  // Kinds the existing archive cannot tell apart from another.
  std::optional<Kind> alternative;
  if (kind == Kind::K_BSD)
    alternative = Kind::K_DARWIN;
  else if (kind == Kind::K_GNU && !old->hasSymbolTable())
    alternative = Kind::K_COFF;
  if (alternative && firstMemberKind(members, kind) == *alternative)
    return *alternative;
  return kind;
}

Kind archiveKind(ArchiverContext &ctx, const ArCommand &cmd,
                 llvm::object::Archive *old,
                 const std::vector<llvm::NewArchiveMember> &members) {
  auto notThin = [&](Kind k) {
    if (cmd.thin)
      ctx.fail("only the gnu format has a thin mode");
    return k;
  };
  switch (cmd.format) {
  case ArFormat::Default:
    return inferredKind(cmd, old, members);
  case ArFormat::Gnu:
    return Kind::K_GNU;
  case ArFormat::Coff:
    return Kind::K_COFF;
  case ArFormat::Bsd:
    return notThin(Kind::K_BSD);
  case ArFormat::Darwin:
    return notThin(Kind::K_DARWIN);
  case ArFormat::BigArchive:
    return notThin(Kind::K_AIXBIG);
  }
  return Kind::K_GNU;
}

} // namespace

void writeUpdatedArchive(ArchiverContext &ctx, ArCommand &cmd,
                         llvm::object::Archive *old,
                         std::unique_ptr<llvm::MemoryBuffer> oldBuffer,
                         std::vector<llvm::NewArchiveMember> *scriptMembers) {
  if (old) {
    if (cmd.thin && !old->isThin())
      ctx.fail("cannot convert a regular archive to a thin one");
    if (old->isThin())
      cmd.thin = true;
  }
  std::vector<llvm::NewArchiveMember> planned;
  if (!scriptMembers)
    planned = planMembers(ctx, cmd, old);
  const std::vector<llvm::NewArchiveMember> &members =
      scriptMembers ? *scriptMembers : planned;
  Kind kind = archiveKind(ctx, cmd, old, members);
  llvm::SymtabWritingMode symtab = cmd.symtab
                                       ? llvm::SymtabWritingMode::NormalSymtab
                                       : llvm::SymtabWritingMode::NoSymtab;
  ctx.check(llvm::writeArchive(cmd.archive, members, symtab, kind,
                               cmd.deterministic, cmd.thin,
                               std::move(oldBuffer)),
            cmd.archive);
}

void addSymbolTable(ArchiverContext &ctx, ArCommand &cmd,
                    llvm::object::Archive &old) {
  if (old.hasSymbolTable()) {
    if (old.kind() != Kind::K_AIXBIG)
      return;
    // A big archive has a 32-bit and a 64-bit table; `s` writes both
    // unless both are there (even after S).
    auto &big = static_cast<llvm::object::BigArchive &>(old);
    if (cmd.symtab && big.has32BitGlobalSymtab() && big.has64BitGlobalSymtab())
      return;
    cmd.symtab = true;
  }
  if (old.isThin())
    cmd.thin = true;
  writeUpdatedArchive(ctx, cmd, &old, nullptr, nullptr);
}

} // namespace linkd::archive
