// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Parsing and canonical form of a rewrite spec (see rewrite_spec.h).
#include "rewrite/rewrite_spec.h"
#include "rewrite/symbol_names.h"

#include <cctype>

namespace linkd::rewrite {
namespace {

bool hasSpace(std::string_view s) {
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c)))
      return true;
  return false;
}

// Length-prefixed, so that no choice of names can forge another spec.
void field(std::string &out, std::string_view key, std::string_view value) {
  out += key;
  out += ' ';
  out += std::to_string(value.size());
  out += ':';
  out += value;
  out += '\n';
}

} // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::string RewriteSpec::effectiveImportPrefix() const {
  if (importPrefix)
    return *importPrefix;
  return exportPrefix.value_or(match);
}

std::string RewriteSpec::canonical() const {
  std::string out = "linkd-rewrite-spec 1\n";
  field(out, "match", match);
  field(out, "export", exportPrefix.value_or(match));
  field(out, "import", effectiveImportPrefix());
  field(out, "internal", internalPrefix);
  for (const auto &[from, to] : renames) { // std::map: sorted
    field(out, "rename-from", from);
    field(out, "rename-to", to);
  }
  return out;
}

std::string addRename(RewriteSpec &spec, std::string_view oldEqNew) {
  size_t eq = oldEqNew.find('=');
  if (eq == std::string_view::npos)
    return "expected OLD=NEW, got '" + std::string(oldEqNew) + "'";
  std::string from(trim(oldEqNew.substr(0, eq)));
  std::string to(trim(oldEqNew.substr(eq + 1)));
  if (from.empty() || to.empty() || hasSpace(from) || hasSpace(to))
    return "expected OLD=NEW with non-empty names, got '" +
           std::string(oldEqNew) + "'";
  auto [it, inserted] = spec.renames.emplace(from, to);
  if (!inserted && it->second != to)
    return "'" + from + "' is renamed twice: to '" + it->second + "' and '" +
           to + "'";
  return {};
}

std::string parseRenameFile(RewriteSpec &spec, std::string_view text,
                            std::string_view fileName) {
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text =
        nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineNo;
    if (line.empty() || line.front() == '#')
      continue;
    std::string entry(line);
    if (entry.find('=') == std::string::npos) {
      size_t sp = entry.find_first_of(" \t");
      if (sp != std::string::npos)
        entry = entry.substr(0, sp) + "=" + std::string(trim(line.substr(sp)));
    }
    std::string err = addRename(spec, entry);
    if (!err.empty())
      return std::string(fileName) + ":" + std::to_string(lineNo) + ": " + err;
  }
  return {};
}

std::string validate(const RewriteSpec &spec) {
  bool prefixes =
      spec.exportPrefix || spec.importPrefix || !spec.internalPrefix.empty();
  if (spec.match.empty() && (spec.exportPrefix || spec.importPrefix))
    return "--export-prefix and --import-prefix need --match";
  if (!prefixes && spec.renames.empty())
    return "nothing to do: give --match with a prefix, --internal-prefix or "
           "--rename";
  for (const auto &[from, to] : spec.renames)
    if (from == to)
      return "--rename " + from + "=" + to + " renames a symbol to itself";
    else if (isDeviceAbiName(from) || isDeviceAbiName(to))
      return "--rename " + from + "=" + to +
             ": names under __oclc_, __ockl_, __ocml_, __irif_ and "
             "__hip_cuid_ belong to the GPU device libraries and the HIP "
             "runtime, which look them up by name; they are never renamed";
  return {};
}

} // namespace linkd::rewrite
