// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_client/tls_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>

namespace linkd {
namespace {

// A TCP connection to `host`:`port` within `timeoutMs`, or -1 and why.
int connectTcp(const std::string &host, const std::string &port, int timeoutMs,
               std::string *why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *why = std::string("cannot resolve it: ") + gai_strerror(rc);
    return -1;
  }
  int fd =
      socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int rc = fd < 0 ? -1 : connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (rc != 0 && fd >= 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    if (poll(&p, 1, timeoutMs) != 1) {
      err = ETIMEDOUT;
    } else {
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    rc = err ? -1 : 0;
    errno = err;
  }
  if (rc != 0) {
    *why = std::string("no TCP connection: ") + std::strerror(errno);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  // The handshake below blocks, within the same time.
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  timeval tv{timeoutMs / 1000,
             static_cast<suseconds_t>(timeoutMs % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

std::string nameOf(X509_NAME *n) {
  if (!n)
    return "?";
  char buf[512];
  X509_NAME_oneline(n, buf, sizeof(buf));
  return buf;
}

} // namespace

std::string firstAddressOf(const std::string &target) {
  std::string t = target;
  for (const char *scheme : {"ipv4:", "ipv6:", "dns:///", "dns:"})
    if (t.starts_with(scheme)) {
      t = t.substr(std::strlen(scheme));
      break;
    }
  return t.substr(0, t.find(','));
}

std::vector<std::string> addressListOf(const std::string &target) {
  std::vector<std::string> out;
  if (!target.starts_with("ipv4:") && !target.starts_with("ipv6:"))
    return out;
  std::string_view list = std::string_view(target).substr(5);
  for (size_t pos = 0; pos <= list.size();) {
    size_t comma = std::min(list.find(',', pos), list.size());
    if (comma > pos)
      out.emplace_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

std::string probeFarmNode(const TlsProbeTarget &t) {
  size_t colon = t.address.rfind(':');
  if (colon == std::string::npos)
    return "the node address " + t.address + " has no port";
  std::string host = t.address.substr(0, colon);
  std::string port = t.address.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[')
    host = host.substr(1, host.size() - 2);
  std::string why;
  int fd = connectTcp(host, port, t.timeoutMs, &why);
  if (fd < 0)
    return "node " + t.address + ": " + why;
  if (!t.tls) {
    close(fd);
    return "node " + t.address +
           " accepts connections but is not serving (draining, or not a "
           "linkd node)";
  }
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(
      SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (!ctx) {
    close(fd);
    return "node " + t.address + ": cannot set up TLS to check it";
  }
  if (t.caFile.empty())
    SSL_CTX_set_default_verify_paths(ctx.get());
  else if (SSL_CTX_load_verify_locations(ctx.get(), t.caFile.c_str(),
                                         nullptr) != 1) {
    close(fd);
    return "cannot read the farm CA file " + t.caFile;
  }
  // The handshake goes on whatever the check says (only to look): the
  // verdict is read after it, with the node's certificate.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER,
                     [](int, X509_STORE_CTX *) { return 1; });
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  std::string name = t.name.empty() ? host : t.name;
  SSL_set_fd(ssl.get(), fd);
  unsigned char ip[16];
  bool isIp = inet_pton(AF_INET, name.c_str(), ip) == 1 ||
              inet_pton(AF_INET6, name.c_str(), ip) == 1;
  if (isIp) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl.get(), name.c_str());
    SSL_set1_host(ssl.get(), name.c_str());
  }
  int rc = SSL_connect(ssl.get());
  std::string out;
  long v = rc == 1 ? SSL_get_verify_result(ssl.get()) : X509_V_OK;
  if (rc == 1 && v == X509_V_OK) {
    out = "node " + t.address +
          " completes a verified TLS handshake but is not serving (draining, "
          "not a linkd node, or refusing this client's certificate)";
  } else if (rc == 1) {
    X509 *cert = SSL_get_peer_certificate(ssl.get());
    out = "TLS verification of node " + t.address +
          " failed: " + X509_verify_cert_error_string(v) +
          " (its certificate: subject " +
          nameOf(cert ? X509_get_subject_name(cert) : nullptr) + ", issuer " +
          nameOf(cert ? X509_get_issuer_name(cert) : nullptr) + "; checked " +
          (t.caFile.empty() ? "against the system's CA store"
                            : "against farm_ca " + t.caFile) +
          " for the name " + name + ")";
    if (cert)
      X509_free(cert);
  } else {
    char buf[256];
    ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
    out = "node " + t.address + ": the TLS handshake failed: " + buf;
  }
  close(fd);
  return out;
}

} // namespace linkd
