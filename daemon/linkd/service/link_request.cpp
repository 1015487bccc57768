// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One Link (or Rewrite) request's path through the daemon. runLink is the
// table of contents: analyse the request, answer it from the cache, offload
// it to the farm, prepare link-time rewriting, wait for a job slot, run a link
// child and stream its output, classify how the child ended, decide what the
// cache makes of the link, log it, answer the client, and only then store.
// The state that passes between the steps is a LinkService::Request (what was
// asked and what the cache said) and a LinkService::LinkRun (what the child
// did); each step is one function below, in that order.
#include "daemon/linkd/service/link_service.h"

#include "archive/ar_command_line.h"
#include "cache/archive_key.h"
#include "cache/file_time.h"
#include "cache/link_litter.h"
#include "cache/link_output.h"
#include "child/child_report.h"
#include "child/ordered_output.h"
#include "config/runtime_paths.h"
#include "daemon/linkd/runner/child_runner.h"
#include "daemon/linkd/service/background_work.h"
#include "daemon/linkd/service/rewrite_cache.h"
#include "link/flavor.h"
#include "link/link_invocation.h"
#include "log/log_format.h"
#include "rewrite/link_spec.h"
#include "util/clock.h"
#include "util/files.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <optional>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

std::string validate(const v1::LinkRequest &req, bool rewriteCall) {
  auto f = req.flavor();
  if (rewriteCall ? f != v1::FLAVOR_REWRITE
                  : f < v1::FLAVOR_ELF || f > v1::FLAVOR_LIB)
    return "unknown linker flavor " + std::to_string(f);
  if (req.has_rewrite_plan() || req.more_rewrite_plans_size() > 0)
    return "rewrite_plan is the daemon's to set";
  if (req.has_incremental_plan())
    return "incremental_plan is the daemon's to set";
  if (rewriteCall && (req.argv_size() < 2 || req.argv(1) != "rewrite"))
    return "a Rewrite call runs `rewrite ...`";
  if (!req.rewrite_spec().empty() && req.rewrite_spec()[0] != '/')
    return "rewrite_spec must be an absolute path";
  if (req.more_rewrite_specs_size() > 0 && req.rewrite_spec().empty())
    return "more_rewrite_specs without a rewrite_spec";
  for (const std::string &spec : req.more_rewrite_specs())
    if (spec.empty() || spec[0] != '/')
      return "more_rewrite_specs must be absolute paths";
  if (req.argv().empty())
    return "empty argv";
  if (req.cwd().empty() || req.cwd()[0] != '/')
    return "cwd must be an absolute path";
  if (!req.base_dir().empty() && req.base_dir()[0] != '/')
    return "base_dir must be an absolute path";
  return {};
}

LinkInvocation toInvocation(const v1::LinkRequest &req) {
  LinkInvocation inv;
  inv.flavor = static_cast<Flavor>(req.flavor());
  inv.argv.assign(req.argv().begin(), req.argv().end());
  inv.cwd = req.cwd();
  for (std::string_view name : flavorEnvironment(inv.flavor))
    if (auto it = req.env().find(std::string(name)); it != req.env().end())
      inv.env[it->first] = it->second;
  inv.umask = req.umask();
  inv.stderrIsColorTty = req.stderr_is_color_tty();
  if (!req.rewrite_spec().empty())
    inv.rewriteSpecs.push_back(req.rewrite_spec());
  inv.rewriteSpecs.insert(inv.rewriteSpecs.end(),
                          req.more_rewrite_specs().begin(),
                          req.more_rewrite_specs().end());
  // A base dir from the client (validate() keeps it absolute).
  inv.baseDir = req.base_dir();
  if (req.has_stdin_data())
    inv.stdinData = req.stdin_data();
  return inv;
}

RequestKind kindOf(Flavor f) {
  return isArchiver(f) ? RequestKind::Archive : RequestKind::Link;
}

bool sendChunk(ReplyStream &out, v1::OutputChunk::Stream stream,
               std::string_view data) {
  constexpr size_t kChunk = 1 << 20;
  for (size_t off = 0; off < data.size(); off += kChunk) {
    v1::LinkReply reply;
    auto *chunk = reply.mutable_output();
    chunk->set_stream(stream);
    chunk->set_data(std::string(data.substr(off, kChunk)));
    if (!out.write(reply))
      return false;
  }
  return true;
}

bool sendPiece(ReplyStream &out, bool isStderr, std::string_view data) {
  return sendChunk(out,
                   isStderr ? v1::OutputChunk::STREAM_STDERR
                            : v1::OutputChunk::STREAM_STDOUT,
                   data);
}

int64_t steadyNanos(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             t.time_since_epoch())
      .count();
}

// What one link child produced, gathered while streaming it to the client.
struct Streams {
  LinkOutput output;
  std::string records;
  bool keepOutput = false;        // capture stdout/stderr for the cache
  TempJournal *journal = nullptr; // where the child's temporaries go
  size_t journaled = 0;           // records scanned for them
  int64_t reportNanos = 0;        // when the child's report arrived (or 0)
};

// The child's phases on the daemon's clock (the same CLOCK_MONOTONIC).
v1::ChildPhases childPhases(const ChildReport &r, int64_t spawnNanos,
                            int64_t reportNanos) {
  auto us = [](int64_t from, int64_t to) -> uint64_t {
    return from > 0 && to > from ? static_cast<uint64_t>(to - from) / 1000 : 0;
  };
  int64_t output = r.outputNs > r.toolNs ? r.outputNs : r.exitNs;
  v1::ChildPhases p;
  p.set_spawn_micros(us(spawnNanos, r.requestNs));
  p.set_setup_micros(us(r.requestNs, r.toolNs));
  p.set_tool_micros(us(r.toolNs, output));
  p.set_finish_micros(us(output, r.exitNs));
  p.set_report_micros(us(r.exitNs, reportNanos));
  p.set_prestarted(r.prestarted != 0);
  p.set_links_before(r.linksBefore);
  p.set_page_faults(r.faults > 0 ? static_cast<uint64_t>(r.faults) : 0);
  return p;
}

// After a link child was stopped or died by a signal: the temporaries its
// access records name.
void removeLitter(const Streams &s, uint64_t linkId) {
  std::vector<std::string> left = leftTemporaries(s.records);
  size_t removed = removeTemporaries(left);
  if (removed)
    spdlog::info("link id={} removed {} temporaries the killed link left",
                 linkId, removed);
}

// Answers a request that cannot run (a bad rewrite spec): the message on
// stderr and status 1, as a failed link would; LLD never ran.
grpc::Status failEarly(ReplyStream &out, const std::string &message,
                       uint64_t linkId) {
  spdlog::info("link id={} refused: {}", linkId, message);
  sendChunk(out, v1::OutputChunk::STREAM_STDERR, message + "\n");
  v1::LinkReply reply;
  reply.mutable_done()->set_exit_code(1);
  reply.mutable_done()->set_cache_result(v1::CACHE_DISABLED);
  out.write(reply);
  return grpc::Status::OK;
}

} // namespace

namespace {

void traceAccesses(const RequestLog &rl, uint64_t linkId,
                   const AccessLog &log) {
  constexpr auto trace = spdlog::level::trace;
  if (!rl.on(trace))
    return;
  for (const auto &p : log.read)
    rl.log(trace, "link id={} read {}", linkId, logText(p));
  for (const auto &p : log.existing)
    rl.log(trace, "link id={} exists {}", linkId, logText(p));
  for (const auto &p : log.missing)
    rl.log(trace, "link id={} missing {}", linkId, logText(p));
  for (const auto &p : log.outputs)
    rl.log(trace, "link id={} wrote {}", linkId, logText(p));
}

} // namespace

// What was asked and what the cache made of it, from analysis to the store.
struct LinkService::Request {
  Request(const v1::LinkRequest &req, uint64_t linkId)
      : req(req), linkId(linkId), log(clientLogLevel(req)), childReq(&req) {}
  static std::string clientLogLevel(const v1::LinkRequest &req) {
    auto it = req.settings_env().find("LINKD_LOG");
    return it == req.settings_env().end() ? std::string() : it->second;
  }
  const v1::LinkRequest &req;
  uint64_t linkId;
  RequestLog log; // this request's lines, at its client's LINKD_LOG
  LinkInvocation inv;
  RequestKind kind = RequestKind::Link;
  bool useCache = false;
  LinkAnalysis analysis;
  v1::CacheResult cacheResult = v1::CACHE_DISABLED;
  std::string uncacheableReason;
  std::string missReason; // why the lookup missed (the log's reason=)
  // Set before the answer of a miss whose result will be stored, cleared
  // when the store ends: identical links wait for it (stores_in_flight.h).
  std::optional<StoresInFlight::Mark> storing;
  bool record = false; // a miss: the child reports what it read and wrote
  // The audit's record (docs/audit.md): the child adds a map; `recordOnly`,
  // the link is recorded for it alone (the cache will not keep it).
  bool stateRecord = false;
  bool recordOnly = false;
  // Link-time rewriting: the child reads the rewritten inputs (cached ones
  // put in place by the daemon); the request it gets carries the plan.
  std::vector<PreparedRewrite> rewrites; // one per --linkd-rewrite spec
  v1::LinkRequest withPlan;
  const v1::LinkRequest *childReq; // what the link child is given
  // An incremental relink: where the child writes its outcome, and whether
  // it patched (LLD did not run: the cache cannot know what it would have
  // read, and keeps nothing).
  std::string incrementalResult;
  bool incrementalPatched = false;
};

// What one link child did, and what the answer and the store make of it.
struct LinkService::LinkRun {
  Streams streams;
  ChildExit exit;
  int pid = -1;
  bool clientStayed = true;
  uint64_t queueMicros = 0;
  Clock::time_point begin;
  int64_t startFileClockNs = 0;      // storeResult
  int64_t spawnNanos = 0;            // the request went to the zygote
  std::optional<ChildReport> report; // the child's, before it exited
  // classifyExit
  v1::LinkReply reply;
  std::string outcome; // for the log: rc=N, signal=SIGX, internal_error=...
  bool succeeded = false;
  // decideCaching
  AccessLog log;
  std::vector<OutputSnapshot> outputs;
  bool storeIt = false;
  bool storeRecord = false; // the audit's record alone
};

grpc::Status LinkService::serveRequest(const v1::LinkRequest &req,
                                       ReplyStream &out, bool rewriteCall) {
  if (std::string err = validate(req, rewriteCall); !err.empty())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, err);
  uint64_t linkId = ++linksTotal;
  ++active;
  noticeSettings(req, out);
  grpc::Status st = runLink(req, out, linkId);
  lastActivityNanos = Clock::now().time_since_epoch().count();
  --active;
  return st;
}

grpc::Status LinkService::runLink(const v1::LinkRequest &req, ReplyStream &out,
                                  uint64_t linkId) {
  Request r(req, linkId);
  analyse(r); // invocation, kind, action key
  if (answerFromCache(r, out))
    return grpc::Status::OK;
  wantStateRecord(r); // cacheable or not
  if (offloadToFarm(r, out))
    return grpc::Status::OK;
  if (std::string error = prepareLinkRewrite(r); !error.empty())
    return failEarly(out, "linkd: error: link-time rewriting: " + error,
                     linkId);
  prepareIncremental(r);
  LinkRun run;
  JobSlots::Hold slot(slots);
  if (!waitForSlot(out, slot, run))
    return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  if (grpc::Status st = spawnAndPump(*r.childReq, out, linkId, r.record, run);
      !st.ok())
    return st;
  classifyExit(r, run); // exit status, signal, or linkd's own failure
  noteIncremental(r);   // patched, or why the link ran in full
  timing.localLinks.observeMicros(run.reply.done().wall_micros());
  decideCaching(r, run); // before answering: reply and counters agree
  if (run.storeIt)
    r.storing.emplace(storesInFlight, r.analysis.key.hex());
  countOutcome(r.kind, run.exit.ran, r.cacheResult, r.uncacheableReason);
  logOutcome(r, run);
  if (!run.clientStayed)
    return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  out.write(run.reply);
  slot.release();
  storeAfterAnswer(r, run); // the client stops reading at LinkDone
  return grpc::Status::OK;
}

void LinkService::analyse(Request &r) {
  r.inv = toInvocation(r.req);
  r.kind = kindOf(r.inv.flavor);
  r.useCache = cache.enabled && !r.req.no_cache();
  if (!r.useCache)
    return;
  r.analysis =
      r.kind == RequestKind::Archive
          ? analyzeArchiveRequest(r.inv, cache.keyContext, *cache.statCache)
          : analyzeLink(r.inv, cache.keyContext, cache.statCache);
  if (!r.analysis.uncacheable.empty()) {
    r.uncacheableReason = r.analysis.uncacheable.front();
    r.cacheResult = v1::CACHE_UNCACHEABLE;
  }
}

bool LinkService::answerFromCache(Request &r, ReplyStream &out) {
  if (!r.useCache || r.cacheResult == v1::CACHE_UNCACHEABLE)
    return false;
  if (serveHit(r, out))
    return true;
  // An identical link's result is being stored: wait for it rather than
  // link again (bounded: a store that takes longer lets this one link).
  if (storesInFlight.waitFor(r.analysis.key.hex(), std::chrono::seconds(30))) {
    r.log.log(spdlog::level::debug, "link id={} waited for its twin's store",
              r.linkId);
    if (serveHit(r, out))
      return true;
  }
  r.cacheResult = v1::CACHE_MISS;
  r.record = true;
  cache.cache->hashRecentInputs(r.analysis);
  return false;
}

std::string LinkService::prepareLinkRewrite(Request &r) {
  if (r.inv.rewriteSpecs.empty())
    return {};
  std::vector<std::vector<std::string>> inputs;
  for (const std::string &spec : r.inv.rewriteSpecs) {
    std::string error;
    // --linkd-no-cache also leaves the rewritten-object cache alone.
    auto prepared = prepareRewrite(
        spec, r.req.cwd(), r.useCache ? cache.store : nullptr,
        r.useCache ? cache.statCache : nullptr, config.workDir, &error);
    if (!prepared)
      return error;
    inputs.emplace_back();
    for (const auto &in : prepared->plan.inputs())
      inputs.back().push_back(in.path());
    r.rewrites.push_back(std::move(*prepared));
  }
  if (std::string e = rewrite::checkSpecsDisjoint(r.inv.rewriteSpecs, inputs);
      !e.empty())
    return e;
  r.withPlan = r.req;
  *r.withPlan.mutable_rewrite_plan() = r.rewrites[0].plan;
  for (size_t i = 1; i < r.rewrites.size(); ++i)
    *r.withPlan.add_more_rewrite_plans() = r.rewrites[i].plan;
  r.childReq = &r.withPlan;
  return {};
}

void LinkService::prepareIncremental(Request &r) {
  // ELF links without link-time rewriting (whose inputs the child makes).
  if (!r.req.incremental() || r.inv.flavor != Flavor::Elf ||
      !r.inv.rewriteSpecs.empty() || config.incrementalDir.empty())
    return;
  if (std::string e = ensureDirectoryTree(config.incrementalDir); !e.empty()) {
    spdlog::warn("link id={} incremental: {}; linking in full", r.linkId, e);
    return;
  }
  r.withPlan = r.req;
  r.childReq = &r.withPlan;
  r.incrementalResult =
      config.incrementalDir + "/result-" + std::to_string(r.linkId);
  v1::IncrementalPlan *plan = r.withPlan.mutable_incremental_plan();
  plan->set_state_dir(config.incrementalDir);
  plan->set_verify(config.incrementalVerify);
  plan->set_slack_percent(
      static_cast<uint32_t>(config.incrementalSlackPercent));
  plan->set_slack_bytes(config.incrementalSlackBytes);
  plan->set_result_file(r.incrementalResult);
}

void LinkService::noteIncremental(Request &r) {
  if (r.incrementalResult.empty())
    return;
  Result<std::string> text = readFile(r.incrementalResult, 4096);
  unlink(r.incrementalResult.c_str());
  if (!text)
    return; // the child did not get that far (killed, or no link ran)
  std::string line = text->substr(0, text->find('\n'));
  auto field = [&line](const std::string &name) -> uint64_t {
    size_t at = line.find(" " + name + "=");
    return at == std::string::npos
               ? 0
               : std::strtoull(line.c_str() + at + name.size() + 2, nullptr,
                               10);
  };
  auto count = [this](const std::string &name, uint64_t n = 1) {
    if (cache.stats && n)
      cache.stats->addCounter(name.c_str(), n);
  };
  count("incremental_links");
  if (line.starts_with("patched ")) {
    r.incrementalPatched = true;
    count("incremental_patches");
    count("incremental_patch_micros", field("micros"));
    count("incremental_saved_micros", field("saved"));
  } else if (line.starts_with("verified ")) {
    count("incremental_verified");
  } else if (line.starts_with("verify_differs ")) {
    count("incremental_verify_differences");
    spdlog::error("link id={} incremental: the patch differs from LLD's full "
                  "link ({}); LLD's output was written",
                  r.linkId, logText(line));
  } else if (line.starts_with("full ")) {
    std::string kind = line.substr(10, line.find(' ', 10) - 10);
    count("incremental_full_links");
    count("incremental_fallback_" + kind);
  }
  r.log.log(spdlog::level::info, "link id={} incremental: {}", r.linkId,
            logText(line));
}

void LinkService::wantStateRecord(Request &r) const {
  if (r.kind != RequestKind::Link || !cache.recordStore)
    return;
  std::vector<std::string> argv(r.req.argv().begin(), r.req.argv().end());
  r.stateRecord =
      !audit::stateRecordMapOption(
           recordPolicy, r.inv.flavor, argv, r.req.cwd(),
           audit::environmentAddsToTheLink([&](const char *n) -> const char * {
             auto it = r.req.env().find(n);
             return it == r.req.env().end() ? nullptr : it->second.c_str();
           }),
           "m")
           .empty();
  if (r.stateRecord && !r.record)
    r.record = r.recordOnly = true;
}

bool LinkService::waitForSlot(ReplyStream &out, JobSlots::Hold &slot,
                              LinkRun &run) {
  auto queued = Clock::now();
  if (!slot.acquire([&out] { return out.cancelled(); }))
    return false;
  run.queueMicros = microsSince(queued);
  run.begin = Clock::now();
  return true;
}

bool LinkService::serveHit(Request &r, ReplyStream &out) {
  const LinkAnalysis &analysis = r.analysis;
  auto begin = Clock::now();
  auto result = cache.cache->lookup(analysis, &r.missReason);
  uint64_t lookupMicros = microsSince(begin);
  timing.lookups.observeMicros(lookupMicros);
  if (!result) {
    cache.cache->holdChecked(); // a link runs now; holding costs far less
    std::string kind = manifestMissKind(r.missReason);
    if (r.missReason.starts_with("no manifest"))
      r.missReason += "; " + cache.cache->explainMiss(analysis, &kind);
    cache.stats->addCounter(("miss_explained_" + kind).c_str(), 1);
    cache.stats->noteMiss(analysis.primaryOutput, r.missReason);
    r.log.log(spdlog::level::debug,
              "link id={} cache miss key={} lookup_us={}: {}", r.linkId,
              analysis.key.hex(), lookupMicros, r.missReason);
    return false;
  }
  std::string error;
  std::vector<LinkCache::Backfill> later;
  if (Lookup m = cache.cache->materialize(*result, analysis, &error, &later);
      m != Lookup::Hit) {
    cache.cache->backfill(later);
    cache.cache->holdChecked();
    if (m == Lookup::Corrupt)
      cache.stats->countCorrupt();
    r.missReason = "cached result not usable: " + error;
    r.log.log(spdlog::level::debug,
              "link id={} cache hit key={} not usable: {}", r.linkId,
              analysis.key.hex(), error);
    return false;
  }
  uint64_t bytes = 0;
  for (const auto &o : result->outputs())
    bytes += o.size();
  for (const OutputPiece &piece : replayOutput(*result, analysis.paths))
    if (!sendPiece(out, piece.isStderr, piece.data))
      break;
  v1::LinkReply reply;
  v1::LinkDone *done = reply.mutable_done();
  done->set_exit_code(result->exit_code());
  done->set_cache_result(v1::CACHE_HIT);
  done->set_wall_micros(microsSince(begin));
  done->set_cache_lookup_micros(lookupMicros);
  uint64_t saved = result->link_micros() > done->wall_micros()
                       ? result->link_micros() - done->wall_micros()
                       : 0;
  // Counted and logged before the answer: `linkd stats` right after the
  // client returns sees this hit.
  cache.stats->countHit(saved, bytes, r.kind);
  r.log.log(spdlog::level::info,
            "link id={} flavor={} cache=hit saved_ms={:.1f} wall_ms={:.1f} "
            "lookup_us={} outputs={} bytes={} key={} output={} cwd={}",
            r.linkId, flavorName(r.inv.flavor), saved / 1000.0,
            done->wall_micros() / 1000.0, lookupMicros, result->outputs_size(),
            bytes, analysis.key.hex().substr(0, 16),
            // The link's -o output, not whatever it wrote first (a ThinLTO
            // cache file: llvmcache-*).
            logText(!analysis.primaryOutput.empty() ? analysis.primaryOutput
                    : result->outputs().empty()
                        ? std::string("-")
                        : analysis.paths.toLocal(result->outputs(0).path())),
            logText(r.req.cwd()));
  out.write(reply);
  // The client has its answer. Outputs that came from a remote tier are
  // copied into the local store; spare copies (for the next local hit) only
  // for a local hit: after a remote one, backfill already writes each large
  // output once more, and a shared-cache worker rarely hits it again.
  bool fromRemote = !later.empty();
  cache.cache->holdChecked();
  runInBackground([&] {
    cache.cache->backfill(later);
    if (!fromRemote)
      cache.cache->prepareSpares(*result);
  });
  return true;
}

grpc::Status LinkService::spawnAndPump(const v1::LinkRequest &req,
                                       ReplyStream &out, uint64_t linkId,
                                       bool record, LinkRun &run) {
  run.streams = Streams{};
  Streams &s = run.streams;
  s.keepOutput = record;
  s.journal = cache.journal;
  ChildHooks hooks;
  hooks.output = [&](bool isStderr, std::string_view data) {
    if (s.keepOutput)
      s.output.append(isStderr, data);
    return sendPiece(out, isStderr, data);
  };
  if (record)
    hooks.records = [&s](std::string_view data) {
      s.records.append(data);
      if (s.journal)
        s.journaled = journalTemporaries(s.records, s.journaled, *s.journal);
    };
  hooks.tick = [&out] { return !out.cancelled(); };
  ChildRunner runner(zygote, {.records = record, .reusable = true},
                     "link id=" + std::to_string(linkId));
  ChildRun child = runner.run(req, hooks);
  if (!child.error.empty())
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, child.error);
  if (!child.stopReason.empty())
    spdlog::warn("link id={} stopped: {}", linkId, child.stopReason);
  run.clientStayed = !child.stopped;
  run.pid = child.pid;
  run.exit = child.exit;
  run.report = child.report;
  run.startFileClockNs = child.spawnedFileClockNs;
  run.spawnNanos = steadyNanos(child.spawned);
  if (child.report)
    s.reportNanos = steadyNanos(child.reported);
  // Killed, or lost with its zygote (which takes its children along).
  if (record &&
      (child.stopped || !run.exit.ran || WIFSIGNALED(run.exit.waitStatus)))
    removeLitter(s, linkId);
  return grpc::Status::OK;
}

void LinkService::classifyExit(const Request &r, LinkRun &run) {
  v1::LinkDone *done = run.reply.mutable_done();
  if (run.report)
    *done->mutable_child_phases() =
        childPhases(*run.report, run.spawnNanos, run.streams.reportNanos);
  done->set_queue_micros(run.queueMicros);
  done->set_wall_micros(microsSince(run.begin));
  done->set_user_micros(run.exit.userMicros);
  done->set_sys_micros(run.exit.sysMicros);
  done->set_max_rss_kib(run.exit.maxRssKib);
  if (!run.exit.ran) {
    done->set_internal_error(run.exit.error);
    ++linksFailed;
    run.outcome = "internal_error=\"" + run.exit.error + "\"";
  } else if (WIFSIGNALED(run.exit.waitStatus)) {
    int sig = WTERMSIG(run.exit.waitStatus);
    done->set_term_signal(sig);
    const char *abbrev = sigabbrev_np(sig);
    done->set_term_signal_name(abbrev ? std::string("SIG") + abbrev
                                      : std::to_string(sig));
    ++linksCrashed;
    run.outcome = "signal=" + done->term_signal_name();
  } else if (r.inv.flavor == Flavor::Ar && !r.req.has_stdin_data() &&
             WEXITSTATUS(run.exit.waitStatus) == archive::kNeedsStdinStatus) {
    // An MRI script the client did not see coming: it runs it locally.
    run.exit.ran = false;
    run.exit.error = "the MRI script on stdin was not sent to the daemon";
    ++linksFailed;
    done->set_internal_error(run.exit.error);
    run.outcome = "internal_error=\"" + run.exit.error + "\"";
  } else {
    done->set_exit_code(WEXITSTATUS(run.exit.waitStatus));
    run.succeeded = done->exit_code() == 0;
    if (!run.succeeded)
      ++linksFailed;
    run.outcome = "rc=" + std::to_string(done->exit_code());
  }
}

namespace {

// A link that failed the way LLD fails on its inputs and options (exit 1)
// while writing only to the null device: a configure probe's "no"
// (link_key.h, onlyNullOutputs). Any other failure may follow from what no
// key holds (a directory it could not write, a full disk) and links again.
bool storableFailure(const LinkAnalysis &analysis, RequestKind kind,
                     const ChildExit &exit) {
  return analysis.onlyNullOutputs && kind == RequestKind::Link && exit.ran &&
         WIFEXITED(exit.waitStatus) && WEXITSTATUS(exit.waitStatus) == 1;
}

} // namespace

void LinkService::decideCaching(Request &r, LinkRun &run) {
  if (r.record &&
      (run.succeeded || storableFailure(r.analysis, r.kind, run.exit))) {
    AccessLog &log = run.log;
    log = parseAccessLog(run.streams.records);
    for (const PreparedRewrite &rw : r.rewrites)
      log.read.insert(rw.dependsOn.begin(), rw.dependsOn.end());
    if (r.incrementalPatched)
      log.uncacheable.push_back("an incremental patch (LLD did not run, so "
                                "what it would have read is not known)");
    // Its objects were padded, to room that depends on the links before
    // it: not stock LLD's output of the inputs the key holds.
    else if (r.childReq && r.childReq->has_incremental_plan() &&
             (r.childReq->incremental_plan().slack_percent() ||
              r.childReq->incremental_plan().slack_bytes()))
      log.uncacheable.push_back("an incremental link with slack (its "
                                "objects were padded)");
    if (r.kind == RequestKind::Archive)
      for (const std::string &p : log.overwritten)
        if (!r.analysis.replacedInputs.count(p))
          log.uncacheable.push_back(
              "replaced a file it read that the key does not cover");
    if (!r.recordOnly && !log.uncacheable.empty()) {
      r.cacheResult = v1::CACHE_UNCACHEABLE;
      r.uncacheableReason = log.uncacheable.front();
    }
    if (!r.recordOnly && log.uncacheable.empty()) {
      run.outputs = snapshotOutputs(log);
      log.inputFds = openInputs(log); // rustc deletes them once we answer
      run.storeIt = true;
    } else if (log.hasStateRecord && cache.recordStore) {
      run.outputs = snapshotOutputs(log); // for the audit's record alone
      run.storeRecord = true;
    }
    traceAccesses(r.log, r.linkId, log);
  }
  run.reply.mutable_done()->set_cache_result(r.cacheResult);
}

namespace {

// The log's words for a request's cache result (hit lines: serveHit).
const char *cacheWord(v1::CacheResult result) {
  switch (result) {
  case v1::CACHE_HIT:
    return "hit";
  case v1::CACHE_MISS:
    return "miss";
  case v1::CACHE_UNCACHEABLE:
    return "uncacheable";
  default:
    return "off";
  }
}

// The child's phases for the outcome line, in ms like the line's other
// times (bench/run.sh reads every *_ms field): request to child, its set-up,
// LLD (to its output's commit), the rest to _exit, the report's way back.
std::string phasesForLog(const v1::LinkDone &done) {
  if (!done.has_child_phases())
    return {};
  const v1::ChildPhases &p = done.child_phases();
  auto ms = [](uint64_t us) { return us / 1000.0; };
  return fmt::format(" child_spawn_ms={:.3f} child_setup_ms={:.3f} "
                     "child_lld_ms={:.3f} child_finish_ms={:.3f} "
                     "child_report_ms={:.3f} spare={} reused={} "
                     "child_faults={}",
                     ms(p.spawn_micros()), ms(p.setup_micros()),
                     ms(p.tool_micros()), ms(p.finish_micros()),
                     ms(p.report_micros()), p.prestarted() ? 1 : 0,
                     p.links_before(), p.page_faults());
}

} // namespace

// Why the cache gave what it gave, for the log's reason="...".
std::string LinkService::cacheReason(const Request &r) const {
  switch (r.cacheResult) {
  case v1::CACHE_MISS:
    return r.missReason;
  case v1::CACHE_UNCACHEABLE:
    return r.uncacheableReason;
  case v1::CACHE_HIT:
    return {};
  default:
    return !cache.enabled ? "the cache is off in this daemon"
                          : "no-cache requested by the client";
  }
}

void LinkService::logOutcome(const Request &r, const LinkRun &run) {
  const v1::LinkDone &done = run.reply.done();
  std::string reason = cacheReason(r);
  r.log.log(spdlog::level::info,
            "link id={} flavor={} pid={} {} cache={}{} wall_ms={:.1f} "
            "queue_ms={:.1f} rss_kib={} cwd={} argc={}{}",
            r.linkId, flavorName(r.inv.flavor), run.pid, run.outcome,
            cacheWord(r.cacheResult),
            reason.empty() ? "" : " reason=" + quoteLogValue(reason, true),
            done.wall_micros() / 1000.0, run.queueMicros / 1000.0,
            run.exit.maxRssKib, logText(r.req.cwd()), r.req.argv_size(),
            phasesForLog(done));
}

void LinkService::storeAfterAnswer(const Request &r, const LinkRun &run) {
  bool storeRewrites = !r.rewrites.empty() && run.succeeded && r.useCache;
  if (!storeRewrites && !run.storeIt && !run.storeRecord)
    return;
  runInBackground([&] {
    if (run.storeRecord) {
      bool all = storeStateRecord(*cache.recordStore, run.log.stateRecord,
                                  run.outputs);
      if (cache.stats)
        cache.stats->addCounter("audit_records_stored", 1);
      r.log.log(spdlog::level::debug,
                "link id={} audit record stored for {} outputs{}", r.linkId,
                run.outputs.size(), all ? "" : " (one changed meanwhile)");
    }
    for (const PreparedRewrite &rw : r.rewrites) {
      if (!storeRewrites)
        break;
      int stored = storeRewritten(rw, *cache.store);
      cache.stats->addCounter("rewrites_cached", rw.cachedInputs);
      cache.stats->addCounter("rewrites_stored", stored);
      r.log.log(spdlog::level::debug,
                "link id={} rewritten inputs: {} from the cache, {} stored",
                r.linkId, rw.cachedInputs, stored);
    }
    const v1::LinkDone &done = run.reply.done();
    if (run.storeIt)
      storeResult(r.analysis, run.log, run.outputs, run.streams.output,
                  done.exit_code(), done.wall_micros(), run.startFileClockNs,
                  r.linkId, r.log);
  });
}

void LinkService::countOutcome(RequestKind kind, bool ran,
                               v1::CacheResult result,
                               const std::string &reason) {
  if (!cache.stats)
    return;
  if (!ran)
    cache.stats->countError(kind);
  else if (result == v1::CACHE_UNCACHEABLE)
    cache.stats->countUncacheable(reason, kind);
  else if (result == v1::CACHE_MISS)
    cache.stats->countMiss(kind);
  else
    cache.stats->countDisabled(kind);
}

void LinkService::storeResult(const LinkAnalysis &analysis,
                              const AccessLog &log,
                              const std::vector<OutputSnapshot> &outputs,
                              const LinkOutput &output, int exitCode,
                              uint64_t wallMicros, int64_t startFileClockNs,
                              uint64_t linkId, const RequestLog &rl) {
  auto r = cache.cache->store(analysis, log, outputs, output, exitCode,
                              wallMicros, startFileClockNs);
  if (r.stored)
    cache.stats->countStored(r.bytesWritten);
  else
    cache.stats->countNotStored(r.notStoredReason);
  if (analysis.paths.active() && r.stored) {
    cache.stats->addCounter("name_checks", 1);
    cache.stats->addCounter("name_check_micros", r.nameCheckMicros);
    cache.stats->addCounter("name_check_cpu_micros", r.nameCheckCpuMicros);
    cache.stats->addCounter("name_check_bytes", r.nameCheckBytes);
    if (r.requiredNames > 0)
      cache.stats->addCounter("results_requiring_names", 1);
  }
  rl.log(spdlog::level::debug,
         "link id={} {} key={} inputs={} missing={} outputs={} "
         "name_check_us={} (cpu {}) required_names={}{}{}",
         linkId, r.stored ? "stored" : "not stored",
         analysis.key.hex().substr(0, 16), log.read.size(), log.missing.size(),
         outputs.size(), r.nameCheckMicros, r.nameCheckCpuMicros,
         r.requiredNames,
         r.requiredWhy.empty() ? "" : " (" + r.requiredWhy + ")",
         r.stored ? "" : " reason=" + quoteLogValue(r.notStoredReason, true));
}

namespace {

// Paths worth describing to the farm up front, spelled as the link child will
// spell them (cwd + "/" + name): the last input set for this action key, the
// files named on the command line, and for each `-l` the candidates in the
// `-L` directories in order up to the first that exists (GNU ld's rule; a
// wrong guess only costs the node a question). `read` gets the paths the
// link will likely read, `probed` those it will likely only look at,
// `outputs` the output path (-o, /out:) and its directory.
void farmPrefetch(const v1::LinkRequest &req, std::vector<std::string> &read,
                  std::vector<std::string> &probed,
                  std::vector<std::string> &outputs, uint64_t &bytes) {
  auto absolute = [&](const std::string &p) {
    return p[0] == '/' ? p : req.cwd() + "/" + p;
  };
  auto isFile = [](const std::string &p, uint64_t *size) {
    struct stat st {};
    bool f = ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (f && size)
      *size += static_cast<uint64_t>(st.st_size);
    return f;
  };
  bytes = 0;
  for (const std::string &p : read)
    isFile(p, &bytes);
  std::vector<std::string> dirs;
  std::vector<std::pair<std::string, bool>> libs; // name, static at that point
  bool isStatic = false;
  const auto &argv = req.argv();
  for (int i = 1; i < argv.size(); ++i) {
    const std::string &a = argv[i];
    const std::string &prev = argv[i - 1];
    const std::string next = i + 1 < argv.size() ? argv[i + 1] : "";
    std::string output;
    if (prev == "-o" || prev == "--output")
      output = a;
    else if (a.starts_with("--output="))
      output = a.substr(9);
    else if (a.size() > 5 &&
             (a.starts_with("/out:") || a.starts_with("-out:") ||
              a.starts_with("/OUT:") || a.starts_with("-OUT:")))
      output = a.substr(5);
    if (!output.empty()) {
      std::string p = absolute(output);
      outputs.push_back(p);
      outputs.push_back(p.substr(0, std::max<size_t>(p.rfind('/'), 1)));
      continue;
    }
    if (a == "-Bstatic" || a == "-dn" || a == "-non_shared" || a == "-static")
      isStatic = true;
    else if (a == "-Bdynamic" || a == "-dy" || a == "-call_shared")
      isStatic = false;
    else if (a == "-L" || a == "--library-path")
      dirs.push_back(next);
    else if (a.starts_with("--library-path="))
      dirs.push_back(a.substr(15));
    else if (a.starts_with("-L") && a.size() > 2)
      dirs.push_back(a.substr(2));
    else if (a == "-l" || a == "--library")
      libs.push_back({next, isStatic});
    else if (a.starts_with("--library="))
      libs.push_back({a.substr(10), isStatic});
    else if (a.starts_with("-l") && a.size() > 2)
      libs.push_back({a.substr(2), isStatic});
    if (a.empty() || a[0] == '-' || a[0] == '@' || prev == "-Map" ||
        prev == "--Map" || prev == "-L" || prev == "-l" ||
        prev == "--library-path" || prev == "--library")
      continue;
    if (std::string p = absolute(a); isFile(p, &bytes))
      read.push_back(p);
  }
  // The guess follows GNU ld's rule for ELF; MinGW and the other flavors
  // search other names (libX.dll.a, X.lib, .tbd): the node asks for those.
  bool gnuElf = req.flavor() == v1::FLAVOR_ELF;
  for (int i = 1; i + 1 < argv.size(); ++i)
    if (argv[i] == "-m" && argv[i + 1].find("pe") != std::string::npos)
      gnuElf = false;
  for (const auto &[lib, staticOnly] : libs) {
    if (lib.empty() || !gnuElf)
      continue;
    std::vector<std::string> names;
    if (lib[0] == ':')
      names = {lib.substr(1)};
    else if (staticOnly)
      names = {"lib" + lib + ".a"};
    else
      names = {"lib" + lib + ".so", "lib" + lib + ".a"};
    bool found = false;
    for (const std::string &d : dirs) {
      if (d.empty() || d[0] == '=')
        break; // sysroot-relative: the node asks
      for (const std::string &name : names) {
        std::string p = absolute(d) + "/" + name;
        if (!found && isFile(p, &bytes)) {
          found = true;
          read.push_back(p);
        } else if (!found) {
          probed.push_back(p);
        }
      }
      if (found)
        break;
    }
  }
}

// Outputs the farm client wrote and verified keep their digests while the
// file is the one it wrote (same inode, size and modification time).
void adoptFarmDigests(const std::vector<OffloadTarget::Result::Output> &written,
                      std::vector<OutputSnapshot> &snapshots) {
  for (OutputSnapshot &snap : snapshots)
    for (const OffloadTarget::Result::Output &w : written)
      if (snap.fd >= 0 && w.path == snap.path &&
          w.st.st_dev == snap.st.st_dev && w.st.st_ino == snap.st.st_ino &&
          w.st.st_size == snap.st.st_size &&
          w.st.st_mtim.tv_sec == snap.st.st_mtim.tv_sec &&
          w.st.st_mtim.tv_nsec == snap.st.st_mtim.tv_nsec)
        snap.digest = w.digest;
}

} // namespace

bool LinkService::offloadToFarm(const Request &rq, ReplyStream &out) {
  // Only deterministic links go to the farm: their bytes do not depend on
  // where they ran, and the result can be cached like a local one. Only LLD
  // links, without link-time rewriting (which needs this machine's
  // rewritten-object cache); archive requests and `linkd rewrite` stay.
  // A link that gets the audit's record because LINKD_AUDIT_RECORD=1 asked
  // for it links here: the node's sandbox keeps no map (docs/audit.md). The
  // default's PE record yields to the farm: a link big enough to offload
  // would pay most for the map.
  // Links that write into /dev/null stay too (link_key.h, nullOutputs).
  bool recordHere = rq.stateRecord && recordPolicy == audit::RecordPolicy::All;
  // An incremental link patches this machine's last output: it stays.
  if (!farm || recordHere || rq.cacheResult != v1::CACHE_MISS ||
      rq.req.incremental() || rq.analysis.nullOutputs || out.cancelled() ||
      !rq.req.rewrite_spec().empty() || rq.req.more_rewrite_specs_size() > 0 ||
      rq.req.flavor() < v1::FLAVOR_ELF || rq.req.flavor() > v1::FLAVOR_WASM)
    return false;
  const v1::LinkRequest &req = rq.req;
  const LinkAnalysis &analysis = rq.analysis;
  uint64_t linkId = rq.linkId;
  uint64_t inputBytes = 0;
  std::vector<std::string> read, probed, outputPaths;
  // Before anything is read for the node (the store's "changed during the
  // link" rule).
  int64_t startFileClockNs = fileClockNowNs();
  cache.cache->lastInputPaths(analysis, read, probed);
  farmPrefetch(req, read, probed, outputPaths, inputBytes);
  if (!farm->wantsOffload(inputBytes))
    return false;
  auto begin = Clock::now();
  OffloadTarget::Result r = farm->offload(req, read, probed, outputPaths);
  if (!r.ok) {
    ++farm->counters().fallbacks;
    spdlog::warn("link id={} farm={}: {}; linking locally", linkId,
                 farm->target(), r.error);
    return false;
  }
  ++farm->counters().offloaded;
  farm->counters().remoteLinkMicros += r.wallMicros;
  timing.farmLinks.observeMicros(microsSince(begin));
  bool clientStayed = sendChunk(out, v1::OutputChunk::STREAM_STDOUT, r.out) &&
                      sendChunk(out, v1::OutputChunk::STREAM_STDERR, r.err);
  v1::CacheResult cacheResult = v1::CACHE_MISS;
  std::string reason;
  AccessLog log;
  std::vector<OutputSnapshot> outputs;
  bool storeIt = false;
  if (r.exitCode == 0) {
    log = parseAccessLog(r.records);
    if (!log.uncacheable.empty()) {
      cacheResult = v1::CACHE_UNCACHEABLE;
      reason = log.uncacheable.front();
    } else {
      outputs = snapshotOutputs(log);
      adoptFarmDigests(r.outputs, outputs);
      storeIt = true;
    }
  } else {
    ++linksFailed;
  }
  countOutcome(RequestKind::Link, true, cacheResult, reason);
  v1::LinkReply reply;
  v1::LinkDone *done = reply.mutable_done();
  done->set_exit_code(r.exitCode);
  done->set_wall_micros(microsSince(begin));
  done->set_user_micros(r.userMicros);
  done->set_sys_micros(r.sysMicros);
  done->set_max_rss_kib(r.maxRssKib);
  done->set_cache_result(cacheResult);
  // The same words as a local link's line: what the cache said and why
  // (farm links logged cache=CACHE_MISS and no reason).
  spdlog::info(
      "link id={} flavor={} farm={} rc={} cache={}{} wall_ms={:.1f} "
      "remote_ms={:.1f} cwd={} argc={}",
      linkId, flavorName(static_cast<Flavor>(req.flavor())), farm->target(),
      r.exitCode, cacheResult == v1::CACHE_UNCACHEABLE ? "uncacheable" : "miss",
      " reason=" + quoteLogValue(reason.empty() ? rq.missReason : reason, true),
      done->wall_micros() / 1000.0, r.wallMicros / 1000.0, logText(req.cwd()),
      req.argv_size());
  if (clientStayed)
    out.write(reply);
  if (storeIt) {
    // The farm returns the two streams apart (their order is not kept
    // there); they replay as they were sent, stdout first.
    LinkOutput output;
    output.append(false, r.out);
    output.append(true, r.err);
    storeResult(analysis, log, outputs, output, r.exitCode, done->wall_micros(),
                startFileClockNs, linkId);
  }
  return true;
}

} // namespace linkd
