// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The client's own options, taken out of the linker's command line.
//
// Options spelled `--linkd-<name>` are linkd's and never reach LLD (a build
// can pass them through the compiler driver with -Wl,--linkd-no-cache):
//   --linkd-no-cache   do not look up or store this link (as LINKD_NOCACHE=1)
//   --linkd-incremental  patch this link's last output when only objects
//                      changed (as LINKD_INCREMENTAL=1; docs/incremental.md)
//   --linkd-rewrite=FILE  rewrite the inputs FILE names before linking
//                         (docs/rewrite.md, "Link-time rewriting");
//                         repeatable: each spec rewrites its own inputs
//   --linkd-version    say that this is linkd (`--version` is LLD's line, as
//                      build systems expect), and exit
//   --linkd-help       list these, and exit
// An unknown --linkd-* option is an error naming the nearest known one, so
// that a typo is not silently ignored.
#pragma once

#include "link/flavor.h"

#include <optional>
#include <string>
#include <vector>

namespace linkd {

struct ClientArgs {
  std::vector<std::string> linkerArgv; // argv[0] and LLD's arguments
  bool noCache = false;
  // --linkd-incremental or LINKD_INCREMENTAL=1: patch the last output when
  // only objects changed (docs/incremental.md).
  bool incremental = false;
  // Absolute, in the order given; empty: no link-time rewriting.
  std::vector<std::string> rewriteSpecs;
  std::optional<std::string> error;
  // --linkd-version / --linkd-help: answered by the client, no link.
  enum class Action { Link, Version, Help } action = Action::Link;
  // The whole of stdin, read when the tool will read it (an llvm-ar MRI
  // script, `ar -M <script`); it travels with the request, or to the local
  // run if the daemon cannot take it.
  std::optional<std::string> stdinData;
};

// `argv`: argv[0] and the arguments, after LLD's leading `-flavor F`.
ClientArgs parseClientArgs(const std::vector<std::string> &argv);

// What --linkd-help prints: each --linkd-* option, one a line.
std::string linkdOptionsHelp();

// Whether this command reads stdin: llvm-ar's -M, in the arguments or in a
// response file (read with GNU quoting; a script missed here makes the
// daemon answer with an internal error, and the command runs locally).
bool readsStdin(Flavor flavor, const std::vector<std::string> &argv);

// Reads stdin to its end; nullopt if it cannot be read.
std::optional<std::string> readAllStdin();

} // namespace linkd
