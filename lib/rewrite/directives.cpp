// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// COFF `.drectve` text: the linker options an object carries. /EXPORT:X,
// /INCLUDE:X and /ALTERNATENAME:X=Y name symbols, so a rename must reach
// them or the linker exports / pulls in / aliases the old name (see
// lld-library-facts.md, "COMDAT traps"). Options are separated by spaces;
// a value may be quoted.
#include "rewrite/object_rewriter.h"

#include <cctype>
#include <vector>

namespace linkd::rewrite {
namespace {

std::vector<std::string_view> splitOptions(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    size_t start = i;
    bool quoted = false;
    while (i < text.size() &&
           (quoted || !std::isspace(static_cast<unsigned char>(text[i])))) {
      if (text[i] == '"')
        quoted = !quoted;
      ++i;
    }
    if (i > start)
      out.push_back(text.substr(start, i - start));
  }
  return out;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

using Renamer = std::function<std::optional<std::string>(std::string_view)>;

// One symbol name, possibly quoted.
std::string mapSymbol(std::string_view name, const Renamer &rename,
                      bool &changed) {
  bool quoted = name.size() >= 2 && name.front() == '"' && name.back() == '"';
  std::string_view bare = quoted ? name.substr(1, name.size() - 2) : name;
  auto to = rename(bare);
  if (!to)
    return std::string(name);
  changed = true;
  return quoted ? "\"" + *to + "\"" : *to;
}

// The value of one option: "X" or "X,DATA" or "X=Y" (ALTERNATENAME, and
// EXPORT's external=internal form).
std::string mapValue(std::string_view value, const Renamer &rename,
                     bool &changed) {
  size_t comma = value.find(',');
  std::string_view head = value.substr(0, comma);
  std::string tail =
      comma == std::string_view::npos ? "" : std::string(value.substr(comma));
  size_t eq = head.find('=');
  if (eq == std::string_view::npos)
    return mapSymbol(head, rename, changed) + tail;
  return mapSymbol(head.substr(0, eq), rename, changed) + "=" +
         mapSymbol(head.substr(eq + 1), rename, changed) + tail;
}

std::string mapOption(std::string_view opt, const Renamer &rename,
                      bool &changed) {
  if (opt.size() < 2 || (opt[0] != '/' && opt[0] != '-'))
    return std::string(opt);
  size_t colon = opt.find(':');
  if (colon == std::string_view::npos)
    return std::string(opt);
  std::string_view key = opt.substr(1, colon - 1);
  if (!equalsIgnoreCase(key, "export") && !equalsIgnoreCase(key, "include") &&
      !equalsIgnoreCase(key, "alternatename"))
    return std::string(opt);
  return std::string(opt.substr(0, colon + 1)) +
         mapValue(opt.substr(colon + 1), rename, changed);
}

} // namespace

std::optional<std::string> rewriteDirectives(std::string_view text,
                                             const Renamer &rename) {
  bool changed = false;
  std::string out;
  for (std::string_view opt : splitOptions(text)) {
    if (!out.empty())
      out += ' ';
    out += mapOption(opt, rename, changed);
  }
  if (!changed)
    return std::nullopt;
  return " " + out + " ";
}

} // namespace linkd::rewrite
