// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/lld_entry.h"

#include "daemon/linkd-lld/client_stderr.h"
#include "daemon/linkd-lld/report_sender.h"
#include "daemon/linkd-lld/stock_process.h"
#include "lld/Common/CommonLinkerContext.h"
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
#include <cerrno>
#include <cstdint>
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

// Where stock's main returns, and the exit flushes llvm::outs(). lldMain has
// destroyed LLD's context by then, so lld::exitLld would not flush it (it
// flushes only while a context exists) before its _exit: the last buffered
// stdout (--help's "supported targets", --print-memory-usage's table) would
// be lost. The streams are flushed here, as that exit does.
[[noreturn]] void exitAsStockReturns(int rc, llvm::raw_ostream &err) {
  llvm::outs().flush();
  err.flush();
  _exit(rc);
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
      lld::exitLld(r.retCode); // as stock: the run could not be undone
    if (!mainRet)
      mainRet = r.retCode;
    else if (r.retCode != *mainRet)
      exitAsStockReturns(r.retCode, err);
  }
  exitAsStockReturns(*mainRet, err);
}

// LLD's argv for `inv`, as the stock tool gets it (its name, -flavor, the
// user's arguments), with `extra` after them; the strings it points into
// live here.
struct LldArgs {
  LldArgs(const LldInvocation &inv, const std::vector<std::string> &extra)
      : progName(lldProgramName(inv.argv.at(0), inv.flavor)),
        flavorArg(lldFlavorArgument(inv.flavor)) {
    // What the stock tool sees: its name and the user's arguments. Its crash
    // banner prints them ("Program arguments: ...").
    stockArgv = {progName};
    stockArgv.insert(stockArgv.end(), inv.argv.begin() + 1, inv.argv.end());
    args = {progName.c_str(), "-flavor", flavorArg.c_str()};
    if (!inv.leadingOption.empty())
      args.push_back(inv.leadingOption.c_str());
    for (size_t i = 1; i < inv.argv.size(); ++i)
      args.push_back(inv.argv[i].c_str());
    for (const std::string &a : extra)
      args.push_back(a.c_str());
  }
  std::string progName, flavorArg;
  std::vector<std::string> stockArgv;
  std::vector<const char *> args;
};

} // namespace

void runLldAndExit(const LldInvocation &inv) {
  LldArgs lld(inv, {});
  StockProcess process(lld.stockArgv);
  std::vector<const char *> &args = lld.args;

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

namespace {

// fd 1 or 2 as LLD writes to it, noting whether anything was written; the
// colours are the client's terminal's (client_stderr.h).
class NotingStream : public llvm::raw_ostream {
public:
  NotingStream(int fd, bool colorTty, bool &wrote)
      : raw_ostream(/*unbuffered=*/true), fd(fd), colorTty(colorTty),
        wrote(wrote) {}
  ~NotingStream() override { flush(); }
  bool has_colors() const override { return colorTty; }
  bool is_displayed() const override { return colorTty; }

private:
  void write_impl(const char *p, size_t n) override {
    wrote = wrote || n > 0;
    pos += n;
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        return; // as raw_fd_ostream on a closed pipe: the link goes on
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  uint64_t current_pos() const override { return pos; }
  int fd;
  bool colorTty;
  bool &wrote;
  uint64_t pos = 0;
};

} // namespace

int runLldReturning(const LldInvocation &inv,
                    const std::vector<std::string> &extraArgs, bool *printed) {
  LldArgs lld(inv, extraArgs);
  StockProcess process(lld.stockArgv);
  std::vector<const char *> &args = lld.args;
  bool wrote = false;
  int rc = 1;
  {
    bool color = inv.stderrIsColorTty || isatty(STDERR_FILENO);
    NotingStream out(STDOUT_FILENO, isatty(STDOUT_FILENO), wrote);
    NotingStream err(STDERR_FILENO, color, wrote);
    child_report::noteTool();
    lld::Result r = lld::lldMain(args, out, err, LLD_ALL_DRIVERS);
    rc = r.retCode;
  }
  if (printed)
    *printed = wrote;
  return rc;
}

// LLD 19's ELF driver keeps 22 pointers in static members (lld::elf::ElfSym
// and lld::elf::Out: _GLOBAL_OFFSET_TABLE_, __rela_iplt_*, _end/_etext/
// _edata, __bss_start, _TLS_MODULE_BASE_, the MIPS _gp symbols, the output
// buffer, the ELF header, the init arrays, ...) that it sets only when a
// link has them and never clears: the next link in the same process would
// see the previous one's, freed by CommonLinkerContext::destroy (an extra
// .got.plt, writes to freed memory, a crash in -r; docs/lld19-reuse-audit.md
// has the audit of LLD 19's sources). A fresh process starts with all of
// them null; so does every link in a worker. They are hidden symbols of
// liblldELF.a, which linkd-lld links statically, named here by their
// mangled names (an LLD without one of them does not link).
} // namespace linkd

namespace linkd_lld_statics {
extern void *elfStatic0 __asm__("_ZN3lld3elf3Out11bufferStartE");
extern void *elfStatic1 __asm__("_ZN3lld3elf3Out12preinitArrayE");
extern void *elfStatic2 __asm__("_ZN3lld3elf3Out14programHeadersE");
extern void *elfStatic3 __asm__("_ZN3lld3elf3Out7tlsPhdrE");
extern void *elfStatic4 __asm__("_ZN3lld3elf3Out9elfHeaderE");
extern void *elfStatic5 __asm__("_ZN3lld3elf3Out9finiArrayE");
extern void *elfStatic6 __asm__("_ZN3lld3elf3Out9initArrayE");
extern void *elfStatic7 __asm__("_ZN3lld3elf6ElfSym10mipsGpDispE");
extern void *elfStatic8 __asm__("_ZN3lld3elf6ElfSym11mipsLocalGpE");
extern void *elfStatic9 __asm__("_ZN3lld3elf6ElfSym11relaIpltEndE");
extern void *elfStatic10 __asm__("_ZN3lld3elf6ElfSym13relaIpltStartE");
extern void *elfStatic11 __asm__("_ZN3lld3elf6ElfSym13tlsModuleBaseE");
extern void *elfStatic12 __asm__("_ZN3lld3elf6ElfSym17globalOffsetTableE");
extern void *elfStatic13 __asm__("_ZN3lld3elf6ElfSym18riscvGlobalPointerE");
extern void *elfStatic14 __asm__("_ZN3lld3elf6ElfSym3bssE");
extern void *elfStatic15 __asm__("_ZN3lld3elf6ElfSym4end1E");
extern void *elfStatic16 __asm__("_ZN3lld3elf6ElfSym4end2E");
extern void *elfStatic17 __asm__("_ZN3lld3elf6ElfSym6edata1E");
extern void *elfStatic18 __asm__("_ZN3lld3elf6ElfSym6edata2E");
extern void *elfStatic19 __asm__("_ZN3lld3elf6ElfSym6etext1E");
extern void *elfStatic20 __asm__("_ZN3lld3elf6ElfSym6etext2E");
extern void *elfStatic21 __asm__("_ZN3lld3elf6ElfSym6mipsGpE");
// lld::elf::target, set only once a link has read its inputs: a linker
// script's PHDRS FLAGS(...) is evaluated while it is parsed, before that,
// and CONSTANT(COMMONPAGESIZE) there is an error only if it is still null.
extern void *elfStatic22 __asm__("_ZN3lld3elf6targetE");
// The guard of postScanRelocations()'s `static Undefined dummy(
// ctx.internalFile, ...)` (the GOT's TLS module index of a local-dynamic
// link): built by the first link that has one, it keeps that link's
// internal file, freed by its clean-up, and a later link that is not
// -shared and not relaxed to local-exec (ARM, RISC-V, LoongArch, Hexagon:
// x86 always relaxes) would put it in its GOT. Reset, the next link that
// reaches it builds it from its own file, as in a fresh process. A local
// symbol in LLD; linkd-lld's build makes it global (CMakeLists.txt).
extern uint64_t
    tlsIndexDummyGuard __asm__("_ZGVZN3lld3elf19postScanRelocationsEvE5dummy");
} // namespace linkd_lld_statics

namespace linkd {
namespace {

void clearElfStatics() {
  void **statics[] = {
    &linkd_lld_statics::elfStatic0,
    &linkd_lld_statics::elfStatic1,
    &linkd_lld_statics::elfStatic2,
    &linkd_lld_statics::elfStatic3,
    &linkd_lld_statics::elfStatic4,
    &linkd_lld_statics::elfStatic5,
    &linkd_lld_statics::elfStatic6,
    &linkd_lld_statics::elfStatic7,
    &linkd_lld_statics::elfStatic8,
    &linkd_lld_statics::elfStatic9,
    &linkd_lld_statics::elfStatic10,
    &linkd_lld_statics::elfStatic11,
    &linkd_lld_statics::elfStatic12,
    &linkd_lld_statics::elfStatic13,
    &linkd_lld_statics::elfStatic14,
    &linkd_lld_statics::elfStatic15,
    &linkd_lld_statics::elfStatic16,
    &linkd_lld_statics::elfStatic17,
    &linkd_lld_statics::elfStatic18,
    &linkd_lld_statics::elfStatic19,
    &linkd_lld_statics::elfStatic20,
    &linkd_lld_statics::elfStatic21,
    &linkd_lld_statics::elfStatic22};
  for (void **p : statics)
    *p = nullptr;
  linkd_lld_statics::tlsIndexDummyGuard = 0;
}
} // namespace

struct WorkerLld::State {
  std::optional<StockProcess> process;
  // LLD's diagnostics stream while a link runs (it keeps a pointer to it
  // until cleanUp).
  std::optional<ClientStderr> colored;
  // LLD sets these from --color-diagnostics; the next link starts from
  // the defaults.
  bool errColors = llvm::errs().colors_enabled();
  bool outColors = llvm::outs().colors_enabled();
};

WorkerLld::WorkerLld() : s(std::make_unique<State>()) {}
WorkerLld::~WorkerLld() = default;

void WorkerLld::link(const LldInvocation &inv) {
  std::string progName = lldProgramName(inv.argv.at(0), inv.flavor);
  std::vector<std::string> stockArgv = {progName};
  stockArgv.insert(stockArgv.end(), inv.argv.begin() + 1, inv.argv.end());
  if (s->process)
    s->process->rearm(stockArgv);
  else
    s->process.emplace(stockArgv);
  // As runLldAndExit's, without "-flavor gnu": lld::unsafeLldMain would
  // remove it before calling the driver, as here nobody does.
  std::vector<const char *> args;
  args.reserve(inv.argv.size() + 1);
  args.push_back(progName.c_str());
  if (!inv.leadingOption.empty())
    args.push_back(inv.leadingOption.c_str());
  for (size_t i = 1; i < inv.argv.size(); ++i)
    args.push_back(inv.argv[i].c_str());
  llvm::raw_ostream *err = &llvm::errs();
  if (inv.stderrIsColorTty && !isatty(STDERR_FILENO))
    err = &s->colored.emplace(true);
  clearElfStatics();
  child_report::noteTool();
  // lld::unsafeLldMain, for the ELF driver, without its exitLld at the end.
  bool ok = lld::elf::link(args, llvm::outs(), *err, /*exitEarly=*/true,
                           /*disableOutput=*/false);
  if (!ok)
    lld::exitLld(1);
  // What exitLld does before it exits.
  lld::errorHandler().flushStreams();
}

void WorkerLld::cleanUp() {
  lld::CommonLinkerContext::destroy();
  s->colored.reset();
  llvm::errs().enable_colors(s->errColors);
  llvm::outs().enable_colors(s->outColors);
}

bool WorkerLld::streamsHealthy() const {
  return !llvm::outs().has_error() && !llvm::errs().has_error();
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

unsigned toolThreadPoolSize() {
  return llvm::parallel::strategy.compute_thread_count();
}

std::string lldVersionString() { return lld::getLLDVersion(); }

} // namespace linkd
