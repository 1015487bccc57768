// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The thin client: ld.linkd, ld64.linkd, lld-link.linkd, wasm-ld.linkd, and
// the archivers ar.linkd, ranlib.linkd, lib.linkd (and any symlink with a
// stock tool's name, `lld` with `-flavor F` included). It stays small and
// never loads LLVM: the whole point is to skip what a stock linker process
// pays at start-up.
//
//   1. flavor from a leading `-flavor F` or argv[0], as LLD (or llvm-ar)
//      decides it;
//   2. take out linkd's own --linkd-* options (--linkd-version and
//      --linkd-help are answered here); read stdin if the tool will (an
//      llvm-ar MRI script);
//      LINKD_DISABLE=1, or a link the daemon cannot reproduce: link locally;
//   3. find or start the daemon;
//   4. link through it on the framed wire (lib/wire/link_wire.h: one
//      connect, no gRPC), replaying its stdout/stderr, exiting with its
//      status;
//   5. on any daemon failure, link locally (same LLD, same bytes).
#include "client/autostart.h"
#include "client/client_args.h"
#include "client/daemon_link.h"
#include "client/fallback.h"
#include "config/env_flag.h"
#include "config/runtime_paths.h"
#include "link/daemon_constraints.h"
#include "link/flavor.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

namespace {

// The tool to be, as stock LLD (or llvm-ar) decides it: LLD's leading
// `-flavor F`, else the program name. nullopt after printing what stock
// prints (exit status 1).
std::optional<linkd::Flavor> programFlavor(std::vector<std::string> &argv) {
  std::optional<linkd::Flavor> flavor = linkd::flavorFromProgramName(argv[0]);
  if (!flavor || !linkd::isArchiver(*flavor)) {
    linkd::LeadingFlavor leading = linkd::takeLeadingFlavor(argv);
    if (!leading.error.empty()) {
      std::fprintf(stderr, "%s\n", leading.error.c_str());
      return std::nullopt;
    }
    if (leading.flavor)
      return leading.flavor;
  }
  if (flavor)
    return flavor;
  if (linkd::isGenericLldName(argv[0]))
    std::fprintf(stderr, "%s\n", linkd::kLldGenericDriverMessage.data());
  else
    std::fprintf(stderr,
                 "linkd: cannot tell the linker flavor from the program name "
                 "'%s'; invoke it as ld.linkd, ld64.linkd, lld-link.linkd, "
                 "wasm-ld.linkd, ar.linkd, ranlib.linkd or lib.linkd, lld "
                 "-flavor F (or a symlink named like the stock tool)\n",
                 argv[0].c_str());
  return std::nullopt;
}

// --linkd-help, --linkd-version: what this client is and what it would use.
int answerItself(const linkd::ClientArgs &args, linkd::Flavor flavor) {
  if (args.action == linkd::ClientArgs::Action::Help) {
    std::fputs(linkd::linkdOptionsHelp().c_str(), stdout);
    return 0;
  }
  linkd::RuntimePaths paths = linkd::resolveRuntimePaths();
  std::printf("linkd %s client (%s, flavor %s)\n  daemon  %s\n"
              "  socket  %s\n",
              LINKD_VERSION, args.linkerArgv[0].c_str(),
              std::string(linkd::flavorName(flavor)).c_str(),
              linkd::daemonBinary().c_str(), paths.socketPath.c_str());
  if (linkd::envFlag("LINKD_DISABLE"))
    std::printf("  LINKD_DISABLE is set: links run locally\n");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  linkd::PhaseTimes times;
  times.main = linkd::PhaseTimes::now();
  // A write to a closed pipe ends LLVM's tools with EX_IOERR (InitLLVM's
  // sys::DefaultOneShotPipeSignalHandler), not with SIGPIPE; the replayed
  // stdout and stderr do the same. exec (the local fallback) resets it.
  struct sigaction pipe {};
  pipe.sa_handler = [](int) { _exit(74); };
  sigaction(SIGPIPE, &pipe, nullptr);
  std::vector<std::string> argVector(argv, argv + argc);
  std::optional<linkd::Flavor> flavor = programFlavor(argVector);
  if (!flavor)
    return 1;
  // `lld-link /lib` (or -lib, any case, first) is llvm-lib: an archive
  // request, cached and counted like lib.linkd's (the archiver runs it as
  // LLD's COFF driver does, linkd-lld/archiver_main.cpp).
  if (*flavor == linkd::Flavor::Coff && argVector.size() > 1 &&
      linkd::isLldLinkLibMode(argVector[1]))
    flavor = linkd::Flavor::Lib;
  linkd::ClientArgs args = linkd::parseClientArgs(argVector);
  if (args.error) {
    std::fprintf(stderr, "linkd: error: %s\n", args.error->c_str());
    return 1;
  }
  if (args.action != linkd::ClientArgs::Action::Link)
    return answerItself(args, *flavor);
  if (linkd::envFlag("LINKD_DISABLE"))
    linkd::execLocalLink(*flavor, args.linkerArgv, std::nullopt,
                         args.rewriteSpecs);
  if (linkd::mustLinkLocally(*flavor, args.linkerArgv))
    linkd::execLocalLink(*flavor, args.linkerArgv, std::nullopt,
                         args.rewriteSpecs);
  if (linkd::readsStdin(*flavor, args.linkerArgv)) {
    args.stdinData = linkd::readAllStdin();
    if (!args.stdinData)
      linkd::execLocalLink(*flavor, args.linkerArgv);
  }

  linkd::RuntimePaths paths = linkd::resolveRuntimePaths();
  if (!paths.squatted.empty() && !linkd::envFlag("LINKD_QUIET"))
    std::fprintf(stderr,
                 "linkd: warning: %s; using the daemon in %s instead "
                 "(remove it, or set XDG_RUNTIME_DIR or LINKD_SOCKET)\n",
                 paths.squatted.c_str(), paths.runtimeDir.c_str());
  bool lasting = false;
  std::string err;
  int daemon = linkd::connectDaemon(paths, err, &lasting);
  if (daemon < 0) {
    if (err != linkd::kNoDaemonInstalled)
      linkd::warnFallback(paths, *flavor, "no linkd daemon (" + err + ")",
                          lasting);
    linkd::execLocalLink(*flavor, args.linkerArgv, args.stdinData,
                         args.rewriteSpecs);
  }
  times.connected = linkd::PhaseTimes::now();
  linkd::DaemonLinkResult r =
      linkd::linkThroughDaemon(daemon, *flavor, args, times);
  times.report();
  if (r.exitCode)
    _exit(*r.exitCode); // all output went out through write(2); skip teardown
  if (r.crashSignal)
    linkd::dieOfSignal(r.crashSignal);
  linkd::warnFallback(paths, *flavor, r.failure);
  linkd::execLocalLink(*flavor, args.linkerArgv, args.stdinData,
                       args.rewriteSpecs);
}
