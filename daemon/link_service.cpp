#include "daemon/link_service.h"

#include "link/flavor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t microsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t)
      .count();
}

struct Pipe {
  int read = -1, write = -1;
  bool open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
      return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  void closeWrite() {
    if (write >= 0)
      close(write);
    write = -1;
  }
  ~Pipe() {
    if (read >= 0)
      close(read);
    closeWrite();
  }
};

std::string validate(const v1::LinkRequest &req) {
  auto f = req.flavor();
  if (f < v1::FLAVOR_ELF || f > v1::FLAVOR_WASM)
    return "unknown linker flavor " + std::to_string(f);
  if (req.argv().empty())
    return "empty argv";
  if (req.cwd().empty() || req.cwd()[0] != '/')
    return "cwd must be an absolute path";
  return {};
}

// Streams both pipes to the client until the child closes them. Returns
// false if the client went away (the caller kills the child).
bool pumpOutput(grpc::ServerContext *ctx,
                grpc::ServerWriter<v1::LinkReply> *writer, Pipe &out,
                Pipe &err) {
  pollfd fds[2] = {{out.read, POLLIN, 0}, {err.read, POLLIN, 0}};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    int n = poll(fds, 2, 200);
    if (n < 0 && errno != EINTR)
      return false;
    if (ctx->IsCancelled())
      return false;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t r = read(fds[i].fd, buf, sizeof(buf));
      if (r < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (r <= 0) {
        fds[i].fd = -1;
        --open;
        continue;
      }
      v1::LinkReply reply;
      auto *chunk = reply.mutable_output();
      chunk->set_stream(i == 0 ? v1::OutputChunk::STREAM_STDOUT
                               : v1::OutputChunk::STREAM_STDERR);
      chunk->set_data(buf, static_cast<size_t>(r));
      if (!writer->Write(reply))
        return false;
    }
  }
  return true;
}

} // namespace

LinkService::LinkService(ServiceConfig config, ZygoteClient &zygote,
                         std::function<void()> requestShutdown)
    : config(std::move(config)), zygote(zygote),
      requestShutdown(std::move(requestShutdown)), slots(this->config.jobs),
      started(Clock::now()),
      lastActivityNanos(Clock::now().time_since_epoch().count()) {}

uint64_t LinkService::idleSeconds() const {
  if (active.load() > 0)
    return 0;
  auto last = Clock::time_point(Clock::duration(lastActivityNanos.load()));
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - last)
      .count();
}

grpc::Status LinkService::Link(grpc::ServerContext *ctx,
                               const v1::LinkRequest *req,
                               grpc::ServerWriter<v1::LinkReply> *writer) {
  if (std::string err = validate(*req); !err.empty())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, err);
  uint64_t linkId = ++linksTotal;
  ++active;
  grpc::Status st = runLink(ctx, *req, writer, linkId);
  lastActivityNanos = Clock::now().time_since_epoch().count();
  --active;
  return st;
}

grpc::Status LinkService::runLink(grpc::ServerContext *ctx,
                                  const v1::LinkRequest &req,
                                  grpc::ServerWriter<v1::LinkReply> *writer,
                                  uint64_t linkId) {
  auto queued = Clock::now();
  if (!slots.acquire([ctx] { return ctx->IsCancelled(); }))
    return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  struct SlotGuard {
    JobSlots &s;
    ~SlotGuard() { s.release(); }
  } guard{slots};
  uint64_t queueMicros = microsSince(queued);
  auto begin = Clock::now();

  // A zygote that died since the last link is only noticed when we talk to
  // it; the spawn then fails before LLD ran, so one retry (which starts a
  // fresh zygote) is always safe.
  ChildExit exit;
  int pid = -1;
  bool clientStayed = true;
  for (int attempt = 0; attempt < 2; ++attempt) {
    Pipe out, err;
    if (!out.open() || !err.open())
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          std::string("pipe: ") + std::strerror(errno));
    ZygoteClient::Spawned child = zygote.spawn(req, out.write, err.write);
    out.closeWrite();
    err.closeWrite();
    clientStayed = pumpOutput(ctx, writer, out, err);
    pid = child.pid.get();
    if (!clientStayed && pid > 0)
      kill(pid, SIGKILL);
    exit = child.exit.get();
    if (exit.ran || pid > 0 || !clientStayed)
      break;
    spdlog::warn("link id={} could not start: {}; retrying", linkId,
                 exit.error);
  }

  v1::LinkReply reply;
  v1::LinkDone *done = reply.mutable_done();
  done->set_queue_micros(queueMicros);
  done->set_wall_micros(microsSince(begin));
  done->set_user_micros(exit.userMicros);
  done->set_sys_micros(exit.sysMicros);
  done->set_max_rss_kib(exit.maxRssKib);
  std::string outcome;
  if (!exit.ran) {
    done->set_internal_error(exit.error);
    ++linksFailed;
    outcome = "internal_error=\"" + exit.error + "\"";
  } else if (WIFSIGNALED(exit.waitStatus)) {
    int sig = WTERMSIG(exit.waitStatus);
    done->set_term_signal(sig);
    const char *abbrev = sigabbrev_np(sig);
    done->set_term_signal_name(abbrev ? std::string("SIG") + abbrev
                                      : std::to_string(sig));
    ++linksCrashed;
    outcome = "signal=" + done->term_signal_name();
  } else {
    done->set_exit_code(WEXITSTATUS(exit.waitStatus));
    if (done->exit_code() != 0)
      ++linksFailed;
    outcome = "rc=" + std::to_string(done->exit_code());
  }
  spdlog::info("link id={} flavor={} pid={} {} wall_ms={:.1f} queue_ms={:.1f} "
               "rss_kib={} cwd={} argc={}",
               linkId, flavorName(static_cast<Flavor>(req.flavor())), pid,
               outcome, done->wall_micros() / 1000.0, queueMicros / 1000.0,
               exit.maxRssKib, req.cwd(), req.argv_size());
  if (!clientStayed)
    return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  writer->Write(reply);
  return grpc::Status::OK;
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
  return grpc::Status::OK;
}

grpc::Status LinkService::Shutdown(grpc::ServerContext *,
                                   const v1::ShutdownRequest *,
                                   v1::ShutdownReply *) {
  spdlog::info("shutdown requested");
  requestShutdown();
  return grpc::Status::OK;
}

} // namespace linkd
