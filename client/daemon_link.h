// One link through the daemon: send the request, copy the streamed stdout and
// stderr to ours as it arrives, return LLD's exit status.
#pragma once

#include "client/client_args.h"
#include "config/runtime_paths.h"
#include "link/flavor.h"

#include <optional>
#include <string>

namespace linkd {

struct DaemonLinkResult {
  // Set when the link ran to completion in the daemon: LLD's exit status.
  std::optional<int> exitCode;
  // Otherwise why not; the caller links locally.
  std::string failure;
};

DaemonLinkResult linkThroughDaemon(const RuntimePaths &paths, Flavor flavor,
                                   const ClientArgs &args);

} // namespace linkd
