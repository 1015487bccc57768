// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a rewrite does, as data: the matching prefix, the export / import /
// internal prefixes, and explicit renames. No LLVM here: the daemon (which
// never maps libLLVM) parses specs and hashes canonical() for cache keys.
//
// Names in a spec are C-level names: on Mach-O the leading underscore is not
// part of them (`--rename foo=bar` renames `_foo` to `_bar`).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace linkd::rewrite {

struct RewriteSpec {
  // Symbols starting with `match` get it replaced by `exportPrefix` in
  // runtime inputs and by `importPrefix` in kernel inputs. Empty: no match.
  std::string match;
  std::optional<std::string> exportPrefix;
  // Defaults to exportPrefix: kernels then bind to the renamed runtime.
  std::optional<std::string> importPrefix;
  // Prepended to every other external symbol the runtime set defines.
  std::string internalPrefix;
  // OLD -> NEW, applied to every input before the scope rules.
  std::map<std::string, std::string> renames;

  std::string effectiveImportPrefix() const;

  // A stable text form: equal specs give equal strings, in any order of
  // options. Hash it for a spec digest. Note that what a rewrite does to
  // one file also depends on the whole input set (the runtime's defined
  // symbols); see RenameTable::canonical() for the part that includes it.
  std::string canonical() const;
};

// Adds `OLD=NEW` to spec.renames. Empty `error` on success; otherwise the
// reason (no '=', empty side, OLD already renamed differently).
std::string addRename(RewriteSpec &spec, std::string_view oldEqNew);

// A rename file: one OLD=NEW (or "OLD NEW") per line; blank lines and lines
// starting with '#' are ignored. Errors name `fileName` and the line number.
std::string parseRenameFile(RewriteSpec &spec, std::string_view text,
                            std::string_view fileName);

// `s` without leading and trailing white space (spec and rename-file lines).
std::string_view trim(std::string_view s);

// Checks that the spec can do something and its names are sane.
std::string validate(const RewriteSpec &spec);

} // namespace linkd::rewrite
