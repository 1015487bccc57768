#include "daemon/linkd-lld/lld_entry.h"

#include "daemon/linkd-lld/child_report.h"
#include "daemon/linkd-lld/client_stderr.h"
#include "daemon/linkd-lld/stock_process.h"
#include "lld/Common/Driver.h"
#include "lld/Common/ErrorHandler.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <unistd.h>

LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)
LLD_HAS_DRIVER(macho)
LLD_HAS_DRIVER(wasm)

namespace lld {
// Defined in lld/Common/DriverDispatcher.cpp and used by the stock `lld`
// executable, but not declared in an installed header. Unlike lldMain it
// supports exitEarly, the code path (and the speed) of the stock tool.
int unsafeLldMain(llvm::ArrayRef<const char *> args,
                  llvm::raw_ostream &stdoutOS, llvm::raw_ostream &stderrOS,
                  llvm::ArrayRef<DriverDef> drivers, bool exitEarly);
// lld/Common/Version.h includes a Version.inc that Debian does not ship.
std::string getLLDVersion();
// lld/Common/DriverDispatcher.cpp; the stock main sets it for LLD_IN_TEST.
extern bool inTestOutputDisabled;
} // namespace lld

namespace linkd {

namespace {

// lld/tools/lld/lld.cpp: how many times LLD's own tests ask the tool to run
// the link (0: once, the fast path).
unsigned inTestVerbosity() {
  unsigned v = 0;
  llvm::StringRef(std::getenv("LLD_IN_TEST")).getAsInteger(10, v);
  return v;
}

// The stock `lld` executable's main (lld/tools/lld/lld.cpp, LLVM 19), after
// InitLLVM: the forced crash, then either the fast path or LLD_IN_TEST's
// repeated runs with output only from the last.
[[noreturn]] void lldMainAndExit(llvm::ArrayRef<const char *> args,
                                 llvm::raw_ostream &err) {
  if (std::getenv("FORCE_LLD_DIAGNOSTICS_CRASH")) {
    llvm::errs()
        << "crashing due to environment variable FORCE_LLD_DIAGNOSTICS_CRASH\n";
    LLVM_BUILTIN_TRAP;
  }
  if (!inTestVerbosity()) {
    int rc = lld::unsafeLldMain(args, llvm::outs(), err, LLD_ALL_DRIVERS,
                                /*exitEarly=*/true);
    // Not reached for a valid flavor: exitEarly exits the process.
    llvm::outs().flush();
    err.flush();
    _exit(rc);
  }
  std::optional<int> mainRet;
  llvm::CrashRecoveryContext::Enable();
  for (unsigned i = inTestVerbosity(); i > 0; --i) {
    lld::inTestOutputDisabled = (i != 1);
    lld::Result r = lld::lldMain(args, llvm::outs(), err, LLD_ALL_DRIVERS);
    if (!r.canRunAgain)
      lld::exitLld(r.retCode);
    if (!mainRet)
      mainRet = r.retCode;
    else if (r.retCode != *mainRet)
      lld::exitLld(r.retCode);
  }
  lld::exitLld(*mainRet);
}

} // namespace

void runLldAndExit(const LldInvocation &inv) {
  std::string progName = lldProgramName(inv.argv.at(0), inv.flavor);
  // What the stock tool sees: its name and the user's arguments. Its crash
  // banner prints them ("Program arguments: ...").
  std::vector<std::string> stockArgv = {progName};
  stockArgv.insert(stockArgv.end(), inv.argv.begin() + 1, inv.argv.end());
  StockProcess process(stockArgv);

  std::vector<const char *> args;
  args.reserve(inv.argv.size() + 2);
  args.push_back(progName.c_str());
  args.push_back("-flavor");
  std::string flavorArg(lldFlavorArgument(inv.flavor));
  args.push_back(flavorArg.c_str());
  for (size_t i = 1; i < inv.argv.size(); ++i)
    args.push_back(inv.argv[i].c_str());

  // Stock lld writes diagnostics to llvm::errs() (fd 2, unbuffered) and
  // normal output to llvm::outs() (fd 1). Only the colour decision differs
  // when fd 2 is our pipe rather than the user's terminal. (outs() buffers
  // on our pipe where stock's would not on a terminal; LLD flushes it after
  // every message, so the order of the two streams is the same.)
  // `colored` lives on this frame, which LLD never returns through.
  llvm::raw_ostream *err = &llvm::errs();
  std::optional<ClientStderr> colored;
  if (inv.stderrIsColorTty && !isatty(STDERR_FILENO))
    err = &colored.emplace(true);
  child_report::noteTool();
  lldMainAndExit(args, *err);
}

void prepareForLink() {
  llvm::cl::ResetAllOptionOccurrences();
  // Starts llvm::parallel's executor (its threads) with the default
  // strategy, as LLD's first parallel loop would: one per hardware thread,
  // at most 16 (LLD's own cap without --threads).
  llvm::parallel::strategy = llvm::hardware_concurrency(
      std::min(llvm::hardware_concurrency().compute_thread_count(), 16u));
  llvm::parallelFor(0, 2, [](size_t) {});
}

std::string lldVersionString() { return lld::getLLDVersion(); }

} // namespace linkd
