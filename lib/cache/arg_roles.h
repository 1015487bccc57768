// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The role of each argument of a GNU-style (ELF, Wasm) link, for a key that
// holds files by role and content instead of by name (lib/cache/link_names.h).
//
// From LLD 19's lld/ELF/Options.td and Driver.cpp:
// - Options that take a separate value (-o X, -L X, -soname X, --version-script
//   X, ...): the value is never mistaken for an input.
// - File options: -o/--output, -Map, --dependency-file (outputs);
//   -T/--script, --default-script/-dT, --version-script, --dynamic-list,
//   --just-symbols, --retain-symbols-file, --symbol-ordering-file,
//   --call-graph-ordering-file, --export-dynamic-symbol-list (inputs);
//   -L/--library-path (search directories). Their values are left out of the
//   key, as is every positional input.
// - Options LLD ignores (dropped from the key): -plugin X / --plugin=X,
//   -plugin-opt=-fresolution=X, -plugin-opt=-pass-through=X,
//   -plugin-opt=<path ending in lto-wrapper[.exe]>, -rpath-link X /
//   --rpath-link=X. gcc's collect2 passes the first four on every link, with a
//   fresh /tmp/ccXXXXXX.res each time; LLD never opens any of them.
// - Options whose values match input names (a glob or a library name), so
//   that renaming an input could change the output without the name
//   appearing in it: --exclude-libs (but ALL), -b/--format binary (symbol
//   names are made from the file name), --remap-inputs[-file],
//   --warn-backrefs-exclude, --chroot, ThinLTO's index-only, prefix and
//   suffix options, --lto-obj-path, --save-temps and their -plugin-opt
//   spellings. With any of them nothing is left out.
#pragma once

#include "cache/link_names.h"

#include <string>
#include <vector>

namespace linkd {

struct ArgRoles {
  // The arguments as the key holds them: left-out names replaced by their
  // tokens, ignored options dropped.
  std::vector<std::string> keyArgs;
  std::vector<LeftOutName> names; // numbered "0", "1", ... by first use
  std::vector<std::string> ignored;
  std::string namesMatter; // non-empty: why nothing may be left out
};

// `args`: the expanded arguments after argv[0].
ArgRoles gnuArgRoles(const std::vector<std::string> &args,
                     const std::string &cwd);

} // namespace linkd
