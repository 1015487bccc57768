// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The names an ELF (MinGW included) or Wasm link's action key leaves out,
// and how stored text refers to them.
//
// Drivers name a link's files with temp paths (gcc's /tmp/ccXXXXXX.o,
// rustc's per-invocation rustcXXXXXX directory, clang's /tmp/c-XXXXXX.o,
// CMake's TryCompile-XXXXXX working directory, a JIT's tmpXXXX.o and
// tmpYYYY.hsaco, clang's MinGW /tmp/hello-XXXXXX.o). LLD's ELF, MinGW and
// Wasm outputs do not depend on those names unless a name is copied into
// them, so the key holds each such name by its role — a token numbered by
// the name's first appearance in the argument vector — and the manifest
// holds what the link read by content. The names
// left out: every positional input, the value of each option that names a
// file the link reads or writes (-o, -T, --version-script, -Map,
// --dependency-file, ...), every -L directory (a prefix), the working
// directory (a prefix) and the request's base dir (a prefix).
//
// Whether a left-out name reached the outputs is verified on every stored
// link (lib/cache/name_check.h); a result that contains one is stored as
// requiring that exact name. Stored paths and diagnostics refer to left-out
// names by token: "\x01" ID "\x02", ID = the name's number ("3" its spelling,
// "3a" its absolute form), "C" the working directory, "B" the base dir.
// Tokens are replaced by the current link's names when a result is used.
//
// The base dir has ccache's meaning when the working directory lies under
// it: a path under the base dir is stored relative to the working directory
// ("\x01C\x02/../lib/x.o"), so one base dir above many checkouts (~/src, a
// CI workspace) lets each checkout's links share entries with the others'.
// A result that names the base dir then depends on where the link ran: the
// base dir found in an output, or in a diagnostic outside the working
// directory, requires the working directory exactly (name_check.h). A
// working directory outside the base dir keeps the older reading: the base
// dir is a prefix token of its own.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace linkd {

enum class NameRole { Input, Output, SearchDir, Cwd, BaseDir };

struct LeftOutName {
  NameRole role = NameRole::Input;
  std::string id;       // "3", "C", "B"
  std::string spelling; // as the link was given it
  std::string absolute; // resolved against the working directory
  // Also searched for in the outputs (an output's base name, which a PE
  // image's export directory and its import library carry), or empty.
  std::string embeddedAs;
};

// Maps stored text to and from this link's names.
class PathMapper {
public:
  PathMapper() = default;
  explicit PathMapper(std::vector<LeftOutName> names);
  // Only a base dir (the pre-content key's relativisation, kept for tests).
  static PathMapper forBaseDir(const std::string &baseDir);

  bool active() const { return !list.empty(); }
  // Whether paths under the base dir are stored relative to the working
  // directory (both left out, the working directory under the base dir).
  bool relativeToCwd() const { return relative; }
  const std::vector<LeftOutName> &names() const { return list; }
  const LeftOutName *byId(std::string_view id) const;

  // An absolute path in stored form: the longest left-out name it equals
  // (inputs, outputs) or lies under (directories) becomes that name's token.
  std::string toStored(const std::string &path) const;
  // Text (diagnostics) in stored form: every occurrence of a left-out name
  // standing as a whole word becomes its token. Names that also occur where
  // they do not stand alone (part of a longer word) are left as they are
  // and their ids added to `embedded`: the text depends on them.
  std::string toStoredText(const std::string &text,
                           std::set<std::string> *embedded) const;
  // Replaces every token by this link's name.
  std::string toLocal(const std::string &text) const;
  // Whether a stored path refers to a left-out name (starts with a token).
  static bool isMapped(const std::string &stored) {
    return !stored.empty() && stored[0] == '\x01';
  }

  static std::string token(std::string_view id);

private:
  std::vector<LeftOutName> list;
  // Lookups: numeric ids by number, "C" and "B"; whole names by their
  // absolute form; prefixes (few) by a scan.
  std::vector<int> byNumber;
  int cwdIndex = -1, baseIndex = -1;
  bool relative = false;
  std::unordered_map<std::string, int> wholeByAbsolute;
  std::vector<int> prefixes;
};

// Replaces the base dir and working directory prefixes in `text` that end at
// a path boundary by their tokens (for key fields that are not whole names).
// With the working directory under the base dir, every path under the base
// dir becomes the working directory's token and the path relative to it.
std::string storedPrefixes(const std::string &text, const std::string &cwd,
                           const std::string &baseDir);

// Whether `path` is `dir` or lies under it (both absolute, no trailing '/').
bool isUnder(std::string_view path, std::string_view dir);
// `path` relative to the directory `from`, lexically (both absolute; `from`
// as getcwd gives it, without symbolic links, so "from/.." is its parent):
// "" when they are the same, else "x/y" or "../x/y".
std::string relativePath(std::string_view from, std::string_view path);

} // namespace linkd
