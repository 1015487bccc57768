// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/liblinkd/output_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace linkd::kernel {
namespace {

// GNU-style drivers (ELF, Wasm, Mach-O): options whose value is a file the
// link writes, spelled -x or --x, the value joined by '=' or (`separate`)
// as the next argument (LLD's Options.td: Eq/EEq are both; JJ/J joined
// only, and thinlto-index-only alone is a flag).
struct GnuOutput {
  std::string_view name;
  bool separate;
};
constexpr std::array<GnuOutput, 14> kGnuOutputs = {{
    {"o", true},
    {"output", true},
    {"Map", true},
    {"map", true},
    {"dependency-file", true},
    {"dependency_info", true},
    {"reproduce", true},
    {"why-extract", true},
    {"print-symbol-order", true},
    {"object_path_lto", true},
    {"print-archive-stats", false},
    {"lto-obj-path", false},
    {"thinlto-index-only", false},
    {"plugin-opt=obj-path", false},
}};

// COFF: /name:value or -name:value, any case.
constexpr std::array<std::string_view, 8> kCoffOutputs = {
    "out",    "pdb",       "implib",      "map",
    "lldmap", "reproduce", "pdbstripped", "lto-obj-path"};

// Why `path` leaves the working directory, or "".
std::string escapes(std::string_view option, std::string_view path) {
  if (path.empty())
    return {};
  if (path.front() == '/')
    return "output '" + std::string(path) + "' (" + std::string(option) +
           ") is an absolute path; a library link writes only under its "
           "working directory, and its outputs come back as bytes by "
           "relative name";
  int depth = 0;
  for (size_t start = 0; start <= path.size();) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos)
      slash = path.size();
    std::string_view part = path.substr(start, slash - start);
    if (part == "..")
      --depth;
    else if (!part.empty() && part != ".")
      ++depth;
    if (depth < 0)
      return "output '" + std::string(path) + "' (" + std::string(option) +
             ") is outside the link's working directory; a library link "
             "writes only under it, and its outputs come back as bytes by "
             "relative name";
    start = slash + 1;
  }
  return {};
}

std::string checkGnu(const std::vector<std::string> &argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a.size() < 2 || a[0] != '-')
      continue;
    // -oPATH: LLD takes the value joined too; only a path that starts with
    // '/' or '.' can leave the directory (and "-o" then cannot start any
    // other option's name).
    if (a.starts_with("-o/") || a.starts_with("-o."))
      if (std::string e = escapes("-o", a.substr(2)); !e.empty())
        return e;
    std::string_view name = a.substr(a[1] == '-' ? 2 : 1);
    for (const GnuOutput &opt : kGnuOutputs) {
      std::string e;
      if (name == opt.name && opt.separate && i + 1 < argv.size())
        e = escapes(a, argv[i + 1]);
      else if (name.size() > opt.name.size() && name.starts_with(opt.name) &&
               name[opt.name.size()] == '=')
        e = escapes(a.substr(0, a.size() - name.size() + opt.name.size()),
                    name.substr(opt.name.size() + 1));
      if (!e.empty())
        return e;
    }
  }
  return {};
}

std::string checkCoff(const std::vector<std::string> &argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || (a[0] != '/' && a[0] != '-'))
      continue;
    size_t colon = a.find(':');
    if (colon == std::string::npos)
      continue;
    std::string name = a.substr(1, colon - 1);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    for (std::string_view opt : kCoffOutputs)
      if (name == opt)
        if (std::string e = escapes(a.substr(0, colon), a.substr(colon + 1));
            !e.empty())
          return e;
  }
  return {};
}

} // namespace

std::string outputOutsideWorkingDirectory(const Request &req) {
  return req.flavor == Flavor::Coff ? checkCoff(req.argv) : checkGnu(req.argv);
}

} // namespace linkd::kernel
