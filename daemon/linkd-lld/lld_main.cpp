// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// linkd-lld: the only linkd binary that contains LLD. It is
//   * the link zygote (`__zygote FD`), exec'd by the daemon, and
//   * the one-shot local link or archive command (`link --flavor F
//     [--argv0 NAME] -- ARGS`, F also ar, ranlib or lib), which the client
//     execs when it cannot use the daemon, and
//   * the rewriter (`rewrite ...`, daemon/linkd-lld/rewrite_command.cpp), and
//   * the auditor (`audit ...`, daemon/linkd-lld/audit/audit_command.h), and
//   * the incremental relink check and patch (`relink-check`,
//     `relink-patch`, relink_commands.h).
// Keeping LLD out of `linkd` means the gRPC process never maps libLLVM: it
// stays small (idle RSS) and cannot be disturbed by anything LLD does.
#include "child/rewrite_plan.h"
#include "daemon/linkd-lld/archiver_main.h"
#include "daemon/linkd-lld/audit/audit_command.h"
#include "daemon/linkd-lld/link_rewrite.h"
#include "daemon/linkd-lld/lld_entry.h"
#include "daemon/linkd-lld/local_view.h"
#include "daemon/linkd-lld/relink_commands.h"
#include "daemon/linkd-lld/remote_link.h"
#include "daemon/linkd-lld/rewrite_command.h"
#include "daemon/linkd-lld/stock_process.h"
#include "daemon/linkd-lld/zygote.h"
#include "link/flavor.h"

#include "llvm/ADT/StringRef.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

int usageError(const std::string &msg) {
  std::fprintf(stderr,
               "linkd-lld: %s\nusage: linkd-lld link --flavor "
               "elf|coff|macho|wasm|ar|ranlib|lib [--argv0 NAME] "
               "[--rewrite-spec F] [--view DIR] -- "
               "ARGS...\n"
               "       linkd-lld rewrite ... (linkd-lld rewrite --help)\n"
               "       linkd-lld audit PROGRAM [MODULE...] [--search DIR]... "
               "[--json] [--allow FILE]\n"
               "       linkd-lld remote-link INPUT-DIR OUTPUT-DIR (an REAPI "
               "action, docs/farm.md)\n",
               msg.c_str());
  return 2;
}

// The fallback's link-time rewriting: no daemon, no cache, rewritten inputs
// in memory.
std::string rewriteLocally(const std::vector<std::string> &specPaths) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof(cwd)))
    return "cannot get the working directory";
  std::vector<linkd::v1::RewritePlan> plans;
  std::vector<std::vector<std::string>> inputs;
  for (const std::string &specPath : specPaths) {
    std::string error;
    auto spec = linkd::rewrite::loadLinkRewriteSpec(specPath, cwd, &error);
    if (!spec)
      return error;
    plans.push_back(linkd::planFromSpec(*spec));
    inputs.emplace_back();
    for (const auto &in : spec->inputs)
      inputs.back().push_back(in.path);
  }
  if (std::string e = linkd::rewrite::checkSpecsDisjoint(specPaths, inputs);
      !e.empty())
    return e;
  std::vector<const linkd::v1::RewritePlan *> pointers;
  for (const linkd::v1::RewritePlan &plan : plans)
    pointers.push_back(&plan);
  return linkd::applyRewritePlans(pointers);
}

int cmdLink(int argc, char **argv) {
  linkd::LldInvocation inv;
  std::string argv0;
  std::vector<std::string> rewriteSpecs;
  std::string view; // the library's local view (local_view.h)
  int i = 2;
  for (; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc)
      return usageError("missing value for " + std::string(a));
    if (a == "--flavor") {
      auto f = linkd::flavorFromName(argv[++i]);
      if (!f)
        return usageError("unknown flavor " + std::string(argv[i]));
      inv.flavor = *f;
    } else if (a == "--argv0") {
      argv0 = argv[++i];
    } else if (a == "--rewrite-spec") {
      rewriteSpecs.push_back(argv[++i]);
    } else if (a == "--view") {
      view = argv[++i];
    } else {
      return usageError("bad link option " + std::string(a));
    }
  }
  if (inv.flavor == linkd::Flavor::Unspecified)
    return usageError("link needs --flavor");
  // Without --argv0, diagnostics carry the stock tool's name.
  inv.argv.push_back(
      argv0.empty() ? linkd::lldProgramName("x.linkd", inv.flavor) : argv0);
  for (; i < argc; ++i)
    inv.argv.push_back(argv[i]);
  if (!view.empty())
    if (std::string err = linkd::local_view::startLocalView(view);
        !err.empty()) {
      std::fprintf(stderr, "linkd: error: the library's view: %s\n",
                   err.c_str());
      return 1;
    }
  if (!rewriteSpecs.empty())
    if (std::string err = rewriteLocally(rewriteSpecs); !err.empty()) {
      std::fprintf(stderr, "linkd: error: link-time rewriting: %s\n",
                   err.c_str());
      return 1;
    }
  if (linkd::isArchiver(inv.flavor)) {
    linkd::archive::ArchiverInvocation archiver;
    archiver.flavor = inv.flavor;
    archiver.argv = std::move(inv.argv);
    // As InitLLVM in the stock tools (runLldAndExit does it for a link).
    std::vector<std::string> stockArgv = archiver.argv;
    stockArgv[0] = linkd::lldProgramName(stockArgv[0], inv.flavor);
    linkd::StockProcess process(stockArgv);
    linkd::archive::runArchiverAndExit(archiver);
  }
  linkd::runLldAndExit(inv);
}

} // namespace

int main(int argc, char **argv) {
  std::string_view cmd = argc > 1 ? argv[1] : "";
  // The zygote installs no crash handler: each link child installs stock's
  // (daemon/linkd-lld/stock_process.h), and LLVM's can only be added to.
  if (cmd == "__zygote" && argc == 3)
    return linkd::runZygote(std::atoi(argv[2]));
  if (cmd == "link")
    return cmdLink(argc, argv);
  if (cmd == "rewrite")
    return linkd::cmdRewrite(argc, argv);
  if (cmd == "remote-link")
    return linkd::remoteLinkMain(argc, argv);
  if (cmd == "audit")
    return linkd::cmdAudit(argc, argv);
  if (cmd == "relink-check")
    return linkd::cmdRelinkCheck(argc, argv);
  if (cmd == "relink-patch")
    return linkd::cmdRelinkPatch(argc, argv);
  if (cmd == "version" || cmd == "--version") {
    std::printf("%s\n", linkd::lldVersionString().c_str());
    return 0;
  }
  return usageError(cmd.empty() ? "missing command"
                                : "unknown command " + std::string(cmd));
}
