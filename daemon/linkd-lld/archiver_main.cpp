// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/archiver_main.h"

#include "archive/ar_command_line.h"
#include "archive/archive_listing.h"
#include "archive/archive_update.h"
#include "archive/archiver_context.h"
#include "archive/mri_script.h"
#include "daemon/linkd-lld/client_stderr.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/ToolDrivers/llvm-lib/LibDriver.h"

#include <unistd.h>

#include <optional>

namespace linkd::archive {
namespace {

// Ends the run where the command line said to stop.
void handleStop(ArchiverContext &ctx, ArStop stop, const std::string &error,
                bool withUsage) {
  switch (stop) {
  case ArStop::None:
    return;
  case ArStop::Help:
    ctx.printHelp();
    ctx.exit(0);
  case ArStop::Version:
    llvm::cl::PrintVersionMessage();
    ctx.exit(0);
  case ArStop::Error:
    if (withUsage)
      ctx.badUsage(error);
    ctx.fail(error);
  }
}

bool createsArchive(ArOperation op) {
  return op == ArOperation::QuickAppend || op == ArOperation::ReplaceOrInsert;
}

void runOperation(ArchiverContext &ctx, ArCommand &cmd,
                  llvm::object::Archive *old,
                  std::unique_ptr<llvm::MemoryBuffer> oldBuffer) {
  switch (cmd.operation) {
  case ArOperation::Print:
  case ArOperation::DisplayTable:
  case ArOperation::Extract:
    readArchive(ctx, cmd, *old);
    return;
  case ArOperation::Delete:
  case ArOperation::Move:
  case ArOperation::QuickAppend:
  case ArOperation::ReplaceOrInsert:
    writeUpdatedArchive(ctx, cmd, old, std::move(oldBuffer), nullptr);
    return;
  case ArOperation::CreateSymTab:
    addSymbolTable(ctx, cmd, *old);
    return;
  case ArOperation::None:
    return;
  }
}

// Opens the archive named on the command line (only q and r create a missing
// one) and runs the operation on it.
void runOnArchiveFile(ArchiverContext &ctx, ArCommand &cmd) {
  auto buffer = llvm::MemoryBuffer::getFile(cmd.archive, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  std::error_code ec = buffer.getError();
  if (ec && ec != std::errc::no_such_file_or_directory)
    ctx.fail("unable to open '" + cmd.archive + "': " + ec.message());
  if (!ec) {
    auto archive = llvm::object::Archive::create((*buffer)->getMemBufferRef());
    if (!archive)
      ctx.check(archive.takeError(), "unable to load '" + cmd.archive + "'");
    if ((*archive)->isThin())
      cmd.compareFullPath = true;
    runOperation(ctx, cmd, archive->get(), std::move(*buffer));
    return;
  }
  if (!createsArchive(cmd.operation))
    ctx.check(ec, "unable to load '" + cmd.archive + "'");
  if (!cmd.create)
    ctx.warn("creating " + cmd.archive);
  runOperation(ctx, cmd, nullptr, nullptr);
}

// llvm-ar expands response files with its own quoting choice, in the
// working directory.
std::vector<std::string> expandedArguments(ArchiverContext &ctx,
                                           const std::vector<std::string> &argv,
                                           RspQuoting quoting) {
  llvm::SmallVector<const char *, 256> args;
  for (size_t i = 1; i < argv.size(); ++i)
    args.push_back(argv[i].c_str());
  llvm::cl::ExpandResponseFiles(ctx.strings(),
                                quoting == RspQuoting::Windows
                                    ? llvm::cl::TokenizeWindowsCommandLine
                                    : llvm::cl::TokenizeGNUCommandLine,
                                args);
  return std::vector<std::string>(args.begin(), args.end());
}

[[noreturn]] void runAr(ArchiverContext &ctx,
                        const std::vector<std::string> &argv,
                        bool stdinAvailable) {
  RspQuotingChoice quoting = arResponseFileQuoting(argv);
  if (quoting.error)
    ctx.fail(*quoting.error);
  ArCommand cmd =
      parseArCommandLine(expandedArguments(ctx, argv, quoting.quoting));
  handleStop(ctx, cmd.stop, cmd.error, cmd.withUsage);
  if (cmd.mri) {
    if (!stdinAvailable)
      ctx.exit(kNeedsStdinStatus);
    runMriScript(ctx, cmd);
  }
  if (!cmd.outputDir.empty()) {
    // create_directories can succeed on a path that is a file's prefix.
    bool isDirectory = false;
    if (!llvm::sys::fs::create_directories(cmd.outputDir))
      llvm::sys::fs::is_directory(cmd.outputDir, isDirectory);
    if (!isDirectory)
      ctx.fail("'" + cmd.outputDir + "' is not a directory");
  }
  runOnArchiveFile(ctx, cmd);
  ctx.exit(0);
}

[[noreturn]] void runRanlib(ArchiverContext &ctx,
                            const std::vector<std::string> &argv) {
  RanlibCommand ranlib = parseRanlibCommandLine(
      std::vector<std::string>(argv.begin() + 1, argv.end()));
  handleStop(ctx, ranlib.stop, ranlib.error, ranlib.withUsage);
  // One command for all archives: like llvm-ranlib, a thin archive met on
  // the way makes the rest "thin" too.
  ArCommand cmd;
  cmd.operation = ArOperation::CreateSymTab;
  cmd.deterministic = ranlib.deterministic;
  for (const std::string &archive : ranlib.archives) {
    cmd.archive = archive;
    runOnArchiveFile(ctx, cmd);
  }
  ctx.exit(0);
}

// llvm-lib, or lld-link's lib mode ("lld-link /lib ARGS"), which LLD runs
// as libDriverMain("/lib" ARGS) and ends, on failure, with its own fatal
// error "lld-link: error: lib failed" (exit status 1).
[[noreturn]] void runLib(std::vector<std::string> argv, bool colorTty) {
  bool lldLink = argv.size() > 1 && isLldLinkLibMode(argv[1]);
  std::string logName;
  if (lldLink) {
    logName = lldProgramName(argv[0], Flavor::Coff);
    logName = logName.substr(logName.find_last_of('/') + 1);
    if (logName.size() > 4 &&
        llvm::StringRef(logName).ends_with_insensitive(".exe"))
      logName.resize(logName.size() - 4);
    argv.erase(argv.begin());
  } else {
    argv.at(0) = lldProgramName(argv[0], Flavor::Lib);
  }
  std::vector<const char *> args;
  for (const std::string &a : argv)
    args.push_back(a.c_str());
  int status = llvm::libDriverMain(args);
  llvm::outs().flush();
  if (lldLink && status != 0) {
    // LLD's ErrorHandler: "error: " in red on a terminal.
    llvm::errs() << logName << ": "
                 << (colorTty ? "\x1b[0;31merror: \x1b[0m" : "error: ")
                 << "lib failed\n";
    status = 1;
  }
  llvm::errs().flush();
  _exit(status);
}

} // namespace

void runArchiverAndExit(const ArchiverInvocation &inv) {
  llvm::InitializeAllTargetInfos();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmParsers();
  if (inv.flavor == Flavor::Lib)
    runLib(inv.argv, inv.stderrIsColorTty);
  std::vector<std::string> argv = inv.argv;
  argv.at(0) = lldProgramName(argv[0], inv.flavor);

  // `colored` lives on this frame, which the run never returns through.
  llvm::raw_ostream *err = &llvm::errs();
  std::optional<ClientStderr> colored;
  if (inv.stderrIsColorTty && !isatty(STDERR_FILENO))
    err = &colored.emplace(true);
  ArchiverContext ctx(argv[0], llvm::outs(), *err);
  if (inv.flavor == Flavor::Ranlib)
    runRanlib(ctx, argv);
  runAr(ctx, argv, inv.stdinAvailable);
}

} // namespace linkd::archive
