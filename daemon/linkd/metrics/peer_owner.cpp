// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/metrics/peer_owner.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd {
namespace {

// The address of `sa` as inet_diag wants it (IPv4 in the first word; an
// IPv4-mapped IPv6 address is IPv4, which is what the peer's socket is).
bool diagAddress(const sockaddr_storage &sa, int &family, uint32_t out[4],
                 uint16_t &port) {
  std::memset(out, 0, 16);
  if (sa.ss_family == AF_INET) {
    const auto *in = reinterpret_cast<const sockaddr_in *>(&sa);
    family = AF_INET;
    std::memcpy(out, &in->sin_addr, 4);
    port = in->sin_port;
    return true;
  }
  if (sa.ss_family != AF_INET6)
    return false;
  const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&sa);
  port = in6->sin6_port;
  if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
    family = AF_INET;
    std::memcpy(out, in6->sin6_addr.s6_addr + 12, 4);
  } else {
    family = AF_INET6;
    std::memcpy(out, in6->sin6_addr.s6_addr, 16);
  }
  return true;
}

} // namespace

std::optional<uid_t> loopbackPeerUid(int fd, std::string *why) {
  sockaddr_storage local{}, peer{};
  socklen_t ll = sizeof(local), pl = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &ll) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &pl) != 0) {
    *why = std::string("no socket addresses: ") + std::strerror(errno);
    return std::nullopt;
  }
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  int peerFamily = 0, localFamily = 0;
  uint16_t peerPort = 0, localPort = 0;
  if (!diagAddress(peer, peerFamily, msg.req.id.idiag_src, peerPort) ||
      !diagAddress(local, localFamily, msg.req.id.idiag_dst, localPort) ||
      peerFamily != localFamily) {
    *why = "not a TCP/IP connection";
    return std::nullopt;
  }
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST; // one socket, by its two ends
  msg.req.sdiag_family = static_cast<uint8_t>(peerFamily);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  msg.req.id.idiag_sport = peerPort; // the peer's socket: its local end
  msg.req.id.idiag_dport = localPort;
  msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) {
    *why = std::string("no sock_diag socket: ") + std::strerror(errno);
    return std::nullopt;
  }
  timeval tv{1, 0}; // the kernel answers at once; never wait longer
  setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  alignas(nlmsghdr) char buf[8192];
  ssize_t n = -1;
  if (sendto(nl, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr *>(&kernel),
             sizeof(kernel)) == static_cast<ssize_t>(sizeof(msg)))
    n = recv(nl, buf, sizeof(buf), 0);
  int err = errno;
  close(nl);
  if (n < 0) {
    *why = std::string("sock_diag: ") + std::strerror(err);
    return std::nullopt;
  }
  for (auto *h = reinterpret_cast<nlmsghdr *>(buf);
       NLMSG_OK(h, static_cast<unsigned>(n)); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      const auto *e = static_cast<const nlmsgerr *>(NLMSG_DATA(h));
      *why = std::string("sock_diag: ") + std::strerror(-e->error);
      return std::nullopt;
    }
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
        h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
      continue;
    const auto *m = static_cast<const inet_diag_msg *>(NLMSG_DATA(h));
    // The lookup is exact; check the ends anyway.
    if (m->id.idiag_sport != peerPort || m->id.idiag_dport != localPort)
      continue;
    return static_cast<uid_t>(m->idiag_uid);
  }
  *why = "sock_diag: no such socket";
  return std::nullopt;
}

} // namespace linkd
