// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One connection cap and one idle limit for every listener of the daemon.
//
// A listener that gives each connection a thread of its own (the thin
// client's socket, liblinkd's <socket>.blob, a metrics endpoint) admits it
// through one Connections, owned by the daemon: a flood of connections (a
// runaway script, a hostile process of the same user) on any door cannot
// take every thread the user may have, and one that finds no thread to be
// had (the user's process limit, `ulimit -u`) is turned away like one over
// the cap, never an exception that ends the daemon. The rest are turned
// away by their listener in its own protocol (an error frame), so their
// clients link locally.
//
// A connection that keeps the daemon waiting for its next request longer
// than kConnectionIdleLimit gives its thread back. gRPC's connections (the
// socket's gRPC callers, the farm node's port) hold no thread while idle:
// they get the same limit as GRPC_ARG_MAX_CONNECTION_IDLE_MS and the same
// cap on the threads gRPC runs calls on (its resource quota).
//
// A stopping daemon hangs up the connections still open, which cancels
// their links the way gRPC's Shutdown cancels its calls, and waits for their
// threads before it tears down what they use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <set>
#include <string_view>

namespace linkd {

// Connections served at once, a thread each, by all listeners together.
inline constexpr size_t kMaxConnections = 1024;
// How long a connection may keep its thread waiting for a request (its
// first bytes, or the next request on a connection that serves several).
inline constexpr std::chrono::milliseconds kConnectionIdleLimit{30000};

class Connections {
public:
  explicit Connections(size_t cap = kMaxConnections) : cap(cap) {}

  enum class Start {
    Started,  // `body` runs on a thread of its own
    Full,     // `cap` connections are open
    NoThread, // no thread could be made
  };
  // Counts `fd` in and runs `body` on a thread of its own, then counts it
  // out; `body` disowns `fd` before it closes it or hands it on. Refused
  // (Full, NoThread): nothing is counted and `fd` is the caller's to turn
  // away. `listener` names the door in the log, which says once when the
  // cap is reached (until half the connections have gone) and every time
  // there was no thread.
  Start serve(std::string_view listener, int fd, std::function<void()> body);
  // `fd` is no longer the daemon's to hang up: it is about to be closed, or
  // was handed to gRPC. Call before either.
  void disown(int fd);
  size_t open() const;
  size_t capacity() const { return cap; }
  // Hangs up every connection still owned and waits up to `timeout` for all
  // admitted threads to leave; false if some did not.
  bool hangUpAll(std::chrono::milliseconds timeout);

private:
  bool admit(int fd);
  void leave();

  const size_t cap;
  mutable std::mutex mu;
  std::condition_variable left;
  size_t count = 0;
  bool saidFull = false;
  std::set<int> owned;
};

} // namespace linkd
