// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What one archiver run shares: the program name its diagnostics carry, its
// two output streams, the archives it has opened (members of a new archive
// point into their buffers until it is written), and llvm-ar's way of
// reporting trouble.
//
// llvm-ar stops at the first error: it prints "<argv[0]>: error: <message>"
// (during an MRI script "... error: script line N: <message>"), after a usage
// error also the help text on stdout, and exits with status 1. The archiver
// runs in a process of its own (a link child, or `linkd-lld link` locally),
// so ending the process is what it does here too: outputs are written to a
// temporary file and renamed, so nothing half-written is left behind.
#pragma once

#include "llvm/ADT/Twine.h"
#include "llvm/Object/Archive.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace linkd::archive {

class ArchiverContext {
public:
  // `toolName`: argv[0] as llvm-ar would print it; `out` is stdout, `err`
  // stderr (colours as the client's terminal).
  ArchiverContext(std::string toolName, llvm::raw_ostream &out,
                  llvm::raw_ostream &err);

  const std::string &toolName() const { return tool; }
  llvm::raw_ostream &out;
  llvm::raw_ostream &err;

  // "<tool>: error: <message>", exit 1.
  [[noreturn]] void fail(const llvm::Twine &message);
  // The same followed by the help text (llvm-ar's usage errors).
  [[noreturn]] void badUsage(const llvm::Twine &message);
  // "<tool>: error: <message>" without ending the run.
  void error(const llvm::Twine &message);
  void warn(const llvm::Twine &message);
  // Nothing if `e` is success; else fails with "<context>: <message>" (or
  // just the message without a context).
  void check(llvm::Error e, const llvm::Twine &context = "");
  void check(std::error_code ec, const llvm::Twine &context = "");
  template <typename T>
  T take(llvm::Expected<T> value, const llvm::Twine &context = "") {
    if (!value)
      check(value.takeError(), context);
    return std::move(*value);
  }
  // Flushes both streams and ends the process.
  [[noreturn]] void exit(int status);

  // The help text llvm-ar prints for this program name: ranlib's if the
  // name's stem contains "ranlib", else ar's if it contains "ar".
  void printHelp();

  // While an MRI script runs, errors carry its line number.
  void beginScript() { inScript = true; }
  void nextScriptLine() { ++scriptLine; }
  void endScript() { inScript = false; }

  // Opens and parses an archive that stays loaded for the rest of the run
  // (its members are added to the new archive by reference).
  llvm::object::Archive &readLibrary(const llvm::Twine &path);

  llvm::StringSaver &strings() { return saver; }

private:
  std::string tool;
  bool inScript = false;
  unsigned scriptLine = 0;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> libraryBuffers;
  std::vector<std::unique_ptr<llvm::object::Archive>> libraries;
  llvm::BumpPtrAllocator alloc;
  llvm::StringSaver saver{alloc};
};

} // namespace linkd::archive
