// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Counting semaphore for `--jobs N`: at most N links run at once, the rest
// wait in arrival order. Waiters poll a cancellation predicate so that a
// client that gives up never holds a place in the queue. Every path that
// runs a link child holds its slot through a JobSlots::Hold.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace linkd {

class JobSlots {
public:
  explicit JobSlots(unsigned slots) : free(slots) {}

  // Returns false if `cancelled` turned true before a slot was free.
  bool acquire(const std::function<bool()> &cancelled) {
    std::unique_lock lock(mu);
    uint64_t ticket = nextTicket++;
    ++waitingCount;
    while (!(free > 0 && ticket == serving)) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      if (cancelled()) {
        // Hand our turn on, so later tickets are not stuck behind us.
        abandoned.push_back(ticket);
        skipAbandonedLocked();
        --waitingCount;
        cv.notify_all();
        return false;
      }
      skipAbandonedLocked();
    }
    --free;
    ++serving;
    skipAbandonedLocked();
    --waitingCount;
    cv.notify_all();
    return true;
  }

  void release() {
    std::lock_guard lock(mu);
    ++free;
    cv.notify_all();
  }

  // One slot, held from acquire() until release() or the holder's end.
  class Hold {
  public:
    explicit Hold(JobSlots &slots) : slots(slots) {}
    Hold(const Hold &) = delete;
    Hold &operator=(const Hold &) = delete;
    ~Hold() { release(); }
    bool acquire(const std::function<bool()> &cancelled) {
      held = slots.acquire(cancelled);
      return held;
    }
    void release() {
      if (held)
        slots.release();
      held = false;
    }

  private:
    JobSlots &slots;
    bool held = false;
  };

  // Slots no link holds (a link arriving now starts at once).
  unsigned freeSlots() const {
    std::lock_guard lock(mu);
    return free;
  }

  unsigned waiting() const {
    std::lock_guard lock(mu);
    return waitingCount;
  }

private:
  void skipAbandonedLocked() {
    for (bool moved = true; moved;) {
      moved = false;
      for (auto it = abandoned.begin(); it != abandoned.end(); ++it) {
        if (*it == serving) {
          ++serving;
          abandoned.erase(it);
          moved = true;
          break;
        }
      }
    }
  }

  mutable std::mutex mu;
  std::condition_variable cv;
  unsigned free;
  unsigned waitingCount = 0;
  uint64_t nextTicket = 0;
  uint64_t serving = 0;
  std::vector<uint64_t> abandoned;
};

} // namespace linkd
