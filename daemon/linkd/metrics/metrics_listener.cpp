// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/metrics/metrics_listener.h"

#include "daemon/linkd/metrics/peer_owner.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

// The request head (up to the blank line), or "" if the peer did not send
// one within the timeout and the size cap.
std::string readRequestHead(int fd) {
  std::string head;
  auto deadline = Clock::now() + MetricsListener::kIoTimeout;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos &&
         head.find("\n\n") == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0 || head.size() >= MetricsListener::kMaxRequestBytes)
      return {};
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return {};
    ssize_t r = recv(fd, buf, sizeof(buf), 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (r <= 0)
      return {};
    head.append(buf, static_cast<size_t>(r));
  }
  return head;
}

void sendAll(int fd, const std::string &data) {
  size_t off = 0;
  auto deadline = Clock::now() + MetricsListener::kIoTimeout;
  while (off < data.size() && Clock::now() < deadline) {
    ssize_t w = send(fd, data.data() + off, data.size() - off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR)
      return;
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, 100);
  }
}

std::string response(const char *status, const std::string &type,
                     const std::string &body, bool withBody) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + (withBody ? body : "");
}

} // namespace

bool splitListenAddress(const std::string &listen, std::string &host,
                        std::string &port) {
  if (!listen.empty() &&
      listen.find_first_not_of("0123456789") == std::string::npos) {
    host = "127.0.0.1";
    port = listen;
    return true;
  }
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size())
    return false;
  host = listen.substr(0, colon);
  port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return !host.empty() &&
         port.find_first_not_of("0123456789") == std::string::npos;
}

MetricsListener::MetricsListener(MetricsListenerConfig config,
                                 std::function<std::string()> render,
                                 Connections &admitted)
    : config(std::move(config)), render(std::move(render)),
      admitted(admitted) {}

MetricsListener::~MetricsListener() { stop(); }

std::string MetricsListener::start() {
  std::string err;
  auto list = PeerAllowList::parse(config.allow, &err);
  if (!list)
    return "metrics_allow: " + err;
  allowed = std::move(*list);
  std::string host, port;
  if (!splitListenAddress(config.listen, host, port))
    return "bad metrics address '" + config.listen + "' (HOST:PORT or PORT)";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return "metrics address " + config.listen + ": " + gai_strerror(rc);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0)
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 ||
      listen(fd, 64) != 0) {
    err = "cannot listen on " + config.listen + ": " + std::strerror(errno);
    freeaddrinfo(res);
    if (fd >= 0)
      close(fd);
    return err;
  }
  freeaddrinfo(res);
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len);
  int boundPort = ntohs(sa.ss_family == AF_INET6
                            ? reinterpret_cast<sockaddr_in6 *>(&sa)->sin6_port
                            : reinterpret_cast<sockaddr_in *>(&sa)->sin_port);
  std::string shown = peerText(sa);
  bound = (sa.ss_family == AF_INET6 ? "[" + shown + "]" : shown) + ":" +
          std::to_string(boundPort);
  listenFd = fd;
  acceptor = std::thread([this] { acceptLoop(); });
  return {};
}

void MetricsListener::stop() {
  if (listenFd < 0)
    return;
  ::shutdown(listenFd, SHUT_RDWR);
  if (acceptor.joinable())
    acceptor.join();
  close(listenFd);
  listenFd = -1;
  // Every scrape ends within its I/O timeouts and one render.
  std::unique_lock lock(mu);
  idle.wait_for(lock, 2 * kIoTimeout + std::chrono::seconds(5),
                [this] { return serving == 0; });
}

std::string MetricsListener::refusal(int c,
                                     const sockaddr_storage &peer) const {
  if (allowed.covers(peer))
    return {};
  if (!PeerAllowList::isLoopback(peer))
    return "not loopback, not in metrics_allow";
  if (!config.ownerOnLoopback)
    return {};
  std::string why;
  std::optional<uid_t> uid = loopbackPeerUid(c, &why);
  if (!uid)
    return "a loopback peer whose user is unknown: " + why;
  if (*uid != geteuid())
    return "a process of uid " + std::to_string(*uid) +
           ", not this daemon's user; metrics_allow = " + peerText(peer) +
           " opens it";
  return {};
}

void MetricsListener::acceptLoop() {
  bool warnedFull = false;
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    int c = accept4(listenFd, reinterpret_cast<sockaddr *>(&peer), &len,
                    SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
          errno == ENOBUFS) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      return; // shut down in stop()
    }
    if (std::string why = refusal(c, peer); !why.empty()) {
      if (std::string more; refused.allow(more))
        spdlog::warn("metrics: refused {} ({}){}", peerText(peer), why, more);
      sendAll(c, response("403 Forbidden", "text/plain",
                          "not allowed: see metrics_allow\n", true));
      close(c);
      continue;
    }
    {
      std::lock_guard lock(mu);
      if (serving >= kMaxScrapes && preemptSilent()) {
        // One silent connection gives its slot up.
      } else if (serving >= kMaxScrapes) {
        if (!std::exchange(warnedFull, true))
          spdlog::warn("metrics: {} scrapes at once; closing new ones",
                       kMaxScrapes);
        close(c);
        continue;
      }
      warnedFull = false;
      ++serving;
      awaitingRequest.push_back({c, Clock::now()});
    }
    Connections::Start started = admitted.serve("metrics", c, [this, c] {
      serve(c);
      admitted.disown(c);
      close(c);
      std::lock_guard lock(mu);
      --serving;
      idle.notify_all();
    });
    if (started != Connections::Start::Started) {
      std::lock_guard lock(mu);
      std::erase_if(awaitingRequest,
                    [c](const Awaiting &a) { return a.fd == c; });
      close(c); // Connections said why in the log
      --serving;
      idle.notify_all();
    }
  }
}

bool MetricsListener::preemptSilent() {
  // The oldest connection that has been open a while and has nothing to
  // read: a scraper's request arrives with its connection, and one whose
  // request is already here is never cut. Under `mu`, so each is still
  // open (serve() leaves the list under `mu` before its descriptor is
  // closed).
  auto now = Clock::now();
  for (auto it = awaitingRequest.begin(); it != awaitingRequest.end(); ++it) {
    char c;
    if (now - it->since < std::chrono::milliseconds(100) ||
        recv(it->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != -1)
      continue;
    ::shutdown(it->fd, SHUT_RDWR);
    awaitingRequest.erase(it);
    return true;
  }
  return false;
}

void MetricsListener::serve(int fd) {
  std::string head = readRequestHead(fd);
  {
    std::lock_guard lock(mu);
    std::erase_if(awaitingRequest,
                  [fd](const Awaiting &a) { return a.fd == fd; });
  }
  if (head.empty())
    return;
  std::string line = head.substr(0, head.find_first_of("\r\n"));
  size_t sp1 = line.find(' '), sp2 = line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    sendAll(fd,
            response("400 Bad Request", "text/plain", "bad request\n", true));
    return;
  }
  std::string method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  target = target.substr(0, target.find('?'));
  bool head_ = method == "HEAD";
  if (method != "GET" && !head_) {
    sendAll(fd, response("405 Method Not Allowed", "text/plain",
                         "GET /metrics\n", true));
    return;
  }
  if (target != "/metrics") {
    sendAll(fd, response("404 Not Found", "text/plain",
                         "linkd serves its metrics at /metrics\n", !head_));
    return;
  }
  sendAll(fd, response("200 OK", "text/plain; version=0.0.4; charset=utf-8",
                       render(), !head_));
}

} // namespace linkd
