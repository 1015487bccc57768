// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/client_args.h"
#include "config/env_flag.h"
#include "config/near_miss.h"

#include "archive/ar_command_line.h"
#include "link/response_files.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace linkd {
namespace {

std::string absolute(std::string_view path) {
  char buf[PATH_MAX];
  if (path.starts_with("/") || !getcwd(buf, sizeof(buf)))
    return std::string(path);
  return absolutePath(std::string(path), buf);
}

// The client's options, for --linkd-help and for "did you mean".
struct LinkdOption {
  std::string_view name; // with "=" if it takes a value
  std::string_view help;
};
constexpr LinkdOption kOptions[] = {
    {"--linkd-no-cache", "neither look up nor store this link "
                         "(LINKD_NOCACHE=1)"},
    {"--linkd-incremental", "patch the last output of this link when only "
                            "objects changed (LINKD_INCREMENTAL=1; "
                            "docs/incremental.md)"},
    {"--linkd-rewrite=", "rewrite the inputs FILE names before linking "
                         "(docs/rewrite.md)"},
    {"--linkd-version", "print linkd's version, the daemon and socket this "
                        "client uses, and exit"},
    {"--linkd-help", "print these options and exit"},
};

std::string unknownOption(std::string_view a) {
  std::vector<std::string> known;
  for (const LinkdOption &o : kOptions)
    known.emplace_back(o.name.substr(0, o.name.find('=')));
  std::string msg = "unknown linkd option " + std::string(a);
  if (auto near = nearestName(a.substr(0, a.find('=')), known))
    msg += "; did you mean " + *near +
           (*near == "--linkd-rewrite" ? "=FILE" : "") + "?";
  return msg + " (ld.linkd --linkd-help lists them)";
}

} // namespace

std::string linkdOptionsHelp() {
  std::string out = "linkd's own options (never passed to the linker; "
                    "-Wl,OPTION through a compiler driver):\n";
  for (const LinkdOption &o : kOptions) {
    std::string name(o.name);
    if (name.ends_with("="))
      name += "FILE";
    out += "  " + name;
    out.append(name.size() < 20 ? 22 - name.size() : 2, ' ');
    out += std::string(o.help) + "\n";
  }
  return out;
}

ClientArgs parseClientArgs(const std::vector<std::string> &argv) {
  ClientArgs out;
  out.noCache = envFlag("LINKD_NOCACHE");
  out.incremental = envFlag("LINKD_INCREMENTAL");
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (i > 0 && a.starts_with("--linkd-")) {
      if (a == "--linkd-no-cache")
        out.noCache = true;
      else if (a == "--linkd-incremental")
        out.incremental = true;
      else if (a.starts_with("--linkd-rewrite=") && a.size() > 16)
        out.rewriteSpecs.push_back(absolute(a.substr(16)));
      else if (a == "--linkd-version")
        out.action = ClientArgs::Action::Version;
      else if (a == "--linkd-help")
        out.action = ClientArgs::Action::Help;
      else if (!out.error)
        out.error = unknownOption(a);
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
