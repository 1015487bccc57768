// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_client/output_writer.h"

#include "store/local_store.h"
#include "util/files.h"

namespace linkd {
namespace {
constexpr size_t kMaxQueuedBytes = 8 << 20;
} // namespace

OutputWriter::OutputWriter(int fd) : fd(fd), worker([this] { loop(); }) {}

OutputWriter::~OutputWriter() {
  if (worker.joinable()) {
    Digest unused;
    finish(unused);
  }
}

bool OutputWriter::add(std::string chunk) {
  std::unique_lock lock(mu);
  room.wait(lock, [this] { return queuedBytes < kMaxQueuedBytes || failed; });
  if (failed)
    return false;
  queuedBytes += chunk.size();
  queue.push_back(std::move(chunk));
  cv.notify_one();
  return true;
}

void OutputWriter::loop() {
  std::unique_lock lock(mu);
  for (;;) {
    cv.wait(lock, [this] { return ending || !queue.empty(); });
    if (queue.empty())
      return; // ending, and everything is written
    std::string chunk = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    bool ok = writeAll(fd, chunk);
    size_t n = chunk.size();
    if (ok)
      hash.update(std::move(chunk));
    lock.lock();
    queuedBytes -= n;
    failed = failed || !ok;
    room.notify_one();
  }
}

bool OutputWriter::finish(Digest &digest) {
  {
    std::lock_guard lock(mu);
    ending = true;
    cv.notify_one();
  }
  worker.join();
  Digest d = hash.finish();
  if (failed)
    return false;
  digest = d;
  return true;
}

} // namespace linkd
