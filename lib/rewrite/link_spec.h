// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A link-time rewrite spec: the file named by `--linkd-rewrite=FILE` on a
// link. It says which of the link's inputs are a runtime, which are kernels
// built against it, and the prefixes; the daemon rewrites those inputs
// before LLD reads them (docs/rewrite.md, "Link-time rewriting").
//
//   # comments and blank lines are ignored
//   match = halide_
//   export-prefix = rtA_
//   import-prefix = rtA_          (default: the export prefix)
//   internal-prefix = rtAi_
//   rename = OLD=NEW              (repeatable)
//   rename-file = renames.txt     (repeatable)
//   runtime = libHalideRuntime.a  (repeatable: the runtime set)
//   kernel = kernel_a.o           (repeatable)
//   input = other.o               (explicit renames only)
//
// Relative paths are relative to the spec file's directory. The same
// vocabulary as `linkd rewrite`'s options. No LLVM here: the daemon parses
// specs and keys the rewritten objects it caches.
#pragma once

#include "rewrite/rename_table.h"
#include "rewrite/rewrite_spec.h"

#include <optional>
#include <string>
#include <vector>

namespace linkd::rewrite {

struct LinkRewriteSpec {
  RewriteSpec spec;
  struct Input {
    std::string path; // absolute
    Scope scope = Scope::Other;
  };
  std::vector<Input> inputs;
  // The spec file and the rename files it named (absolute): inputs of the
  // link as far as the link cache is concerned.
  std::vector<std::string> specFiles;
};

// Reads and checks the spec at `path` (relative to `cwd` unless absolute).
// Errors name the file and line.
std::optional<LinkRewriteSpec> loadLinkRewriteSpec(const std::string &path,
                                                   const std::string &cwd,
                                                   std::string *error);

// Several specs in one link (-Wl,--linkd-rewrite= given more than once):
// each rewrites its own inputs. LLD opens a file by any name and reads the
// one rewritten form of it, so a file (by device and inode) that two specs
// name could only follow one of them: "" if no file is an input of two
// specs, else an error naming the file and both specs. `specPaths[i]` is
// spec i's file, `inputs[i]` its inputs (absolute).
std::string
checkSpecsDisjoint(const std::vector<std::string> &specPaths,
                   const std::vector<std::vector<std::string>> &inputs);

} // namespace linkd::rewrite
