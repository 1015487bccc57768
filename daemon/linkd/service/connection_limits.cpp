// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/service/connection_limits.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <system_error>
#include <thread>

namespace linkd {

Connections::Start Connections::serve(std::string_view listener, int fd,
                                      std::function<void()> body) {
  if (!admit(fd)) {
    std::lock_guard lock(mu);
    if (!std::exchange(saidFull, true))
      spdlog::warn("{}: {} connections open; turning new ones away", listener,
                   cap);
    return Start::Full;
  }
  // std::thread throws when none can be made; out of an accept loop, that
  // would end the daemon.
  try {
    std::thread([this, body = std::move(body)] {
      body();
      leave();
    }).detach();
  } catch (const std::system_error &e) {
    spdlog::warn("{}: no thread for a connection: {}", listener, e.what());
    disown(fd);
    leave();
    return Start::NoThread;
  }
  return Start::Started;
}

bool Connections::admit(int fd) {
  std::lock_guard lock(mu);
  if (count >= cap)
    return false;
  ++count;
  owned.insert(fd);
  if (count < cap / 2)
    saidFull = false;
  return true;
}

void Connections::disown(int fd) {
  std::lock_guard lock(mu);
  owned.erase(fd);
}

void Connections::leave() {
  // Notified under the lock: the waiter in hangUpAll may destroy this as
  // soon as it sees the count reach 0.
  std::lock_guard lock(mu);
  --count;
  left.notify_all();
}

size_t Connections::open() const {
  std::lock_guard lock(mu);
  return count;
}

bool Connections::hangUpAll(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu);
  // Under the lock, so no descriptor here was closed (and its number reused)
  // since: disown() comes first.
  for (int fd : owned)
    shutdown(fd, SHUT_RDWR);
  return left.wait_for(lock, timeout, [this] { return count == 0; });
}

} // namespace linkd
