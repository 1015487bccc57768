// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "digest/sha256_thread.h"

namespace linkd {
namespace {
constexpr size_t kMaxQueuedBytes = 8 << 20;
} // namespace

Sha256Thread::Sha256Thread() : worker([this] { loop(); }) {}

Sha256Thread::~Sha256Thread() {
  if (worker.joinable())
    finish();
}

void Sha256Thread::update(std::string chunk) {
  if (chunk.empty())
    return;
  std::unique_lock lock(mu);
  room.wait(lock, [this] { return queuedBytes < kMaxQueuedBytes; });
  queuedBytes += chunk.size();
  queue.push_back(Piece{std::move(chunk), {}});
  cv.notify_one();
}

void Sha256Thread::updateView(std::string_view v) {
  if (v.empty())
    return;
  std::lock_guard lock(mu);
  queue.push_back(Piece{{}, v});
  cv.notify_one();
}

void Sha256Thread::loop() {
  std::unique_lock lock(mu);
  for (;;) {
    cv.wait(lock, [this] { return ending || !queue.empty(); });
    if (queue.empty())
      return; // ending, and everything is hashed
    Piece p = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    hash.update(p.owned.empty() ? p.view : std::string_view(p.owned));
    lock.lock();
    queuedBytes -= p.owned.size();
    room.notify_one();
  }
}

Digest Sha256Thread::finish() {
  {
    std::lock_guard lock(mu);
    ending = true;
    cv.notify_one();
  }
  worker.join();
  return hash.finish();
}

} // namespace linkd
