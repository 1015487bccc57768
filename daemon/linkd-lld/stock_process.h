// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What the stock tools' `main` sets up before running: LLVM's InitLLVM
// (llvm/lib/Support/InitLLVM.cpp) for the arguments the stock tool would have
// been given. A crash then prints what stock prints, in stock's order: the
// "PLEASE submit a bug report" banner, "Stack dump:" with "Program
// arguments: ...", and the symbolized stack; a write to a closed pipe exits
// with EX_IOERR (74); running out of memory is "LLVM ERROR: out of memory".
//
// A link child installs this after the fork, never the zygote: LLVM runs its
// crash callbacks in the order they were added, and stock adds the banner
// first (PrettyStackTraceProgram) and the stack printer second
// (PrintStackTraceOnErrorSignal); a second PrintStackTraceOnErrorSignal would
// print the stack twice.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class PrettyStackTraceProgram;
} // namespace llvm

namespace linkd {

class StockProcess {
public:
  // `argv`: as the stock tool would see it, argv[0] included. Lives until
  // the process exits (tools never return through their caller's frame).
  explicit StockProcess(const std::vector<std::string> &argv);
  ~StockProcess();
  // The next link of a reused worker (link_worker.h): the crash banner names
  // `argv` from now on. The handlers stay as installed (a second install
  // would print the stack twice).
  void rearm(const std::vector<std::string> &argv);
  StockProcess(const StockProcess &) = delete;
  StockProcess &operator=(const StockProcess &) = delete;

private:
  std::vector<std::string> args;
  std::vector<const char *> argvPtrs;
  // LLVM's signal handler keeps the StringRef it is given, and reads it at
  // a crash (where to look for llvm-symbolizer): set once, never changed.
  std::string symbolizerArgv0;
  std::unique_ptr<llvm::PrettyStackTraceProgram> stackPrinter;
};

} // namespace linkd
