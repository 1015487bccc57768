// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Which peers may read a daemon's metrics: loopback always, others only if
// an entry of `metrics_allow` (an address or a CIDR, IPv4 or IPv6) covers
// them. Metrics name no secrets, but they tell an outsider what is built
// here and when; an operator opens them to the Prometheus server, not to
// the network.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace linkd {

class PeerAllowList {
public:
  // nullopt and `error` (naming the bad entry) if an entry is not an
  // address or CIDR.
  static std::optional<PeerAllowList>
  parse(const std::vector<std::string> &entries, std::string *error);

  // Loopback, or covered by an entry. IPv4-mapped IPv6 peers count as IPv4.
  bool allows(const sockaddr_storage &peer) const;
  // Covered by an entry (loopback only if an entry names it).
  bool covers(const sockaddr_storage &peer) const;
  static bool isLoopback(const sockaddr_storage &peer);

private:
  struct Net {
    bool v6 = false;
    std::array<uint8_t, 16> addr{};
    unsigned prefix = 0; // bits
  };
  std::vector<Net> nets;
};

// `peer` as text ("192.0.2.7", "::1"), for the log.
std::string peerText(const sockaddr_storage &peer);

} // namespace linkd
