// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The metrics endpoint: `GET /metrics` over plain HTTP/1.1 on
// `metrics_listen` (daemon) or `--metrics-listen` (farm node), answered with
// the Prometheus text the renderer gives, one request per connection.
//
// Deliberately small and not gRPC: a scrape is one short request. What a
// listener on a TCP port must bound is bounded here, the same way the other
// listeners bound it: peers (loopback unless `metrics_allow` covers them,
// metrics/peer_allow.h; on a per-user daemon only its own user's loopback
// processes, metrics/peer_owner.h), connections served at once (kMaxScrapes of
// its own, admitted through the daemon's Connections like every other
// listener's, so they count toward its one cap; more are closed unanswered),
// the time a peer gets to send its request and to take the answer (kIoTimeout),
// and the request's size (kMaxRequestBytes). A connection for which no thread
// can be started is closed, never waited on.
#pragma once

#include "daemon/linkd/service/connection_limits.h"
#include "daemon/linkd/service/log_limit.h"
#include "metrics/peer_allow.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace linkd {

struct MetricsListenerConfig {
  std::string listen;             // HOST:PORT, or PORT (then loopback)
  std::vector<std::string> allow; // addresses/CIDRs besides loopback
  // A per-user daemon's: a loopback peer must be a process of the daemon's
  // user (peer_owner.h) unless `allow` names its address. A farm node's
  // loopback is open (a node runs as a service user; Prometheus is another).
  bool ownerOnLoopback = false;
};

class MetricsListener {
public:
  static constexpr size_t kMaxScrapes = 4;
  static constexpr std::chrono::seconds kIoTimeout{5};
  static constexpr size_t kMaxRequestBytes = 8192;

  MetricsListener(MetricsListenerConfig config,
                  std::function<std::string()> render, Connections &admitted);
  ~MetricsListener();
  MetricsListener(const MetricsListener &) = delete;
  MetricsListener &operator=(const MetricsListener &) = delete;

  // Binds and starts accepting; "" or why not (the daemon then serves on
  // without metrics).
  std::string start();
  // Stops accepting and waits for the scrapes being answered.
  void stop();
  // "HOST:PORT" as bound (the port the kernel chose for port 0).
  const std::string &address() const { return bound; }

private:
  void acceptLoop();
  // Why connection `c` from `peer` is not served; "" if it is.
  std::string refusal(int c, const sockaddr_storage &peer) const;
  // Shuts one silent connection down to free its slot; false if none is.
  bool preemptSilent();
  void serve(int fd);

  MetricsListenerConfig config;
  std::function<std::string()> render;
  Connections &admitted;
  PeerAllowList allowed;
  int listenFd = -1;
  std::string bound;
  std::thread acceptor;
  std::mutex mu;
  std::condition_variable idle;
  size_t serving = 0; // connections with a thread
  // Connections whose request has not arrived yet, oldest first: when a
  // new connection finds every slot taken, the oldest of these gives its
  // slot up (shut down; its thread ends at once). A scraper sends its
  // request as soon as it connects; connections that send nothing (issue
  // 35: four of them failed 15 of 15 scrapes) hold no slot for long.
  struct Awaiting {
    int fd;
    std::chrono::steady_clock::time_point since;
  };
  std::deque<Awaiting> awaitingRequest;
  LogLimit refused; // its log lines (service/log_limit.h)
};

// "PORT" -> "127.0.0.1:PORT"; "HOST:PORT" and "[V6]:PORT" as given. Split
// into host and port; false if malformed.
bool splitListenAddress(const std::string &listen, std::string &host,
                        std::string &port);

} // namespace linkd
