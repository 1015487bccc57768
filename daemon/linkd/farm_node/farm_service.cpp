// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_node/farm_service.h"

#include "cache/access_log.h"
#include "daemon/linkd/farm_node/offload_messages.h"
#include "daemon/linkd/runner/child_runner.h"
#include "util/clock.h"
#include "util/files.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpcpp/support/proto_buffer_reader.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace linkd {

using Clock = std::chrono::steady_clock;
using RawStream = grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

namespace {

// Cancels the call when a guarded read or write blocks past its time: a
// client that stops reading holds a write for good (HTTP/2 flow control),
// and with it the node's thread, the token's link and, before outputs,
// the job slot (two clients that did not read 200 MB outputs held
// both slots of a node).
class Watchdog {
public:
  explicit Watchdog(grpc::ServerContext *ctx)
      : ctx(ctx), thread([this] { watch(); }) {}
  Watchdog(const Watchdog &) = delete;
  ~Watchdog() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    cv.notify_all();
    thread.join();
  }
  // Guards one blocking call until the returned object goes.
  struct Guard {
    Watchdog *w;
    Guard(Watchdog *w, Clock::time_point until) : w(w) { w->arm(until); }
    Guard(const Guard &) = delete;
    ~Guard() { w->arm(std::nullopt); }
  };
  Guard until(Clock::time_point t) { return Guard(this, t); }
  // Whether it cancelled the call.
  bool fired() const { return firedOnce.load(); }

private:
  void arm(std::optional<Clock::time_point> t) {
    {
      std::lock_guard lock(mu);
      limit = t;
    }
    cv.notify_all();
  }
  void watch() {
    std::unique_lock lock(mu);
    while (!stopping) {
      if (!limit) {
        cv.wait(lock);
      } else if (cv.wait_until(lock, *limit) == std::cv_status::timeout &&
                 limit && Clock::now() >= *limit) {
        firedOnce = true;
        ctx->TryCancel();
        limit.reset();
      }
    }
  }
  grpc::ServerContext *ctx;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Clock::time_point> limit;
  bool stopping = false;
  std::atomic<bool> firedOnce{false};
  std::thread thread; // last: it uses the rest
};

// The Offload stream, with OffloadUp messages checked against the link's
// caps before they are parsed (offload_wire.h) and every write bounded by
// the stall timeout and the link's deadline.
class Stream {
public:
  Stream(RawStream *raw, grpc::ServerContext *ctx, OffloadCaps caps,
         std::chrono::seconds stall, Clock::time_point deadline)
      : raw(raw), budget(caps), watchdog(ctx), stall(stall),
        deadline(deadline) {}
  // False at the stream's end, or for a message refused (refusal()).
  bool Read(v1::OffloadUp *m) {
    grpc::ByteBuffer bytes;
    if (!raw->Read(&bytes))
      return false;
    std::string why;
    {
      grpc::ProtoBufferReader counted(&bytes);
      why = budget.admit(counted);
    }
    if (why.empty()) {
      grpc::ProtoBufferReader parsed(&bytes);
      if (!m->ParseFromZeroCopyStream(&parsed))
        why = "a malformed message";
    }
    if (why.empty())
      return true;
    std::lock_guard lock(mu);
    refused = why;
    return false;
  }
  // Reads the first message, within the stall timeout.
  bool ReadFirst(v1::OffloadUp *m) {
    Watchdog::Guard g = watchdog.until(Clock::now() + stall);
    return Read(m);
  }
  bool Write(const v1::OffloadDown &m) {
    grpc::ByteBuffer bytes;
    bool own = false;
    if (!grpc::SerializationTraits<v1::OffloadDown>::Serialize(m, &bytes, &own)
             .ok())
      return false;
    // A failure after the deadline still gets the stall time to be said.
    Watchdog::Guard g =
        watchdog.until(std::min(Clock::now(), deadline) + stall);
    return raw->Write(bytes);
  }
  // Why a message was refused; "" if none was.
  std::string refusal() const {
    std::lock_guard lock(mu);
    return refused;
  }
  // Whether a write (or the first read) ran out of time.
  bool timedOut() const { return watchdog.fired(); }

private:
  RawStream *raw;
  OffloadBudget budget; // used by one reader at a time
  Watchdog watchdog;
  std::chrono::seconds stall;
  Clock::time_point deadline;
  mutable std::mutex mu;
  std::string refused;
};

// Messages from the client, read on their own thread so that the link loop
// can wait for them, the child and its pipes in one poll. While the loop
// takes them, at most a few MiB of blob chunks wait here (beyond that the
// reader stops reading, and HTTP/2 flow control holds the client): an
// unbounded queue grew by whatever the writes to the store lagged behind,
// in new memory.
class Inbox {
public:
  Inbox() : wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  void start(Stream *stream) {
    reader = std::thread([this, stream] {
      v1::OffloadUp m;
      while (stream->Read(&m)) {
        std::unique_lock lock(mu);
        queuedBytes += m.has_blob() ? m.blob().data().size() : 0;
        queue.push_back(std::move(m));
        signal();
        room.wait(lock, [this] {
          return queuedBytes < kMaxQueuedBytes || unthrottled;
        });
      }
      std::lock_guard lock(mu);
      closed = true;
      signal();
      ended.notify_all();
    });
  }
  // Ends the reader: after the client's half-close, or by cancelling the
  // call (which makes Read return) when it does not come in time or the link
  // failed (the client then sees CANCELLED; the stream cannot carry a status
  // while the reader waits on it).
  void stop(grpc::ServerContext *ctx, bool failed) {
    if (!reader.joinable())
      return;
    unthrottle();
    {
      std::unique_lock lock(mu);
      if (!failed)
        ended.wait_for(lock, std::chrono::seconds(5),
                       [this] { return closed; });
      if (!closed)
        ctx->TryCancel();
    }
    reader.join();
  }
  ~Inbox() {
    if (reader.joinable())
      reader.join();
  }
  int fd() const { return wake.get(); }
  // Takes everything queued; `isClosed` says whether the stream ended.
  std::deque<v1::OffloadUp> take(bool &isClosed) {
    uint64_t n;
    (void)!read(wake.get(), &n, sizeof(n));
    std::lock_guard lock(mu);
    isClosed = closed;
    queuedBytes = 0;
    room.notify_all();
    return std::exchange(queue, {});
  }
  // The loop no longer takes: read whatever comes (a client still sending
  // must not block the outputs it waits for).
  void unthrottle() {
    std::lock_guard lock(mu);
    unthrottled = true;
    room.notify_all();
  }

private:
  void signal() {
    uint64_t one = 1;
    (void)!write(wake.get(), &one, sizeof(one));
  }
  UniqueFd wake;
  std::mutex mu;
  static constexpr size_t kMaxQueuedBytes = 8 << 20;
  std::deque<v1::OffloadUp> queue;
  size_t queuedBytes = 0; // blob data in `queue`
  bool unthrottled = false;
  std::condition_variable room; // `queue` is below its limit again
  bool closed = false;
  std::condition_variable ended; // `closed` became true
  std::thread reader;
};

} // namespace

namespace {

grpc::Status clientWentAway() {
  return {grpc::StatusCode::CANCELLED, "client went away"};
}

// A hook's way to stop the link: `why` becomes the link's status.
bool stopWith(grpc::Status &st, grpc::Status why) {
  st = std::move(why);
  return false;
}

} // namespace

// One offloaded link, from the first message to OffloadDone: the stream,
// the link child and its pipes; what the messages mean is in
// offload_messages.h.
class OffloadSession {
public:
  OffloadSession(FarmService &node, grpc::ServerContext *ctx, Stream *stream,
                 uint64_t id, std::string client)
      : node(node), ctx(ctx), stream(stream), id(id), client(client),
        msgs(node.blobs, node.owners, id, std::move(client),
             node.config.storeDir + "/links/" + std::to_string(getpid()) + "-" +
                 std::to_string(id),
             node.config.maxRequestBytes,
             [stream](const v1::OffloadDown &m) { return stream->Write(m); }) {}

  grpc::Status run();

private:
  grpc::Status runLink();
  grpc::Status start();
  ChildHooks linkHooks(ChildRunner &runner, grpc::Status &st);
  bool stillWanted(ChildRunner &runner, grpc::Status &st);
  bool takeMessages(ChildRunner &runner, grpc::Status &st);
  grpc::Status finish(const ChildExit &exit);
  // Sends the child the reply to its question, if there is one yet; false
  // if the client could not be reached when the node asked it.
  bool reply(const ChildRunner &runner, const std::optional<std::string> &r) {
    if (r)
      runner.answer(*r);
    return msgs.clientReachable();
  }
  bool send(const v1::OffloadDown &m) {
    if (!stream->Write(m))
      return false;
    return true;
  }
  grpc::Status fail(grpc::StatusCode code, const std::string &msg) {
    return msgs.fail(code, msg);
  }

  FarmService &node;
  grpc::ServerContext *ctx;
  Stream *stream;
  uint64_t id;
  std::string client;
  OffloadMessages msgs;
  Inbox inbox;
  bool inboxStarted = false;
  std::string records;
  Clock::time_point begin = Clock::now();
  Clock::time_point lastHeard; // progress of the client
  // For the per-link log line: the link child was spawned, it exited.
  Clock::time_point spawned, exited;
};

grpc::Status OffloadSession::start() {
  // Within the stall timeout: a connection that says nothing must not hold
  // the token's slot.
  v1::OffloadUp first;
  if (!stream->ReadFirst(&first)) {
    if (std::string why = stream->refusal(); !why.empty())
      return fail(grpc::StatusCode::RESOURCE_EXHAUSTED, why);
    return fail(grpc::StatusCode::INVALID_ARGUMENT,
                "the first message must be OffloadStart");
  }
  if (grpc::Status st = msgs.start(first); !st.ok())
    return st;
  inbox.start(stream);
  inboxStarted = true;
  return grpc::Status::OK;
}

// What the link child's writes become: its questions go to the client (or
// are answered from the blobs), its output is streamed, its records kept;
// the client's messages are taken as they come.
ChildHooks OffloadSession::linkHooks(ChildRunner &runner, grpc::Status &st) {
  ChildHooks hooks;
  auto gone = [&st] { return stopWith(st, clientWentAway()); };
  hooks.question = [this, &runner, gone](std::string_view q) {
    return reply(runner, msgs.ask(q)) || gone();
  };
  hooks.output = [this, gone](bool isStderr, std::string_view data) {
    v1::OffloadDown m;
    m.mutable_output()->set_stream(isStderr ? v1::OutputChunk::STREAM_STDERR
                                            : v1::OutputChunk::STREAM_STDOUT);
    m.mutable_output()->set_data(std::string(data));
    return send(m) || gone();
  };
  hooks.records = [this](std::string_view data) { records.append(data); };
  hooks.extraFd = inbox.fd();
  hooks.extraReadable = [&] { return takeMessages(runner, st); };
  hooks.tick = [&] { return stillWanted(runner, st); };
  return hooks;
}

// At every turn of the link: the client is there, within the link's time,
// and not stalled on a question or an upload; a blob another link was
// uploading is looked for (at most the turn's 100 ms after its commit).
bool OffloadSession::stillWanted(ChildRunner &runner, grpc::Status &st) {
  if (ctx->IsCancelled())
    return stopWith(st, clientWentAway());
  if (Clock::now() >
      begin + std::chrono::seconds(node.config.linkTimeoutSeconds))
    return stopWith(
        st, fail(grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "link timeout (" +
                     std::to_string(node.config.linkTimeoutSeconds) + " s)"));
  // Progress, not any message: an answer, or blob bytes in steps of
  // BlobStore::kProgressBytes (a client trickling a byte every few
  // seconds held a job slot for as long as the link timeout).
  bool waiting = msgs.waiting();
  lastHeard = std::max(lastHeard, msgs.lastProgress());
  if (waiting && Clock::now() - lastHeard >
                     std::chrono::seconds(node.config.stallTimeoutSeconds))
    return stopWith(
        st, fail(grpc::StatusCode::RESOURCE_EXHAUSTED,
                 "the client left a question or upload without progress "
                 "for " +
                     std::to_string(node.config.stallTimeoutSeconds) + " s"));
  if (!waiting)
    lastHeard = Clock::now(); // the link's own time is not the client's
  if (msgs.awaitingOtherUploads() && !reply(runner, msgs.answerPending()))
    return stopWith(st, clientWentAway());
  return true;
}

// The client's messages since the last turn, and the answer they complete.
bool OffloadSession::takeMessages(ChildRunner &runner, grpc::Status &st) {
  bool clientClosed = false;
  std::deque<v1::OffloadUp> messages = inbox.take(clientClosed);
  for (v1::OffloadUp &m : messages)
    if (st = msgs.take(m); !st.ok())
      return false;
  if (clientClosed)
    if (std::string why = stream->refusal(); !why.empty())
      return stopWith(st, fail(grpc::StatusCode::RESOURCE_EXHAUSTED, why));
  if (!reply(runner, msgs.answerPending()))
    return stopWith(st, clientWentAway());
  if (clientClosed && msgs.questionOpen())
    return stopWith(st, fail(grpc::StatusCode::INVALID_ARGUMENT,
                             "the client closed its side with questions open"));
  return true;
}

namespace {

// A scratch output mapped for sending (no copy through a read buffer).
struct Mapped {
  void *base = MAP_FAILED;
  size_t size = 0;
  Mapped(int fd, size_t n) : size(n) {
    if (n > 0)
      base = mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  Mapped(const Mapped &) = delete;
  ~Mapped() {
    if (base != MAP_FAILED)
      munmap(base, size);
  }
  bool ok() const { return size == 0 || base != MAP_FAILED; }
  std::string_view view(size_t off, size_t n) const {
    return {static_cast<const char *>(base) + off, n};
  }
};

// Streams one output file: header, then its content, hashed on a helper
// thread while it is sent (the digest travels with the last chunk).
// Compressed unless the client is on this machine (loopback: bandwidth is
// free, compression is not).
bool sendOutput(Stream *stream, const SandboxView::Output &o, bool compress,
                uint64_t &bytes) {
  UniqueFd fd(::open(o.real.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st{};
  if (!fd.valid() || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return true; // nothing there (removed): not an output
  Mapped file(fd.get(), static_cast<size_t>(st.st_size));
  if (!file.ok())
    return false;
  v1::OffloadDown head;
  auto *f = head.mutable_file();
  f->set_path(o.path);
  f->set_mode(st.st_mode & 07777);
  f->set_size(static_cast<uint64_t>(st.st_size));
  if (!stream->Write(head))
    return false;
  Sha256Thread h;
  v1::OffloadDown m;
  v1::FileData *data = m.mutable_file_data();
  for (size_t off = 0;;) {
    size_t n = std::min(kFarmChunkBytes, file.size - off);
    std::string_view piece = file.view(off, n);
    h.updateView(piece);
    bool compressed = false;
    if (compress)
      data->set_data(compressChunk(piece, &compressed));
    else
      data->mutable_data()->assign(piece);
    data->set_compressed(compressed);
    bool last = n == 0;
    data->set_last(last);
    if (last)
      data->set_digest(std::string(h.finish().raw()));
    bytes += n;
    off += n;
    if (!stream->Write(m))
      return false;
    if (last)
      return true;
  }
}

bool isLoopbackPeer(const std::string &peer) {
  return peer.starts_with("ipv4:127.") || peer.starts_with("ipv6:[::1]") ||
         peer.starts_with("unix:");
}

} // namespace

grpc::Status OffloadSession::finish(const ChildExit &exit) {
  v1::OffloadDown m;
  v1::OffloadDone *done = m.mutable_done();
  if (!exit.ran)
    return fail(grpc::StatusCode::INTERNAL,
                "the link could not run: " + exit.error);
  if (WIFSIGNALED(exit.waitStatus)) {
    int sig = WTERMSIG(exit.waitStatus);
    done->set_term_signal(sig);
    const char *abbrev = sigabbrev_np(sig);
    done->set_term_signal_name(abbrev ? std::string("SIG") + abbrev
                                      : std::to_string(sig));
  } else {
    done->set_exit_code(WEXITSTATUS(exit.waitStatus));
  }
  AccessLog log = parseAccessLog(records);
  if (!log.uncacheable.empty())
    done->set_not_offloadable(log.uncacheable.front());
  uint64_t outBytes = 0;
  size_t outputs = 0;
  if (done->not_offloadable().empty() && !done->term_signal()) {
    for (const SandboxView::Output &o : msgs.view().outputs()) {
      if (!sendOutput(stream, o, !isLoopbackPeer(ctx->peer()), outBytes))
        return clientWentAway();
      ++outputs;
    }
  }
  done->set_wall_micros(microsSince(begin));
  node.linkSeconds.observeMicros(done->wall_micros());
  done->set_user_micros(exit.userMicros);
  done->set_sys_micros(exit.sysMicros);
  done->set_max_rss_kib(exit.maxRssKib);
  done->set_access_records(records);
  done->set_blobs_uploaded(msgs.blobsUploaded());
  done->set_blobs_present(msgs.blobsPresent());
  done->set_round_trips(msgs.roundTrips());
  auto ms = [](Clock::time_point from, Clock::time_point to) {
    return from == Clock::time_point() || to == Clock::time_point()
               ? 0.0
               : std::chrono::duration<double, std::milli>(to - from).count();
  };
  spdlog::info("farm link id={} client={} rc={}{} outputs={} out_bytes={} "
               "blobs_uploaded={} blobs_present={} blobs_awaited={} "
               "resumed_bytes={} round_trips={} paths={} wall_ms={:.1f} "
               "blobs_in_ms={:.1f} "
               "link_ms={:.1f} send_ms={:.1f}",
               id, client, done->exit_code(),
               done->not_offloadable().empty()
                   ? ""
                   : " not_offloadable=\"" + done->not_offloadable() + "\"",
               outputs, outBytes, msgs.blobsUploaded(), msgs.blobsPresent(),
               msgs.blobsAwaited(), msgs.resumedBytes(), msgs.roundTrips(),
               msgs.view().size(), done->wall_micros() / 1000.0,
               ms(begin, msgs.blobsIn()), ms(spawned, exited),
               ms(exited, Clock::now()));
  send(m);
  return grpc::Status::OK;
}

grpc::Status OffloadSession::run() {
  grpc::Status st = runLink();
  // A failure after the stream started: say so in an OffloadDone, so the
  // client closes its side and then receives the status (with gRPC's
  // synchronous API the status can only follow the reader's end).
  bool told = false;
  if (!st.ok() && inboxStarted &&
      st.error_code() != grpc::StatusCode::CANCELLED) {
    v1::OffloadDown m;
    m.mutable_done()->set_error(st.error_message());
    told = send(m);
  }
  inbox.stop(ctx, !st.ok() && !told);
  node.janitor.remove(msgs.view().scratchDir());
  return st;
}

grpc::Status OffloadSession::runLink() {
  if (grpc::Status st = start(); !st.ok())
    return st;
  // Held while the link runs, not while its outputs stream: a client that
  // reads them slowly (or not at all) holds no slot of the node.
  JobSlots::Hold slot(node.slots);
  if (!slot.acquire([this] { return ctx->IsCancelled(); }))
    return clientWentAway();
  // Whatever the client sent under these keys is replaced.
  v1::LinkRequest &link = msgs.link();
  (*link.mutable_env())[sandbox::kReadDirKey] = node.blobs.root();
  (*link.mutable_env())[sandbox::kWriteDirKey] = msgs.view().scratchDir();
  (*link.mutable_env())[sandbox::kRequireKey] =
      node.landlockAbi > 0 ? "1" : "0";
  // Not a reusable worker: each link is confined to its own scratch
  // directory. Its stdout and stderr on plain pipes, as the client forwards
  // them.
  ChildRunner runner(node.zygote,
                     {.records = true, .sandbox = true, .ordered = false},
                     "farm link id=" + std::to_string(id));
  grpc::Status st;
  ChildHooks hooks = linkHooks(runner, st);
  lastHeard = Clock::now();
  ChildRun run = runner.run(link, hooks);
  inbox.unthrottle();
  spawned = run.spawned;
  exited = run.pumped;
  slot.release();
  if (!run.error.empty())
    return fail(grpc::StatusCode::RESOURCE_EXHAUSTED, run.error);
  if (!st.ok())
    return st;
  if (run.stopped)
    return fail(grpc::StatusCode::INTERNAL, run.stopReason);
  return finish(run.exit);
}

FarmService::FarmService(FarmNodeConfig config, ZygoteClient &zygote,
                         BlobStore &blobs, FarmTokens &tokens)
    : config(std::move(config)), zygote(zygote), blobs(blobs), tokens(tokens),
      slots(this->config.jobs), started(Clock::now()) {
  // Offload is the service's first method (farm.proto).
  MarkMethodStreamed(
      0, new grpc::internal::BidiStreamingHandler<FarmService, grpc::ByteBuffer,
                                                  grpc::ByteBuffer>(
             [](FarmService *self, grpc::ServerContext *ctx, RawStream *raw) {
               return self->offload(ctx, raw);
             },
             this));
}

grpc::Status FarmService::offload(grpc::ServerContext *ctx, RawStream *raw) {
  if (draining) {
    ++linksRejected;
    ++rejectedDraining;
    spdlog::info("farm: UNAVAILABLE peer={}: the node is draining",
                 ctx->peer());
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the node is draining (shutting down)");
  }
  const auto &md = ctx->client_metadata();
  auto it = md.find("authorization");
  std::optional<std::string> client =
      it == md.end() ? std::nullopt
                     : tokens.authenticate(
                           std::string(it->second.data(), it->second.size()));
  if (!client) {
    ++linksRejected;
    ++rejectedUnauthenticated;
    if (std::string more; unauthenticatedLog.allow(more))
      spdlog::warn("farm: UNAUTHENTICATED peer={}: {} token{}", ctx->peer(),
                   it == md.end() ? "no" : "unknown", more);
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        it == md.end() ? "a bearer token is required"
                                       : "unknown token");
  }
  if (!tokens.acquire(*client)) {
    ++linksRejected;
    ++rejectedLimit;
    spdlog::warn("farm: RESOURCE_EXHAUSTED client={} peer={}: at its limit of "
                 "concurrent links",
                 *client, ctx->peer());
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "too many concurrent links for this token");
  }
  uint64_t id = ++linksTotal;
  ++active;
  Stream stream(raw, ctx, config.caps,
                std::chrono::seconds(config.stallTimeoutSeconds),
                Clock::now() + std::chrono::seconds(config.linkTimeoutSeconds));
  grpc::Status st = OffloadSession(*this, ctx, &stream, id, *client).run();
  if (stream.timedOut() && !st.ok())
    spdlog::warn("farm link id={} client={}: the client did not send its "
                 "start or take what the node wrote within the stall "
                 "timeout ({} s); the call was cancelled",
                 id, *client, config.stallTimeoutSeconds);
  --active;
  tokens.release(*client);
  if (!st.ok())
    spdlog::info("farm link id={} client={} ended: {} {}", id, *client,
                 static_cast<int>(st.error_code()), st.error_message());
  return st;
}

FarmService::Counts FarmService::counts() const {
  return {linksTotal.load(),    rejectedUnauthenticated.load(),
          rejectedLimit.load(), rejectedDraining.load(),
          storeBytes.load(),    config.jobs,
          active.load(),        slots.waiting(),
          slots.freeSlots()};
}

grpc::Status FarmService::Health(grpc::ServerContext *,
                                 const v1::HealthRequest *,
                                 v1::HealthReply *reply) {
  reply->set_version(LINKD_VERSION);
  reply->set_lld_version(zygote.lldVersion());
  reply->set_jobs(config.jobs);
  reply->set_active_links(active.load());
  reply->set_queued_links(slots.waiting());
  reply->set_links_total(linksTotal.load());
  reply->set_links_rejected(linksRejected.load());
  double load[1] = {0};
  if (getloadavg(load, 1) == 1)
    reply->set_load_average_1m(load[0]);
  reply->set_store_bytes(storeBytes.load());
  reply->set_uptime_seconds(
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started)
          .count());
  return grpc::Status::OK;
}

} // namespace linkd
