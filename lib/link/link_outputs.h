// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The files a link may write, from its command line alone.
//
// A farm client writes what a node sends back; a node is trusted with the
// bytes of the outputs, never with where they go. So the client writes only
// files that the same link run here could have written: the paths named by
// the flavor's output options (-o, -Map, --dependency-file, --why-extract,
// --out-implib, /implib:, /pdb:, -dependency_info ...) and the files LLD
// derives from the output's name (lld-link's <stem>.lib and <stem>.pdb,
// <out>.time-trace ...). Anything else, a node has made up.
//
// Paths are spelled as LLD spells them (made absolute with the link's cwd)
// and then tidied only in ways the kernel cannot tell apart ("//" and "/./"
// removed); ".." is kept, so that "d/v/../out" is never taken for "out".
// Options this list does not know make no output allowed: such a link's
// offload fails and it runs here, which is always correct.
#pragma once

#include "link/flavor.h"

#include <set>
#include <string>
#include <vector>

namespace linkd {

struct LinkOutputs {
  std::set<std::string> files; // tidied absolute paths
  std::set<std::string> dirs;  // any file directly inside (split DWARF)
  bool allows(const std::string &tidiedPath) const;
};

// `args` is argv[1..] with response files expanded; `env` the request's.
LinkOutputs linkOutputs(Flavor flavor, const std::vector<std::string> &args,
                        const std::string &cwd,
                        const std::string &reproduceEnv = "");

// `path` without "//", "/./" and a trailing "/."; "" if it is not absolute.
std::string tidyPath(const std::string &path);

} // namespace linkd
