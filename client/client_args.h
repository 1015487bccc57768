// The client's own options, taken out of the linker's command line.
//
// Options spelled `--linkd-<name>` are linkd's and never reach LLD (a build
// can pass them through the compiler driver with -Wl,--linkd-no-cache):
//   --linkd-no-cache   do not look up or store this link (as LINKD_NOCACHE=1)
//   --linkd-rewrite=FILE  rewrite the inputs FILE names before linking
//                         (docs/rewrite.md, "Link-time rewriting")
// An unknown --linkd-* option is an error, so that a typo is not silently
// ignored.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace linkd {

struct ClientArgs {
  std::vector<std::string> linkerArgv; // argv[0] and LLD's arguments
  bool noCache = false;
  std::string rewriteSpec; // absolute; empty: no link-time rewriting
  std::optional<std::string> error;
};

ClientArgs parseClientArgs(int argc, char **argv);

} // namespace linkd
