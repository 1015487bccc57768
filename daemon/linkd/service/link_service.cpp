// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The gRPC surface of the daemon's link service: Link and Rewrite hand each
// request to its path (link_request.cpp); Info, Shutdown, Stats and
// CacheControl answer from the service's state.
#include "daemon/linkd/service/link_service.h"

#include <cstdlib>

#include <spdlog/spdlog.h>
#include <unistd.h>

namespace linkd {

using Clock = std::chrono::steady_clock;

LinkService::LinkService(ServiceConfig config, ZygoteClient &zygote,
                         CacheRuntime cache,
                         std::function<void()> requestShutdown,
                         OffloadTarget *farm)
    : config(std::move(config)), zygote(zygote), cache(std::move(cache)),
      requestShutdown(std::move(requestShutdown)), farm(farm),
      recordPolicy(audit::recordPolicyFrom(std::getenv("LINKD_AUDIT_RECORD"))),
      slots(this->config.jobs), started(Clock::now()),
      lastActivityNanos(Clock::now().time_since_epoch().count()) {}

uint64_t LinkService::idleSeconds() const {
  if (active.load() > 0)
    return 0;
  auto last = Clock::time_point(Clock::duration(lastActivityNanos.load()));
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - last)
      .count();
}

grpc::Status LinkService::Rewrite(grpc::ServerContext *ctx,
                                  const v1::LinkRequest *req,
                                  grpc::ServerWriter<v1::LinkReply> *writer) {
  GrpcReplyStream out(ctx, writer);
  return serveRequest(*req, out, /*rewriteCall=*/true);
}

grpc::Status LinkService::Link(grpc::ServerContext *ctx,
                               const v1::LinkRequest *req,
                               grpc::ServerWriter<v1::LinkReply> *writer) {
  GrpcReplyStream out(ctx, writer);
  return serveRequest(*req, out, /*rewriteCall=*/false);
}

grpc::Status LinkService::Info(grpc::ServerContext *, const v1::InfoRequest *,
                               v1::InfoReply *reply) {
  reply->set_version(LINKD_VERSION);
  reply->set_lld_version(zygote.lldVersion());
  reply->set_protocol_version(1);
  reply->set_pid(getpid());
  reply->set_uptime_seconds(
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started)
          .count());
  reply->set_jobs(config.jobs);
  reply->set_active_links(active.load());
  reply->set_queued_links(slots.waiting());
  reply->set_links_total(linksTotal.load());
  reply->set_links_failed(linksFailed.load());
  reply->set_links_crashed(linksCrashed.load());
  reply->set_idle_timeout_seconds(config.idleTimeoutSeconds);
  reply->set_socket_path(config.socketPath);
  reply->set_log_path(config.logPath);
  reply->set_zygote_pid(zygote.pid());
  for (const Setting &s : config.settings) {
    v1::Setting *out = reply->add_settings();
    out->set_key(s.key);
    out->set_value(s.value);
    out->set_source(s.source);
  }
  for (const std::string &w : config.configWarnings)
    reply->add_config_warnings(w);
  return grpc::Status::OK;
}

grpc::Status LinkService::Shutdown(grpc::ServerContext *,
                                   const v1::ShutdownRequest *,
                                   v1::ShutdownReply *) {
  spdlog::info("shutdown requested");
  requestShutdown();
  return grpc::Status::OK;
}

grpc::Status LinkService::Stats(grpc::ServerContext *,
                                const v1::StatsRequest *req,
                                v1::StatsReply *reply) {
  if (!cache.stats)
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "the cache is off in this daemon");
  StoreUsage usage = cache.store->usage();
  uint64_t max = cache.store->config().maxBytes;
  // Remote counters are always listed (zero without tiers); they count since
  // the daemon started.
  std::map<std::string, uint64_t> remote =
      cache.remote ? cache.remote->counters().snapshot()
                   : RemoteCounters().snapshot();
  remote.merge(farm ? farm->counters().snapshot() : FarmCounters().snapshot());
  std::map<std::string, uint64_t> extra = std::move(remote);
  extra["held_inputs"] = cache.cache->heldInputs();
  extra["watched_inputs"] = cache.cache->watchedInputs();
  reply->set_json(cache.stats->json(usage, max, extra));
  reply->set_text(cache.stats->text(usage, max, extra, req->all()));
  if (req->zero()) {
    cache.stats->zero();
    if (cache.remote)
      cache.remote->counters().zero();
    if (farm)
      farm->counters().zero();
  }
  return grpc::Status::OK;
}

grpc::Status LinkService::CacheControl(grpc::ServerContext *,
                                       const v1::CacheControlRequest *req,
                                       v1::CacheControlReply *reply) {
  if (!cache.store)
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "the cache is off in this daemon");
  if (req->op() == v1::CacheControlRequest::OP_CLEAR) {
    StoreUsage before = cache.store->usage();
    if (!cache.store->clear()) {
      // A damaged index: the next daemon moves it aside and starts empty
      // (SqliteDb::openOrRebuild). This one stops once its links are done.
      if (!cache.store->markIndexDamaged())
        return grpc::Status(grpc::StatusCode::INTERNAL, "clear failed");
      spdlog::warn("cache control: the index is damaged; it is rebuilt "
                   "empty when the daemon restarts (now)");
      reply->set_message("the cache index was damaged: the daemon restarts "
                         "with an empty cache");
      requestShutdown();
      return grpc::Status::OK;
    }
    cache.cache->forgetRecent();
    reply->set_removed(before.entries);
    reply->set_message("removed " + std::to_string(before.entries) +
                       " entries");
  } else if (req->op() == v1::CacheControlRequest::OP_TRIM) {
    uint64_t n = cache.store->trim();
    if (cache.journal)
      n += cache.journal->sweepOlderThan(3600);
    cache.cache->forgetRecent();
    reply->set_removed(n);
    reply->set_message("removed " + std::to_string(n) + " entries");
  } else {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unknown op");
  }
  spdlog::info("cache control: {}", reply->message());
  return grpc::Status::OK;
}

} // namespace linkd
