// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Why a farm node cannot be reached, when gRPC only says it cannot: a TCP
// connect and, for TLS targets, a handshake with the client's own CA and
// name, done with OpenSSL once the channel has failed to connect. An
// untrusted node certificate then reads as such (the node's address, why
// the check failed, the certificate's subject and issuer), not as an
// outage ("cannot connect to the farm", and only gRPC's stderr
// naming no node said "certificate verify failed").
#pragma once

#include <string>
#include <vector>

namespace linkd {

struct TlsProbeTarget {
  std::string address; // HOST:PORT, [V6]:PORT
  bool tls = true;
  std::string caFile; // empty: the system's CA store
  std::string name;   // the name to verify; empty: the host
  int timeoutMs = 2000;
};

// One sentence: what failed, and where.
std::string probeFarmNode(const TlsProbeTarget &t);

// The first HOST:PORT a gRPC target names ("ipv4:a:1,b:2", "dns:///h:1",
// "h:1"); empty if none.
std::string firstAddressOf(const std::string &target);

// The HOST:PORT entries of an address-list target ("ipv4:a:1,b:2",
// "ipv6:[::1]:1,..."); empty for any other target (a name the resolver
// expands).
std::vector<std::string> addressListOf(const std::string &target);

} // namespace linkd
