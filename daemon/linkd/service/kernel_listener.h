// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's second door, for liblinkd (include/linkd/linkd.h): a Unix
// socket beside the gRPC one (<socket>.blob, mode 0600, own uid only) that
// speaks kernel_wire.h. A thread per connection runs one request at a time:
// a health check, or a kernel link (kernel_link.h). The library opens one
// connection per call, so N calling threads are N concurrent links, bounded
// by the daemon's job slots. Connections are admitted under the daemon's one
// cap and idle limit (connection_limits.h), shared with its other listeners.
#pragma once

#include "daemon/linkd/blobs/blob_store.h"
#include "daemon/linkd/runner/job_slots.h"
#include "daemon/linkd/runner/zygote_client.h"
#include "daemon/linkd/service/connection_limits.h"
#include "daemon/linkd/service/kernel_cache.h"
#include "daemon/linkd/service/log_limit.h"
#include "kernel/kernel_wire.h"

#include "cache/cache_stats.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace linkd {

struct KernelListenerConfig {
  std::string socketPath; // <LINKD_SOCKET>.blob
  std::string blobDir;    // inputs by digest, and scratch directories
  uint64_t maxBlobBytes = 2ull << 30;
  uint64_t maxRequestBytes = 1ull << 30;
  uint64_t linkTimeoutSeconds = 600;
  unsigned jobs = 2;
};

// What a kernel link needs from the daemon; owned by the listener's owner.
// Numbers for the kernel links running at once, the lowest free first. A
// link's scratch directory is under its lane's (`links/lane<N>`), and a
// reusable worker is confined to one lane's directory (kernel_link.cpp): a
// worker reaches only the scratch of links it runs itself, one at a time.
class KernelLanes {
public:
  unsigned take() {
    std::lock_guard lock(mu);
    unsigned i = 0;
    while (i < busy.size() && busy[i])
      ++i;
    if (i == busy.size())
      busy.push_back(false);
    busy[i] = true;
    return i;
  }
  void give(unsigned lane) {
    std::lock_guard lock(mu);
    busy[lane] = false;
  }

private:
  std::mutex mu;
  std::vector<bool> busy;
};

struct KernelLinkContext {
  ZygoteClient &zygote;
  BlobStore &blobs;
  KernelCache &cache;
  CacheStats *stats; // may be null (cache off)
  JobSlots &slots;
  KernelLanes &lanes;
  const KernelListenerConfig &config;
  std::atomic<uint64_t> &nextId;
  std::atomic<uint64_t> &active;
  std::atomic<uint64_t> &peakActive;
  std::atomic<uint64_t> &hits, &misses;
};

class KernelListener {
public:
  KernelListener(KernelListenerConfig config, ZygoteClient &zygote,
                 LocalStore *store, CacheStats *stats, Connections &admitted);
  ~KernelListener();
  // Binds and starts accepting; "" or why not (the daemon then serves gRPC
  // only, and liblinkd links in child processes).
  std::string start();
  // Stops accepting; connections waiting for a request go at once.
  void stopAccepting();
  // stopAccepting, then waits up to 30 s for running links.
  void stop();
  uint64_t activeLinks() const { return active.load(); }
  // Seconds since the last request ended (0 while one runs).
  uint64_t idleSeconds() const;
  // From the daemon's once-a-second loop: once a minute, while no kernel link
  // runs (one may hold a blob it has not opened yet), trims the blob store
  // to its cap.
  void maintain() {
    if (++maintainRounds % 60 == 0 && active.load() == 0)
      blobs.evict();
  }

private:
  void acceptLoop();
  void serveConnection(int fd);
  bool awaitRequest(int fd) const;

  KernelListenerConfig config;
  ZygoteClient &zygote;
  BlobStore blobs;
  KernelCache cache;
  CacheStats *stats;
  JobSlots slots;
  KernelLanes lanes;
  Connections &admitted;
  int listenFd = -1;
  std::thread acceptor;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> nextId{0}, active{0}, peakActive{0}, connections{0};
  LogLimit refusedPeers; // their log lines (log_limit.h)
  std::atomic<uint64_t> hits{0}, misses{0};
  uint64_t maintainRounds = 0;
  std::atomic<int64_t> lastEndNs;
};

} // namespace linkd
