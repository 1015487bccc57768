// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "archive/mri_script.h"

#include "archive/archive_update.h"
#include "archive/member_list.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LineIterator.h"
#include "llvm/Support/MemoryBuffer.h"

#include <vector>

namespace linkd::archive {
namespace {

enum class Command {
  AddLib,
  AddMod,
  Create,
  CreateThin,
  Delete,
  Save,
  End,
  Unknown
};

Command commandNamed(llvm::StringRef word) {
  std::string w = word.lower();
  if (w == "addlib")
    return Command::AddLib;
  if (w == "addmod")
    return Command::AddMod;
  if (w == "create")
    return Command::Create;
  if (w == "createthin")
    return Command::CreateThin;
  if (w == "delete")
    return Command::Delete;
  if (w == "save")
    return Command::Save;
  if (w == "end")
    return Command::End;
  return Command::Unknown;
}

struct Script {
  ArchiverContext &ctx;
  ArCommand &cmd;
  std::vector<llvm::NewArchiveMember> members;
  bool opened = false;
  bool saved = false;

  void requireArchive() {
    if (!opened)
      ctx.fail("no output archive has been opened");
  }

  void run(Command command, llvm::StringRef word, llvm::StringRef arg) {
    switch (command) {
    case Command::AddLib: {
      requireArchive();
      llvm::object::Archive &lib = ctx.readLibrary(arg);
      if (cmd.thin && !lib.isThin())
        ctx.fail("cannot add a regular archive's contents to a thin archive");
      llvm::Error err = llvm::Error::success();
      for (const auto &child : lib.children(err))
        appendOldMember(ctx, cmd, members, child, /*flatten=*/cmd.thin);
      ctx.check(std::move(err));
      break;
    }
    case Command::AddMod:
      requireArchive();
      appendFile(ctx, cmd, members, arg, /*flatten=*/false);
      break;
    case Command::CreateThin:
    case Command::Create:
      if (command == Command::CreateThin)
        cmd.thin = true;
      opened = true;
      if (!cmd.archive.empty())
        ctx.fail("editing multiple archives not supported");
      if (saved)
        ctx.fail("file already saved");
      cmd.archive = arg.str();
      if (cmd.archive.empty())
        ctx.fail("missing archive name");
      break;
    case Command::Delete:
      std::erase_if(members, [&](const llvm::NewArchiveMember &m) {
        return sameMemberName(cmd, m.MemberName, arg);
      });
      break;
    case Command::Save:
      saved = true;
      break;
    case Command::End:
      break;
    case Command::Unknown:
      ctx.fail("unknown command: " + word);
    }
  }
};

} // namespace

void runMriScript(ArchiverContext &ctx, ArCommand &cmd) {
  auto input = llvm::MemoryBuffer::getSTDIN();
  ctx.check(input.getError());
  Script script{ctx, cmd, {}, false, false};
  ctx.beginScript();
  for (llvm::line_iterator line(**input, /*SkipBlanks=*/false), end;
       line != end; ++line) {
    ctx.nextScriptLine();
    llvm::StringRef text = line->split(';').first.split('*').first.trim();
    if (text.empty())
      continue;
    auto [word, arg] = text.split(' ');
    arg = arg.trim();
    if (!arg.empty() && arg.front() == '"' && arg.back() == '"')
      arg = arg.size() >= 2 ? arg.drop_front().drop_back() : llvm::StringRef();
    script.run(commandNamed(word), word, arg);
  }
  ctx.endScript();
  if (script.saved) {
    cmd.operation = ArOperation::ReplaceOrInsert;
    writeUpdatedArchive(ctx, cmd, nullptr, nullptr, &script.members);
  }
  ctx.exit(0);
}

} // namespace linkd::archive
