// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "metrics/peer_allow.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace linkd {
namespace {

bool prefixMatches(const uint8_t *a, const uint8_t *b, unsigned bits) {
  unsigned whole = bits / 8, rest = bits % 8;
  if (std::memcmp(a, b, whole) != 0)
    return false;
  if (rest == 0)
    return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

// The peer's address: 4 bytes for IPv4 (also when mapped into IPv6), 16 for
// IPv6; `v6` says which.
bool peerBytes(const sockaddr_storage &peer, bool &v6, uint8_t out[16]) {
  if (peer.ss_family == AF_INET) {
    auto *in = reinterpret_cast<const sockaddr_in *>(&peer);
    std::memcpy(out, &in->sin_addr, 4);
    v6 = false;
    return true;
  }
  if (peer.ss_family == AF_INET6) {
    auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&peer);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      std::memcpy(out, in6->sin6_addr.s6_addr + 12, 4);
      v6 = false;
    } else {
      std::memcpy(out, in6->sin6_addr.s6_addr, 16);
      v6 = true;
    }
    return true;
  }
  return false;
}

} // namespace

std::optional<PeerAllowList>
PeerAllowList::parse(const std::vector<std::string> &entries,
                     std::string *error) {
  PeerAllowList list;
  for (const std::string &e : entries) {
    std::string host = e.substr(0, e.find('/'));
    Net n;
    if (inet_pton(AF_INET, host.c_str(), n.addr.data()) == 1) {
      n.prefix = 32;
    } else if (inet_pton(AF_INET6, host.c_str(), n.addr.data()) == 1) {
      n.v6 = true;
      n.prefix = 128;
    } else {
      *error = "not an address or CIDR: '" + e + "'";
      return std::nullopt;
    }
    if (size_t slash = e.find('/'); slash != std::string::npos) {
      std::string bits = e.substr(slash + 1);
      char *end = nullptr;
      unsigned long p = std::strtoul(bits.c_str(), &end, 10);
      if (bits.empty() || *end || p > n.prefix) {
        *error = "bad prefix length in '" + e + "'";
        return std::nullopt;
      }
      n.prefix = static_cast<unsigned>(p);
    }
    list.nets.push_back(n);
  }
  return list;
}

bool PeerAllowList::allows(const sockaddr_storage &peer) const {
  return isLoopback(peer) || covers(peer);
}

bool PeerAllowList::isLoopback(const sockaddr_storage &peer) {
  bool v6 = false;
  uint8_t a[16] = {};
  if (!peerBytes(peer, v6, a))
    return false;
  static constexpr uint8_t kLoop6[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                         0, 0, 0, 0, 0, 0, 0, 1};
  return (!v6 && a[0] == 127) || (v6 && std::memcmp(a, kLoop6, 16) == 0);
}

bool PeerAllowList::covers(const sockaddr_storage &peer) const {
  bool v6 = false;
  uint8_t a[16] = {};
  if (!peerBytes(peer, v6, a))
    return false;
  for (const Net &n : nets)
    if (n.v6 == v6 && prefixMatches(a, n.addr.data(), n.prefix))
      return true;
  return false;
}

std::string peerText(const sockaddr_storage &peer) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (peer.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(&peer)->sin_addr,
              buf, sizeof(buf));
  else if (peer.ss_family == AF_INET6)
    inet_ntop(AF_INET6,
              &reinterpret_cast<const sockaddr_in6 *>(&peer)->sin6_addr, buf,
              sizeof(buf));
  return buf;
}

} // namespace linkd
