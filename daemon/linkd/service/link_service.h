// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The gRPC service: one Link call = a cache lookup, and on a miss one forked
// link child, its stdout and stderr streamed back as they come, then its exit
// status; successful cacheable links are stored after the client has its
// answer.
#pragma once

#include "audit/state_record.h"
#include "cache/cache_stats.h"
#include "cache/link_cache.h"
#include "config/config.h"
#include "daemon/linkd/farm_client/farm_client.h"
#include "daemon/linkd/runner/job_slots.h"
#include "daemon/linkd/runner/zygote_client.h"
#include "daemon/linkd/service/reply_stream.h"
#include "daemon/linkd/service/request_log.h"
#include "daemon/linkd/service/stores_in_flight.h"
#include "linkd/v1/linkd.grpc.pb.h"
#include "metrics/histogram.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace linkd {

struct ServiceConfig {
  unsigned jobs = 1;
  uint64_t idleTimeoutSeconds = 600;
  std::string socketPath;
  std::string logPath;
  std::string workDir; // private scratch space (link-time rewriting)
  // Incremental relinks (docs/incremental.md): the outputs' states, and
  // whether LLD links in full beside each patch (incremental_verify).
  std::string incrementalDir;
  bool incrementalVerify = false;
  // The room its full links leave (incremental_slack): padded objects.
  uint64_t incrementalSlackPercent = 0;
  uint64_t incrementalSlackBytes = 0;
  // For `linkd config` and `linkd status` (InfoReply), and for telling a
  // client whose environment asks for other settings.
  std::vector<Setting> settings;
  std::vector<std::string> configWarnings;
};

// The cache as the service uses it; null members when caching is off.
struct CacheRuntime {
  bool enabled = false;
  LocalStore *store = nullptr;
  // Where the audit's link records go: the store, or with the cache off a
  // store opened for them alone (docs/audit.md); null: no records.
  LocalStore *recordStore = nullptr;
  StatCache *statCache = nullptr;
  LinkCache *cache = nullptr;
  CacheStats *stats = nullptr;
  RemoteTiers *remote = nullptr;
  TempJournal *journal = nullptr; // linkd's temporaries in build dirs
  KeyContext keyContext;
};

class LinkService final : public v1::Linkd::Service {
public:
  // `farm` (optional): cache misses may be offloaded there (docs/farm.md).
  LinkService(ServiceConfig config, ZygoteClient &zygote, CacheRuntime cache,
              std::function<void()> requestShutdown,
              OffloadTarget *farm = nullptr);

  grpc::Status Link(grpc::ServerContext *ctx, const v1::LinkRequest *req,
                    grpc::ServerWriter<v1::LinkReply> *writer) override;
  grpc::Status Rewrite(grpc::ServerContext *ctx, const v1::LinkRequest *req,
                       grpc::ServerWriter<v1::LinkReply> *writer) override;
  grpc::Status Info(grpc::ServerContext *ctx, const v1::InfoRequest *req,
                    v1::InfoReply *reply) override;
  grpc::Status Shutdown(grpc::ServerContext *ctx,
                        const v1::ShutdownRequest *req,
                        v1::ShutdownReply *reply) override;
  grpc::Status Stats(grpc::ServerContext *ctx, const v1::StatsRequest *req,
                     v1::StatsReply *reply) override;
  grpc::Status CacheControl(grpc::ServerContext *ctx,
                            const v1::CacheControlRequest *req,
                            v1::CacheControlReply *reply) override;

  // Link and Rewrite, from gRPC or from the thin client's framed connection
  // (local_link.h): checks the request, counts it, runs it.
  grpc::Status serveRequest(const v1::LinkRequest &req, ReplyStream &out,
                            bool rewriteCall);

  // Seconds since the last request finished, or 0 while links are running.
  uint64_t idleSeconds() const;
  unsigned activeLinks() const { return active.load(); }

  // What the metrics read (daemon/linkd/metrics/daemon_metrics.h): how long
  // links took (from a job slot to the answer; on the farm, the offload)
  // and cache lookups, the job slots and their queue.
  struct Timings {
    LatencyHistogram localLinks, farmLinks, lookups;
  };
  const Timings &timings() const { return timing; }
  unsigned jobs() const { return config.jobs; }
  unsigned queuedLinks() const { return slots.waiting(); }
  unsigned freeSlots() const { return slots.freeSlots(); }

private:
  // One request's path (link_request.cpp): the state between its steps.
  struct Request;
  struct LinkRun;
  // The table of contents of a request; the steps follow in its order.
  grpc::Status runLink(const v1::LinkRequest &req, ReplyStream &out,
                       uint64_t linkId);
  void analyse(Request &r);
  // True when the client has its answer from the cache.
  bool answerFromCache(Request &r, ReplyStream &out);
  // Looks the request up and answers it on a hit; on a miss, why in
  // `r.missReason`.
  bool serveHit(Request &r, ReplyStream &out);
  // Tells the client about settings in its environment this daemon does not
  // follow (once per setting and value).
  void noticeSettings(const v1::LinkRequest &req, ReplyStream &out);
  std::mutex noticedMu;
  std::set<std::string> noticedSettings; // "VAR=value" already told
  // Runs the link on the farm when the policy says so; true when the client
  // has its answer (else link locally).
  bool offloadToFarm(const Request &r, ReplyStream &out);
  // The link-time rewrite's plan and cached inputs; an error message if the
  // spec cannot be used (the link then fails before LLD runs).
  // Incremental relinks: the child's plan, then what came of it (counted
  // and logged).
  void prepareIncremental(Request &r);
  void noteIncremental(Request &r);
  std::string prepareLinkRewrite(Request &r);
  // Whether the link gets the audit's record (docs/audit.md), also when
  // the cache will not keep it: then the child records just the same.
  void wantStateRecord(Request &r) const;
  bool waitForSlot(ReplyStream &out, JobSlots::Hold &slot, LinkRun &run);
  grpc::Status spawnAndPump(const v1::LinkRequest &req, ReplyStream &out,
                            uint64_t linkId, bool record, LinkRun &run);
  void classifyExit(const Request &r, LinkRun &run);
  void decideCaching(Request &r, LinkRun &run);
  void countOutcome(RequestKind kind, bool ran, v1::CacheResult result,
                    const std::string &reason);
  void logOutcome(const Request &r, const LinkRun &run);
  std::string cacheReason(const Request &r) const;
  void storeAfterAnswer(const Request &r, const LinkRun &run);
  void storeResult(const LinkAnalysis &analysis, const AccessLog &log,
                   const std::vector<OutputSnapshot> &outputs,
                   const LinkOutput &output, int exitCode, uint64_t wallMicros,
                   int64_t startFileClockNs, uint64_t linkId,
                   const RequestLog &rl = RequestLog());

  ServiceConfig config;
  ZygoteClient &zygote;
  CacheRuntime cache;
  std::function<void()> requestShutdown;
  OffloadTarget *farm;
  audit::RecordPolicy recordPolicy; // LINKD_AUDIT_RECORD, the daemon's
  JobSlots slots;
  Timings timing;
  StoresInFlight storesInFlight;
  std::chrono::steady_clock::time_point started;
  std::atomic<int64_t> lastActivityNanos;
  std::atomic<unsigned> active{0};
  std::atomic<uint64_t> linksTotal{0};
  std::atomic<uint64_t> linksFailed{0};
  std::atomic<uint64_t> linksCrashed{0};
};

} // namespace linkd
