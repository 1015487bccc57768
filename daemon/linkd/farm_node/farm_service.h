// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The farm node's gRPC service (linkd serve --listen): links offloaded by
// other daemons, run in the sandbox against the client's files.
//
// One Offload call: check the bearer token (before reading anything), check
// the request's claimed size, take one of the client's link slots and one of
// the node's job slots, ask the client for the blobs its prefetched facts
// name that the node lacks (one round trip), fork a sandboxed link child, and
// answer its file-system questions (lib/view/sandbox_view.h), asking
// the client for unknown paths and missing blobs as the link meets them. The
// linker's stdout/stderr stream back as they come; when the child exits, every
// file it wrote streams back, then OffloadDone with the status and the link's
// access records (client paths), which the client's cache stores. Limits answer
// RESOURCE_EXHAUSTED; a malformed request INVALID_ARGUMENT; a bad client never
// costs more than its own link. A draining node (stopping: SIGTERM, `linkd
// stop`) refuses new calls with UNAVAILABLE, which the client takes as "link
// elsewhere" (another node, or locally), and lets the links it has finish.
#pragma once

#include "daemon/linkd/blobs/blob_store.h"
#include "daemon/linkd/farm_node/blob_owners.h"
#include "daemon/linkd/farm_node/farm_tokens.h"
#include "daemon/linkd/farm_node/offload_wire.h"
#include "daemon/linkd/farm_node/scratch_janitor.h"
#include "daemon/linkd/runner/job_slots.h"
#include "daemon/linkd/runner/zygote_client.h"
#include "daemon/linkd/service/log_limit.h"
#include "linkd/v1/farm.grpc.pb.h"
#include "metrics/histogram.h"

#include <atomic>
#include <chrono>
#include <string>

namespace linkd {

struct FarmNodeConfig {
  std::string listen; // HOST:PORT
  std::string tlsCert, tlsKey, clientCa, tokenFile;
  bool insecure = false;                  // plaintext on a non-loopback address
  uint64_t maxRequestBytes = 32ull << 30; // input bytes one link may claim
  OffloadCaps caps; // paths one link may describe (offload_wire.h)
  unsigned maxLinksPerToken = 8;
  uint64_t linkTimeoutSeconds = 3600;
  // A client that leaves a question or an upload without progress this long
  // (a byte at a time is none: BlobStore::kProgressBytes), or does not
  // take what the node writes to it, is dropped, and its job slot goes to
  // the next link (a stalled token must not starve the others until the
  // link timeout).
  uint64_t stallTimeoutSeconds = 30;
  unsigned jobs = 1;
  std::string storeDir; // input blobs
  uint64_t storeMaxBytes = 50ull << 30;
};

class FarmService final : public v1::Farm::Service {
public:
  FarmService(FarmNodeConfig config, ZygoteClient &zygote, BlobStore &blobs,
              FarmTokens &tokens);

  // Offload, with its messages as bytes: each OffloadUp is checked against
  // the link's caps before it is parsed (offload_wire.h). Registered in
  // place of the generated handler.
  grpc::Status
  offload(grpc::ServerContext *ctx,
          grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer> *stream);
  grpc::Status Health(grpc::ServerContext *ctx, const v1::HealthRequest *req,
                      v1::HealthReply *reply) override;

  unsigned activeLinks() const { return active.load(); }
  uint64_t linksStarted() const { return linksTotal.load(); }
  // From now on new offloads are refused with UNAVAILABLE.
  void startDraining() { draining = true; }
  bool isDraining() const { return draining.load(); }

  // What the metrics read (daemon/linkd/metrics/daemon_metrics.h).
  struct Counts {
    uint64_t links, rejectedUnauthenticated, rejectedLimit, rejectedDraining,
        storeBytes;
    unsigned jobs, active, queued, freeSlots;
  };
  Counts counts() const;
  // Offloaded links, from the first message to OffloadDone.
  const LatencyHistogram &linkTimes() const { return linkSeconds; }
  // The store's size, refreshed by the maintenance loop (Health is cheap).
  void noteStoreBytes(uint64_t n) { storeBytes = n; }

private:
  friend class OffloadSession;
  FarmNodeConfig config;
  ZygoteClient &zygote;
  BlobStore &blobs;
  FarmTokens &tokens;
  BlobOwners owners; // which token sent which blob
  JobSlots slots;
  std::chrono::steady_clock::time_point started;
  std::atomic<unsigned> active{0};
  std::atomic<uint64_t> linksTotal{0};
  std::atomic<uint64_t> linksRejected{0}; // all of the three below
  LogLimit unauthenticatedLog;            // its lines (service/log_limit.h)
  std::atomic<uint64_t> rejectedUnauthenticated{0}, rejectedLimit{0},
      rejectedDraining{0};
  std::atomic<bool> draining{false};
  LatencyHistogram linkSeconds;
  std::atomic<uint64_t> storeBytes{0};
  long landlockAbi = 0;   // > 0: links must be confined (sandbox_child.h)
  ScratchJanitor janitor; // last: it drains before the rest goes
};

} // namespace linkd
