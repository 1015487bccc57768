// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/local_linker.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace linkd {
namespace {

// Stock LLD's program names for a flavor, in the order they are tried.
std::vector<std::string> stockNames(Flavor f) {
  switch (f) {
  case Flavor::Coff:
    return {"lld-link", "lld"};
  case Flavor::MachO:
    return {"ld64.lld", "lld"};
  case Flavor::Wasm:
    return {"wasm-ld", "lld"};
  default:
    return {"ld.lld", "lld"};
  }
}

bool isThisProgram(const std::string &path) {
  char a[PATH_MAX], b[PATH_MAX];
  return realpath(path.c_str(), a) && realpath("/proc/self/exe", b) &&
         std::string(a) == b;
}

} // namespace

bool executableFile(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

std::string programOnPath(const std::string &name) {
  const char *p = std::getenv("PATH");
  std::string path = p && *p ? p : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= path.size();) {
    size_t colon = path.find(':', start);
    if (colon == std::string::npos)
      colon = path.size();
    std::string d = path.substr(start, colon - start);
    std::string candidate = (d.empty() ? "." : d) + "/" + name;
    if (executableFile(candidate) && !isThisProgram(candidate))
      return candidate;
    start = colon + 1;
  }
  return {};
}

std::optional<LocalLinker> findLocalLinker(Flavor flavor,
                                           const std::string &chosen,
                                           const std::string &ownLld,
                                           std::string &error) {
  const char *env = std::getenv("LINKD_FALLBACK_LINKER");
  for (const auto &[what, name] :
       {std::pair<const char *, std::string>{"options.fallback_linker", chosen},
        {"LINKD_FALLBACK_LINKER", env ? env : ""}}) {
    if (name.empty())
      continue;
    std::string path =
        name.find('/') == std::string::npos ? programOnPath(name) : name;
    if (path.empty() || !executableFile(path)) {
      error = std::string(what) + " names '" + name +
              "', which is not an executable file";
      return std::nullopt;
    }
    return LocalLinker{path, false};
  }
  if (executableFile(ownLld))
    return LocalLinker{ownLld, true};
  std::vector<std::string> names = stockNames(flavor);
  for (const std::string &name : names)
    if (std::string found = programOnPath(name); !found.empty())
      return LocalLinker{found, false};
  const char *path = std::getenv("PATH");
  error = "no linker was found for a local link: looked for "
          "options.fallback_linker and $LINKD_FALLBACK_LINKER (unset), " +
          ownLld + ", and " + names[0] + " and " + names[1] + " on PATH (" +
          (path ? path : "unset") + ")";
  return std::nullopt;
}

std::vector<std::string>
localLinkerArgv(const LocalLinker &linker, Flavor flavor,
                const std::vector<std::string> &argv,
                const std::vector<std::string> &rewriteSpecs,
                const std::string &view) {
  std::vector<std::string> a;
  if (linker.linkdLld) {
    a = {"linkd-lld", "link", "--flavor", std::string(flavorName(flavor)),
         "--argv0",   argv[0]};
    for (const std::string &spec : rewriteSpecs)
      a.insert(a.end(), {"--rewrite-spec", spec});
    if (!view.empty())
      a.insert(a.end(), {"--view", view});
    a.push_back("--");
  } else {
    // Stock LLD knows its own names only (not ld.linkd, iree-lld): the
    // driver always comes from -flavor, argv[0] stays the caller's.
    std::string_view word = lldFlavorArgument(flavor);
    a = {argv[0], "-flavor", word.empty() ? "gnu" : std::string(word)};
  }
  a.insert(a.end(), argv.begin() + 1, argv.end());
  return a;
}

} // namespace linkd
