// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Log lines about what others send — a peer of another user refused, a
// metrics scrape from an address not allowed, a farm call without a valid
// token — are limited per cause: anyone who can connect could otherwise
// write to the daemon's disk at will (one thread in another
// network namespace grew the log by 2.57 MB in 20 s). Per cause, the first
// kBurst occurrences of a window are logged; the rest are counted and said
// in the next line logged ("... (N more since ...)"). The counters the
// metrics show count every occurrence.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace linkd {

class LogLimit {
public:
  static constexpr int kBurst = 10;
  static constexpr std::chrono::seconds kWindow{60};

  // Whether this occurrence is logged; if so, `suffix` is "" or what was
  // left out before it (" (N more not logged)").
  bool allow(std::string &suffix) {
    std::lock_guard lock(mu);
    auto now = std::chrono::steady_clock::now();
    if (now - windowStart >= kWindow) {
      windowStart = now;
      logged = 0;
    }
    if (logged >= kBurst) {
      ++dropped;
      return false;
    }
    ++logged;
    suffix = dropped
                 ? " (" + std::to_string(dropped) + " more like it not logged)"
                 : std::string();
    dropped = 0;
    return true;
  }

private:
  std::mutex mu;
  std::chrono::steady_clock::time_point windowStart{};
  int logged = 0;
  uint64_t dropped = 0;
};

} // namespace linkd
