// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_node/scratch_janitor.h"

#include "util/files.h"

#include <unistd.h>

namespace linkd {

ScratchJanitor::ScratchJanitor() : worker([this] { loop(); }) {}

ScratchJanitor::~ScratchJanitor() {
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_one();
  worker.join();
}

void ScratchJanitor::remove(std::string dir) {
  {
    std::lock_guard lock(mu);
    queue.push_back(std::move(dir));
  }
  cv.notify_one();
}

void ScratchJanitor::loop() {
  std::unique_lock lock(mu);
  for (;;) {
    cv.wait(lock, [this] { return stopping || !queue.empty(); });
    if (queue.empty())
      return; // stopping, and nothing left
    std::string dir = std::move(queue.front());
    queue.pop_front();
    lock.unlock();
    removeTree(dir);
    lock.lock();
  }
}

} // namespace linkd
