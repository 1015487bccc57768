// Parsing of link-time rewrite specs (see link_spec.h).
#include "rewrite/link_spec.h"

#include "link/response_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace linkd::rewrite {
namespace {

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool readText(const std::string &path, std::string *out, std::string *error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

} // namespace

std::optional<LinkRewriteSpec> loadLinkRewriteSpec(const std::string &path,
                                                   const std::string &cwd,
                                                   std::string *error) {
  LinkRewriteSpec out;
  std::string file = absolutePath(path, cwd);
  std::string text;
  if (!readText(file, &text, error))
    return std::nullopt;
  out.specFiles.push_back(file);
  std::string base = dirOf(file);
  auto fail = [&](int line, const std::string &msg) {
    *error = file + ":" + std::to_string(line) + ": " + msg;
    return std::nullopt;
  };
  std::istringstream lines(text);
  std::string raw;
  for (int n = 1; std::getline(lines, raw); ++n) {
    std::string_view l = trim(raw);
    if (l.empty() || l[0] == '#')
      continue;
    size_t eq = l.find('=');
    if (eq == std::string_view::npos)
      return fail(n, "expected 'key = value', got '" + std::string(l) + "'");
    std::string key(trim(l.substr(0, eq)));
    std::string value(trim(l.substr(eq + 1)));
    if (key == "match") {
      out.spec.match = value;
    } else if (key == "export-prefix") {
      out.spec.exportPrefix = value;
    } else if (key == "import-prefix") {
      out.spec.importPrefix = value;
    } else if (key == "internal-prefix") {
      out.spec.internalPrefix = value;
    } else if (key == "rename") {
      if (std::string err = addRename(out.spec, value); !err.empty())
        return fail(n, "rename: " + err);
    } else if (key == "rename-file") {
      if (value.empty())
        return fail(n, key + ": empty path");
      std::string renames = absolutePath(value, base), renameText;
      if (!readText(renames, &renameText, error))
        return std::nullopt;
      if (std::string err = parseRenameFile(out.spec, renameText, renames);
          !err.empty()) {
        *error = err;
        return std::nullopt;
      }
      out.specFiles.push_back(renames);
    } else if (key == "runtime" || key == "kernel" || key == "input") {
      if (value.empty())
        return fail(n, key + ": empty path");
      Scope scope = key == "runtime"  ? Scope::Runtime
                    : key == "kernel" ? Scope::Kernel
                                      : Scope::Other;
      out.inputs.push_back({absolutePath(value, base), scope});
    } else {
      return fail(n, "unknown key '" + key +
                         "' (match, export-prefix, import-prefix, "
                         "internal-prefix, rename, rename-file, runtime, "
                         "kernel, input)");
    }
  }
  if (out.inputs.empty()) {
    *error = file + ": no inputs (runtime, kernel or input)";
    return std::nullopt;
  }
  if (std::string err = validate(out.spec); !err.empty()) {
    *error = file + ": " + err;
    return std::nullopt;
  }
  return out;
}

} // namespace linkd::rewrite
