// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Runs one LLD link in the current process, exactly as the stock `ld.lld`,
// `lld-link`, `ld64.lld` or `wasm-ld` executable would: same driver entry
// (lld::unsafeLldMain with exitEarly), same streams (file descriptors 1 and 2),
// same program name in diagnostics. It never returns: LLD exits the process
// with its status, skipping destructors as the stock tool does.
//
// Callers are a forked link child (daemon/linkd-lld/zygote.cpp) and `linkd link`, the
// one-shot fallback. LLD keeps process-global state and may call fatal(), so
// this must never run in a process that has anything else to do.
#pragma once

#include "link/flavor.h"

#include <memory>
#include <string>
#include <vector>

namespace linkd {

struct LldInvocation {
  Flavor flavor = Flavor::Unspecified;
  // argv as the user invoked the linker, argv[0] included.
  std::vector<std::string> argv;
  // An option of linkd's own (the audit record's map), given to LLD right
  // after the flavor and never shown as the user's: no option before it can
  // take it as its value, and the crash banner lists the user's arguments.
  std::string leadingOption;
  // Treat stderr as a colour terminal even if fd 2 is a pipe (the client's
  // stderr is one): LLD then colours diagnostics as it would for the user.
  bool stderrIsColorTty = false;
};

[[noreturn]] void runLldAndExit(const LldInvocation &inv);

// One link by LLD in this process that returns, for a caller with work to
// do after it (the incremental relink keeps the link's state): the same
// argv, streams and colours as runLldAndExit, with `extraArgs` after the
// user's (never shown as theirs). `printed`: whether LLD wrote anything to
// stdout or stderr. Returns LLD's exit status.
int runLldReturning(const LldInvocation &inv,
                    const std::vector<std::string> &extraArgs, bool *printed);

// LLD in a reusable worker (daemon/linkd-lld/link_worker.h), which runs ELF
// links one after another. Each runs as runLldAndExit runs it, through
// LLD's ELF driver with exitEarly (the stock tool's path: the error limit
// and fatal() end the process), except that when the driver returns with no
// error, link() returns too instead of exiting: LLD's streams are flushed,
// its state is still in place. cleanUp() then frees it as lldMain does
// between two links (CommonLinkerContext::destroy) and puts LLVM's streams
// back as they were. A link with errors ends the process as stock's does.
class WorkerLld {
public:
  WorkerLld();
  ~WorkerLld();
  WorkerLld(const WorkerLld &) = delete;
  WorkerLld &operator=(const WorkerLld &) = delete;

  void link(const LldInvocation &inv); // inv.flavor == Elf
  void cleanUp();
  // False if writing to stdout or stderr failed (the stream keeps the error).
  bool streamsHealthy() const;

private:
  struct State;
  std::unique_ptr<State> s;
};

// What every link does first and that depends on no request, done by a
// pre-forked child (zygote.cpp) before its request arrives: LLD resets every
// LLVM option (cl::ResetAllOptionOccurrences) at the start of each link,
// which writes to the pages holding them, a copy-on-write fault apiece in a
// child fresh from the zygote (~130 per link). Done ahead, those pages are
// the spare's own when LLD writes them again. The options hold their
// defaults both before and after: nothing of a request is involved.
//
// It also starts llvm::parallel's executor, with the thread count LLD uses
// when --threads is not given, so that a link does not wait for its thread
// pool to be created (~0.3 ms of a trivial link, ~0.6 ms of a hello world:
// docs/design.md). The executor's size is fixed when it starts: a request
// that sets its own (setsThreadCount, zygote.cpp) does not go to a spare.
void prepareForLink();

// The number of threads in llvm::parallel's pool as prepareForLink sized
// it (its first thread starts the others in the background).
unsigned toolThreadPoolSize();

// LLD's version line, e.g. "Debian LLD 19.1.7 (compatible with GNU linkers)".
std::string lldVersionString();

} // namespace linkd
