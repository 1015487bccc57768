// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The remote tiers behind the local store: tried in order after a local
// miss, written in the background after a local store.
//
// Trust: a blob is accepted only if its content hashes to the digest asked
// for (a wrong blob is counted as corrupt and is a miss). Action entries are
// wrapped in an envelope that can carry an HMAC-SHA-256 over the key and the
// payload; a reader configured with the shared key accepts only entries that
// carry a valid one, so a worker without the key cannot poison the cache of
// workers that have it (its entries are counted as rejected).
//
// Failure is a miss: each tier has a circuit breaker that opens on a timeout
// or on three errors in a row and lets one request through after the cool-down
// to probe whether the tier is back. Writes go through one background thread
// with a bounded queue; when it is full, writes are dropped (and counted),
// never waited for.
#pragma once

#include "store/remote_backend.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace linkd {

struct RemoteOptions {
  std::vector<RemoteTierConfig> tiers;
  std::string hmacKey;                        // empty: entries unsigned
  std::chrono::seconds breakerCooldown{30};
  uint64_t maxQueuedBytes = 1ull << 30;
  // Where failures are told: an error or timeout with what the server said,
  // a breaker opening, a corrupt blob, a rejected entry; at most one line
  // per tier and kind a minute (with how many were not told).
  std::function<void(const std::string &)> warn = nullptr;
  // Builds the backend of a grpc:// or grpcs:// tier (REAPI), which needs
  // gRPC: the daemon's (daemon/linkd/reapi/reapi_cache.h). Null and `error`
  // if it cannot.
  std::function<std::unique_ptr<RemoteBackend>(const RemoteTierConfig &,
                                               std::string *error)>
      makeGrpcBackend = nullptr;
};

// Counter names as `linkd stats` shows them (remote_hits, ...).
struct RemoteCounters {
  std::atomic<uint64_t> hits{0}, misses{0}, errors{0}, timeouts{0};
  std::atomic<uint64_t> bytesRead{0}, bytesWritten{0}, writes{0};
  std::atomic<uint64_t> writesDropped{0}, rejected{0}, corrupt{0};
  // Writes to a tier of what a lower tier had (it had missed), and of
  // blobs found corrupt there, replaced.
  std::atomic<uint64_t> refills{0}, healed{0};
  std::atomic<uint64_t> breakerTrips{0}, skippedOpen{0};
  std::atomic<uint64_t> backfills{0}; // remote entries copied to the local store
  std::map<std::string, uint64_t> snapshot() const;
  void zero();
};

class RemoteTiers {
public:
  // Builds the backends (no connection is made yet).
  static std::unique_ptr<RemoteTiers> create(RemoteOptions options,
                                             std::string *error);
  ~RemoteTiers();

  bool canRead() const;
  bool canWrite() const;

  // Verified content of blob `d` (of `size` bytes, or kSizeUnknown) from
  // the first readable tier that has it.
  std::optional<std::string> getBlob(const Digest &d, uint64_t size);
  // Streams blob `d` from the first readable tier that has it into `fd`
  // (from offset 0, truncated first), verifying the content as it arrives
  // (hashed on a second thread). True only for verified content.
  // `why`, if given, gets each tier's part when it returns false ("redis://h/0:
  // timed out, http://h/c: corrupt (dropped)").
  bool fetchBlobToFile(const Digest &d, uint64_t size, int fd,
                       std::string *why = nullptr);
  // Payload of action entry `key` from the first readable tier that has a
  // valid one.
  // valid one; `why` as for fetchBlobToFile.
  std::optional<std::string> getAction(const Digest &key,
                                       std::string *why = nullptr);

  // Background writes to every writable tier. `load` produces the blob's
  // content when the writer gets to it (so large outputs are not held in
  // memory while queued); `size` (exact: REAPI tiers name blobs by it)
  // counts against the queue limit.
  void putBlobAsync(const Digest &d, uint64_t size,
                    std::function<std::optional<std::string>()> load);
  // `merge` gets the tier's current payload (if any) and returns the payload
  // to write (e.g. the union of manifest input sets).
  void putActionAsync(
      const Digest &key,
      std::function<std::string(const std::optional<std::string> &)> merge);

  // Waits until queued writes are done (tests, shutdown).
  void drain();

  RemoteCounters &counters() { return stats; }
  // Each tier's name and whether its breaker is open (tripped and not yet
  // closed by a success; half-open counts as open), for the metrics.
  std::vector<std::pair<std::string, bool>> breakers();
  // Each tier's requests by outcome, for the metrics: which tier of several
  // fails, or serves the hits.
  struct TierCounts {
    std::string name;
    std::map<std::string, uint64_t> outcomes; // hit, miss, error, ...
  };
  std::vector<TierCounts> tierCounts();

  std::string wrapAction(const Digest &key, const std::string &payload) const;
  // nullopt: malformed, or not signed with our key when we have one.
  std::optional<std::string> unwrapAction(const Digest &key,
                                          const std::string &entry) const;

private:
  struct Tier {
    RemoteTierConfig cfg;
    std::unique_ptr<RemoteBackend> backend;
    std::mutex mu;
    int consecutiveErrors = 0;
    std::chrono::steady_clock::time_point openUntil{};
    bool probing = false;
    // A blob found corrupt here: until then, this daemon's writes replace
    // what the tier has instead of trusting its presence (the entry a
    // corrupt blob belonged to may have others; kSuspectFor after the last
    // one found).
    std::atomic<int64_t> replaceUntilNs{0};
    struct Told {
      std::chrono::steady_clock::time_point at{};
      uint64_t unsaid = 0;
    };
    std::map<std::string, Told> told; // by kind, under `mu`
    // Requests by outcome (tierCounts).
    std::atomic<uint64_t> hits{0}, misses{0}, stores{0}, errors{0}, timeouts{0},
        corrupt{0}, rejected{0}, skipped{0};
  };
  explicit RemoteTiers(RemoteOptions o) : opts(std::move(o)) {}
  bool admit(Tier &t);
  void record(Tier &t, RemoteStatus st);
  // Tells `what` about tier `t` through opts.warn, rate-limited by `kind`.
  void tell(Tier &t, const std::string &kind, const std::string &what);
  // Blob `d` of tier `t` did not hash to its name: the next write of `d`
  // (and for kSuspectFor of any blob) replaces it there instead of finding
  // it present (writers saw the corrupt blob, skipped the upload,
  // and the tier missed on it for good).
  void noteCorrupt(Tier &t, const Digest &d);
  bool seenCorrupt(Tier &t, const Digest &d);
  // Writes what a lower tier had (a blob, or an action entry) to the
  // writable tiers above it that missed (a Redis that restarted empty is
  // refilled on hits).
  void refill(const std::vector<Tier *> &missed, const Digest &key,
              std::string bytes, bool isAction);
  void enqueue(uint64_t bytes, std::function<void()> task);
  void writerLoop();

  RemoteOptions opts;
  std::vector<std::unique_ptr<Tier>> tiers;
  RemoteCounters stats;
  std::mutex corruptMu;
  std::set<std::pair<Tier *, Digest>> corruptSeen; // at most kMaxCorrupt
  static constexpr size_t kMaxCorrupt = 4096;
  static constexpr uint64_t kMaxRefillBytes = 256ull << 20;
  static constexpr std::chrono::minutes kSuspectFor{10};

  std::mutex qmu;
  std::condition_variable qcv, idleCv;
  std::deque<std::pair<uint64_t, std::function<void()>>> queue;
  uint64_t queuedBytes = 0;
  bool busy = false;
  bool stopping = false;
  std::thread writer;
};

} // namespace linkd
