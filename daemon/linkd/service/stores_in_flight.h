// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Results being stored right now, by action key, so that an identical link
// arriving meanwhile waits for the store and is answered from it instead of
// running LLD again.
//
// A miss answers its client first and stores afterwards; for a large output
// (W1: 132 MB, hashed, compressed and written) the store takes a good part
// of a second, and a twin started as soon as the first client returned
// (make's next step, a CI retry) would miss and link again. The first
// request marks its key before it answers (so any twin that finds the cache
// empty afterwards also finds the mark) and clears it when the store ends,
// however it ends; the twin waits, bounded, then looks up again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

namespace linkd {

class StoresInFlight {
public:
  // Held by the request whose result for `key` is about to be stored.
  class Mark {
  public:
    Mark(StoresInFlight &owner, std::string key)
        : owner(owner), key(std::move(key)) {
      std::lock_guard lock(owner.mu);
      ++owner.storing[this->key];
    }
    Mark(const Mark &) = delete;
    Mark &operator=(const Mark &) = delete;
    ~Mark() {
      {
        std::lock_guard lock(owner.mu);
        if (--owner.storing[key] == 0)
          owner.storing.erase(key);
      }
      owner.done.notify_all();
    }

  private:
    StoresInFlight &owner;
    std::string key;
  };

  // If a result for `key` is being stored, waits until no store for it is
  // in flight or `limit` has passed. True if it waited for one that ended.
  bool waitFor(const std::string &key, std::chrono::milliseconds limit) {
    std::unique_lock lock(mu);
    if (!storing.count(key))
      return false;
    return done.wait_for(lock, limit, [&] { return !storing.count(key); });
  }

private:
  std::mutex mu;
  std::condition_variable done;
  std::map<std::string, int> storing; // key -> stores in flight
};

} // namespace linkd
