// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/relink_check_command.h"

#include "incremental/relink_check.h"
#include "util/files.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace linkd {

int cmdRelinkCheck(int argc, char **argv) {
  incremental::SlackPolicy slack;
  int i = 2;
  if (i + 1 < argc && std::string_view(argv[i]) == "--slack") {
    char *end = nullptr;
    slack.percent = std::strtoull(argv[i + 1], &end, 10);
    if (*end == ',')
      slack.bytes = std::strtoull(end + 1, &end, 10);
    if (*end != '\0') {
      std::fprintf(stderr, "linkd-lld relink-check: --slack PERCENT,BYTES\n");
      return 2;
    }
    i += 2;
  }
  if (argc - i != 2) {
    std::fprintf(stderr, "usage: linkd-lld relink-check [--slack "
                         "PERCENT,BYTES] OLD.o NEW.o\n");
    return 2;
  }
  Result<std::string> before = readFile(argv[i]);
  Result<std::string> after = readFile(argv[i + 1]);
  for (const Result<std::string> *r : {&before, &after})
    if (!*r) {
      std::fprintf(stderr, "linkd-lld relink-check: %s\n", r->error().c_str());
      return 2;
    }
  incremental::RelinkCheck c = incremental::checkRelink(
      llvm::MemoryBufferRef(*before, argv[i]),
      llvm::MemoryBufferRef(*after, argv[i + 1]), slack);
  if (!c.patchable) {
    std::printf("full-link kind=%s reason=\"%s\"\n", c.kind.c_str(),
                c.reason.c_str());
    return 1;
  }
  std::string sections;
  for (const std::string &s : c.changedSections)
    sections += (sections.empty() ? "" : ",") + s;
  std::printf("patchable sections=%s bytes=%llu relocations=%llu\n",
              sections.empty() ? "-" : sections.c_str(),
              static_cast<unsigned long long>(c.changedBytes),
              static_cast<unsigned long long>(c.relocations));
  return 0;
}

} // namespace linkd
