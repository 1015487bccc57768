#include "client/client_args.h"
#include "config/env_flag.h"

#include "archive/ar_command_line.h"
#include "link/response_files.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unistd.h>

namespace linkd {
namespace {

std::string absolute(std::string_view path) {
  char buf[PATH_MAX];
  if (path.starts_with("/") || !getcwd(buf, sizeof(buf)))
    return std::string(path);
  return absolutePath(std::string(path), buf);
}

} // namespace

ClientArgs parseClientArgs(const std::vector<std::string> &argv) {
  ClientArgs out;
  out.noCache = envFlag("LINKD_NOCACHE");
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (i > 0 && a.starts_with("--linkd-")) {
      if (a == "--linkd-no-cache")
        out.noCache = true;
      else if (a.starts_with("--linkd-rewrite=") && a.size() > 16)
        out.rewriteSpec = absolute(a.substr(16));
      else if (!out.error)
        out.error = "unknown linkd option " + std::string(a);
      continue;
    }
    out.linkerArgv.emplace_back(a);
  }
  return out;
}

bool readsStdin(Flavor flavor, const std::vector<std::string> &argv) {
  if (flavor != Flavor::Ar)
    return false;
  ExpandedArgs expanded = expandResponseFiles(argv, ".");
  return archive::parseArCommandLine(expanded.args).mri;
}

std::optional<std::string> readAllStdin() {
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return std::nullopt;
    if (n == 0)
      return data;
    data.append(buf, static_cast<size_t>(n));
  }
}

} // namespace linkd
