// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/stock_process.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/Signals.h"

namespace linkd {

StockProcess::StockProcess(const std::vector<std::string> &argv)
    : args(argv) {
  for (const std::string &a : args)
    argvPtrs.push_back(a.c_str());
  argvPtrs.push_back(nullptr);
  // InitLLVM's order: the pipe handler before any other handler (LLVM only
  // takes SIGPIPE over when a one-shot function is set), then the program's
  // arguments for the crash banner, then the stack printer.
  llvm::sys::SetOneShotPipeSignalFunction(
      llvm::sys::DefaultOneShotPipeSignalHandler);
  stackPrinter = std::make_unique<llvm::PrettyStackTraceProgram>(
      static_cast<int>(args.size()), argvPtrs.data());
  // (`args.empty() ? "" : args[0]` made a temporary std::string, freed
  // before any crash came: ASan's stack-use-after-return in a link child
  // that crashed.)
  symbolizerArgv0 = args.empty() ? std::string() : args[0];
  llvm::sys::PrintStackTraceOnErrorSignal(symbolizerArgv0);
  llvm::install_out_of_memory_new_handler();
}

StockProcess::~StockProcess() = default;

void StockProcess::rearm(const std::vector<std::string> &argv) {
  stackPrinter.reset();
  args = argv;
  argvPtrs.clear();
  for (const std::string &a : args)
    argvPtrs.push_back(a.c_str());
  argvPtrs.push_back(nullptr);
  stackPrinter = std::make_unique<llvm::PrettyStackTraceProgram>(
      static_cast<int>(args.size()), argvPtrs.data());
}

} // namespace linkd
