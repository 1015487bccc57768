// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "archive/archive_listing.h"

#include "archive/member_list.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <unistd.h>

#include <algorithm>
#include <map>

namespace linkd::archive {
namespace {

using Child = llvm::object::Archive::Child;

// "rwx" for the three bits of one class of users.
void printPermissions(llvm::raw_ostream &out, unsigned bits) {
  out << ((bits & 4) ? "r" : "-") << ((bits & 2) ? "w" : "-")
      << ((bits & 1) ? "x" : "-");
}

void printLongEntry(ArchiverContext &ctx, const Child &c) {
  llvm::raw_ostream &out = ctx.out;
  unsigned mode = ctx.take(c.getAccessMode());
  printPermissions(out, (mode >> 6) & 7);
  printPermissions(out, (mode >> 3) & 7);
  printPermissions(out, mode & 7);
  out << ' ' << ctx.take(c.getUID());
  out << '/' << ctx.take(c.getGID());
  out << ' '
      << llvm::format("%6llu",
                      static_cast<unsigned long long>(ctx.take(c.getSize())));
  // formatv prints nanosecond time points only.
  llvm::sys::TimePoint<> modified = ctx.take(c.getLastModified());
  out << ' ' << llvm::formatv("{0:%b %e %H:%M %Y}", modified) << ' ';
}

void listMember(ArchiverContext &ctx, const ArCommand &cmd,
                llvm::StringRef name, const Child &c) {
  if (cmd.verbose)
    printLongEntry(ctx, c);
  llvm::raw_ostream &out = ctx.out;
  if (c.getParent()->isThin()) {
    if (!llvm::sys::path::is_absolute(name)) {
      llvm::StringRef dir = llvm::sys::path::parent_path(cmd.archive);
      if (!dir.empty())
        out << llvm::sys::path::convert_to_slash(dir) << '/';
    }
    out << name;
  } else {
    out << name;
    if (cmd.memberOffsets)
      out << " 0x" << llvm::utohexstr(c.getDataOffset(), /*LowerCase=*/true);
  }
  out << '\n';
}

void printMember(ArchiverContext &ctx, const ArCommand &cmd,
                 llvm::StringRef name, const Child &c) {
  if (cmd.verbose)
    ctx.out << "Printing " << name << "\n";
  llvm::StringRef data = ctx.take(c.getBuffer());
  ctx.out.write(data.data(), data.size());
}

void extractMember(ArchiverContext &ctx, const ArCommand &cmd,
                   llvm::StringRef name, const Child &c) {
  llvm::sys::fs::perms mode = ctx.take(c.getAccessMode());
  llvm::SmallString<128> path;
  if (!cmd.outputDir.empty())
    path = cmd.outputDir;
  llvm::sys::path::append(path, llvm::sys::path::filename(name));
  if (cmd.verbose)
    ctx.out << "x - " << path << '\n';
  int fd = -1;
  ctx.check(llvm::sys::fs::openFileForWrite(path, fd,
                                            llvm::sys::fs::CD_CreateAlways,
                                            llvm::sys::fs::OF_None, mode),
            name);
  {
    llvm::raw_fd_ostream file(fd, /*shouldClose=*/false);
    llvm::StringRef data = ctx.take(c.getBuffer());
    file.write(data.data(), data.size());
  }
  if (cmd.originalDates)
    ctx.check(llvm::sys::fs::setLastAccessAndModificationTime(
        fd, ctx.take(c.getLastModified())));
  if (close(fd) != 0)
    ctx.fail("Could not close the file");
}

} // namespace

void readArchive(ArchiverContext &ctx, ArCommand &cmd,
                 llvm::object::Archive &archive) {
  if (cmd.operation == ArOperation::Extract && archive.isThin())
    ctx.fail("extracting from a thin archive is not supported");
  std::vector<std::string> wanted = cmd.members;
  bool filter = !wanted.empty();
  std::map<std::string, int, std::less<>> seen;
  llvm::Error err = llvm::Error::success();
  for (const Child &c : archive.children(err)) {
    llvm::StringRef name = ctx.take(c.getName());
    if (filter) {
      auto it =
          std::find_if(wanted.begin(), wanted.end(), [&](const std::string &w) {
            return sameMemberName(cmd, name, w);
          });
      if (it == wanted.end())
        continue;
      if (cmd.count && ++seen[name.str()] != cmd.count)
        continue;
      wanted.erase(it);
    }
    switch (cmd.operation) {
    case ArOperation::Print:
      printMember(ctx, cmd, name, c);
      break;
    case ArOperation::DisplayTable:
      listMember(ctx, cmd, name, c);
      break;
    case ArOperation::Extract:
      extractMember(ctx, cmd, name, c);
      break;
    default:
      break;
    }
  }
  ctx.check(std::move(err));
  if (wanted.empty())
    return;
  for (const std::string &w : wanted)
    ctx.error("'" + w + "' was not found");
  ctx.exit(1);
}

} // namespace linkd::archive
