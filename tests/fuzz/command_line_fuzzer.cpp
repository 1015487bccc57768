// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// libFuzzer target over the command-line readers the daemon runs on a
// client's arguments: GNU tokenizing of response-file text, the llvm-ar /
// llvm-ranlib command lines (lib/archive/ar_command_line.h), and the output
// options of every flavor (lib/link/link_outputs.h). The bytes are split at
// NUL into arguments; the first byte picks the flavor.
//
// Built only with -DLINKD_FUZZ=ON (tests/fuzz/CMakeLists.txt).
#include "archive/ar_command_line.h"
#include "link/link_outputs.h"
#include "link/response_files.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view text(reinterpret_cast<const char *>(data) + 1, size - 1);
  (void)linkd::tokenizeGnu(text);
  std::vector<std::string> args;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nul = text.find('\0', pos);
    if (nul == std::string_view::npos)
      nul = text.size();
    args.emplace_back(text.substr(pos, nul - pos));
    pos = nul + 1;
  }
  (void)linkd::archive::parseArCommandLine(args);
  (void)linkd::archive::parseRanlibCommandLine(args);
  std::vector<std::string> argv = {"ar"};
  argv.insert(argv.end(), args.begin(), args.end());
  (void)linkd::archive::arResponseFileQuoting(argv);
  auto flavor = static_cast<linkd::Flavor>(1 + data[0] % 4);
  linkd::LinkOutputs o = linkd::linkOutputs(flavor, args, "/w");
  for (const std::string &a : args)
    (void)linkd::tidyPath("/w/" + a);
  (void)o;
  return 0;
}
