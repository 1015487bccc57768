#include "client/client_args.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace linkd {

ClientArgs parseClientArgs(int argc, char **argv) {
  ClientArgs out;
  const char *noCache = std::getenv("LINKD_NOCACHE");
  out.noCache = noCache && *noCache && std::strcmp(noCache, "0") != 0;
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i > 0 && a.starts_with("--linkd-")) {
      if (a == "--linkd-no-cache")
        out.noCache = true;
      else if (!out.error)
        out.error = "unknown linkd option " + std::string(a);
      continue;
    }
    out.linkerArgv.emplace_back(a);
  }
  return out;
}

} // namespace linkd
