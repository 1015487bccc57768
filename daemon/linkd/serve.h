// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd serve`: the daemon's life cycle.
//
// Order matters: the zygote is exec'd first, while this process still has a
// single thread; only then do logging and gRPC start their threads. A lock
// file held for the daemon's lifetime guarantees one daemon per socket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace linkd {

struct ServeOptions {
  std::string socketPath; // empty: from the environment (runtime_paths.h)
  unsigned jobs = 0;      // 0: from the config (default: cores)
  int64_t idleTimeoutSeconds = -1; // -1: from the config; 0 never
  std::string logLevel;            // empty: from the config
  // Farm node (docs/farm.md): with `listen` set, the daemon also serves
  // offloaded links on this TCP address.
  std::string listen; // HOST:PORT
  std::string tlsCert, tlsKey, clientCa, tokenFile;
  bool insecure = false;           // plaintext off loopback
  uint64_t maxRequestBytes = 0;    // 0: default
  uint64_t maxPaths = 0;           // 0: default (offload_wire.h)
  uint64_t maxPathBytes = 0;       // 0: default
  unsigned maxLinksPerToken = 0;   // 0: default
  uint64_t linkTimeoutSeconds = 0; // 0: default
  uint64_t stallTimeoutSeconds = 0; // 0: default
  // Prometheus metrics (daemon/linkd/metrics/metrics_listener.h): empty,
  // from the config (metrics_listen, metrics_allow).
  std::string metricsListen;             // HOST:PORT or PORT
  std::vector<std::string> metricsAllow; // addresses/CIDRs; empty: config
};

int serve(const ServeOptions &options);

} // namespace linkd
