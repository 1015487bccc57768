// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/control.h"

#include "cache/cache_stats.h"
#include "config/config.h"
#include "config/daemon_lock.h"
#include "config/env_flag.h"
#include "config/runtime_paths.h"
#include "daemon/linkd/metrics/daemon_metrics.h"
#include "linkd/v1/linkd.grpc.pb.h"
#include "store/local_store.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sys/stat.h>
#include <thread>

namespace linkd {
namespace {

std::unique_ptr<v1::Linkd::Stub> connect(const RuntimePaths &paths) {
  auto channel = grpc::CreateChannel("unix:" + paths.socketPath,
                                     grpc::InsecureChannelCredentials());
  return v1::Linkd::NewStub(channel);
}

bool socketAnswers(const std::string &path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  bool ok =
      ::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

struct LocalCache {
  Config settings;
  std::unique_ptr<LocalStore> store;
  std::unique_ptr<CacheStats> stats;
};

// The cache directory opened directly, for when no daemon runs.
std::optional<LocalCache> openLocalCache() {
  LocalCache c;
  c.settings = loadConfig();
  StoreConfig sc;
  sc.root = c.settings.cacheDir;
  sc.maxBytes = c.settings.maxSize;
  std::string err;
  c.store = LocalStore::open(sc, &err);
  if (!c.store) {
    std::fprintf(stderr, "linkd: cannot open the cache: %s\n", err.c_str());
    return std::nullopt;
  }
  c.stats = std::make_unique<CacheStats>(sc.root + "/stats");
  c.stats->load();
  return c;
}

} // namespace

std::optional<int> rewriteThroughDaemon(int argc, char **argv) {
  if (envFlag("LINKD_DISABLE"))
    return std::nullopt;
  RuntimePaths paths = resolveRuntimePaths();
  if (!socketAnswers(paths.socketPath))
    return std::nullopt;
  v1::LinkRequest req;
  req.set_protocol_version(1);
  req.set_flavor(v1::FLAVOR_REWRITE);
  for (int i = 0; i < argc; ++i)
    req.add_argv(argv[i]);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof(cwd)))
    return std::nullopt;
  req.set_cwd(cwd);
  mode_t mask = umask(0);
  umask(mask);
  req.set_umask(mask);
  req.set_no_cache(envFlag("LINKD_NOCACHE"));
  req.set_client_version(LINKD_VERSION);
  grpc::ClientContext ctx;
  auto stub = connect(paths); // outlives the call
  auto stream = stub->Rewrite(&ctx, req);
  v1::LinkReply reply;
  bool wroteOutput = false;
  std::optional<int> status;
  while (stream->Read(&reply)) {
    if (reply.has_output()) {
      const std::string &d = reply.output().data();
      int fd = reply.output().stream() == v1::OutputChunk::STREAM_STDOUT
                   ? STDOUT_FILENO
                   : STDERR_FILENO;
      (void)!write(fd, d.data(), d.size());
      wroteOutput = true;
    } else if (reply.has_done()) {
      const v1::LinkDone &done = reply.done();
      if (!done.internal_error().empty())
        break;
      status = done.term_signal() ? 128 + done.term_signal() : done.exit_code();
    }
  }
  grpc::Status st = stream->Finish();
  if (status)
    return status;
  if (wroteOutput) { // it ran partly: running it again would repeat output
    std::fprintf(stderr, "linkd: error: the daemon failed: %s\n",
                 st.error_message().c_str());
    return 1;
  }
  return std::nullopt; // run it locally
}

int printStats(const StatsOptions &opts) {
  RuntimePaths paths = resolveRuntimePaths();
  if (socketAnswers(paths.socketPath)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    v1::StatsRequest req;
    req.set_zero(opts.zero);
    req.set_all(opts.all);
    v1::StatsReply reply;
    grpc::Status st = connect(paths)->Stats(&ctx, req, &reply);
    if (!st.ok()) {
      std::fprintf(stderr, "linkd: stats failed: %s\n",
                   st.error_message().c_str());
      return 2;
    }
    std::fputs((opts.json ? reply.json() + "\n" : reply.text()).c_str(),
               stdout);
    return 0;
  }
  // No daemon: a cache directory that does not exist has all counters at
  // zero, and is not made by looking.
  Config settings = loadConfig();
  struct stat st;
  if (stat(settings.cacheDir.c_str(), &st) != 0) {
    CacheStats none(settings.cacheDir + "/stats");
    std::string out = opts.json ? none.json({}, settings.maxSize) + "\n"
                                : none.text({}, settings.maxSize, {}, opts.all);
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  auto c = openLocalCache();
  if (!c)
    return 2;
  StoreUsage usage = c->store->usage();
  std::string out =
      opts.json ? c->stats->json(usage, c->settings.maxSize) + "\n"
                : c->stats->text(usage, c->settings.maxSize, {}, opts.all);
  std::fputs(out.c_str(), stdout);
  if (opts.zero)
    c->stats->zero();
  return 0;
}

int printMetrics() {
  RuntimePaths paths = resolveRuntimePaths();
  if (socketAnswers(paths.socketPath)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    v1::MetricsReply reply;
    auto stub = v1::LinkdMetrics::NewStub(grpc::CreateChannel(
        "unix:" + paths.socketPath, grpc::InsecureChannelCredentials()));
    grpc::Status st = stub->Metrics(&ctx, v1::MetricsRequest(), &reply);
    if (!st.ok()) {
      std::fprintf(stderr, "linkd: metrics failed: %s\n",
                   st.error_message().c_str());
      return 2;
    }
    std::fputs(reply.text().c_str(), stdout);
    return 0;
  }
  // No daemon: the counters it left, as `linkd stats` shows them (and, as
  // there, a cache directory that does not exist is not made by looking).
  Config settings = loadConfig();
  MetricsSources src;
  std::optional<LocalCache> c;
  CacheStats none(settings.cacheDir + "/stats");
  struct stat st;
  if (stat(settings.cacheDir.c_str(), &st) == 0) {
    c = openLocalCache();
    if (!c)
      return 2;
    src.stats = c->stats.get();
    src.store = c->store.get();
    src.storeMaxBytes = c->settings.maxSize;
  } else {
    src.stats = &none;
  }
  std::fputs(renderMetrics(src).c_str(), stdout);
  return 0;
}

namespace {

// The running daemon's Info; nullopt (and a message) if it does not answer.
std::optional<v1::InfoReply> daemonInfo(const RuntimePaths &paths,
                                        const char *command) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::InfoReply info;
  grpc::Status st = connect(paths)->Info(&ctx, v1::InfoRequest(), &info);
  if (!st.ok()) {
    std::fprintf(stderr, "linkd: %s failed: %s\n", command,
                 st.error_message().c_str());
    return std::nullopt;
  }
  return info;
}

void printConfigWarnings(const std::vector<std::string> &warnings) {
  for (const std::string &w : warnings)
    std::fprintf(stderr, "linkd: config: %s\n", w.c_str());
}

} // namespace

int printConfig(int argc, char **argv) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: linkd config\n");
    return 2;
  }
  RuntimePaths paths = resolveRuntimePaths();
  std::vector<Setting> settings;
  std::vector<std::string> warnings;
  if (socketAnswers(paths.socketPath)) {
    auto info = daemonInfo(paths, "config");
    if (!info)
      return 2;
    std::printf("# the settings of the daemon serving %s (pid %lld)\n",
                paths.socketPath.c_str(), static_cast<long long>(info->pid()));
    for (const v1::Setting &s : info->settings())
      settings.push_back({s.key(), s.value(), s.source()});
    warnings.assign(info->config_warnings().begin(),
                    info->config_warnings().end());
  } else {
    Config c = loadConfig();
    std::printf("# no daemon serves %s: the settings one started now "
                "would have\n",
                paths.socketPath.c_str());
    if (!c.sourceFile.empty())
      std::printf("# config file %s\n", c.sourceFile.c_str());
    settings = listSettings(c);
    warnings = c.warnings;
  }
  size_t width = 0;
  for (const Setting &s : settings)
    width = std::max(width, s.key.size() + 3 + s.value.size());
  for (const Setting &s : settings) {
    std::string kv = s.key + " = " + s.value;
    std::printf("%s%*s  # %s\n", kv.c_str(),
                static_cast<int>(width - kv.size()), "", s.source.c_str());
  }
  printConfigWarnings(warnings);
  return warnings.empty() ? 0 : 1;
}

int cacheControl(const std::string &op) {
  v1::CacheControlRequest req;
  if (op == "clear")
    req.set_op(v1::CacheControlRequest::OP_CLEAR);
  else if (op == "trim")
    req.set_op(v1::CacheControlRequest::OP_TRIM);
  else {
    std::fprintf(stderr, "linkd: unknown cache command '%s' (clear, trim)\n",
                 op.c_str());
    return 2;
  }
  RuntimePaths paths = resolveRuntimePaths();
  if (socketAnswers(paths.socketPath)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(600));
    v1::CacheControlReply reply;
    grpc::Status st = connect(paths)->CacheControl(&ctx, req, &reply);
    if (!st.ok()) {
      std::fprintf(stderr, "linkd: cache %s failed: %s\n", op.c_str(),
                   st.error_message().c_str());
      return 2;
    }
    std::printf("%s\n", reply.message().c_str());
    return 0;
  }
  auto c = openLocalCache();
  if (!c)
    return 2;
  if (op == "clear") {
    uint64_t n = c->store->usage().entries;
    if (!c->store->clear())
      return 2;
    std::printf("removed %llu entries\n", static_cast<unsigned long long>(n));
  } else {
    std::printf("removed %llu entries\n",
                static_cast<unsigned long long>(c->store->trim()));
  }
  return 0;
}

int printStatus(bool json) {
  RuntimePaths paths = resolveRuntimePaths();
  if (!socketAnswers(paths.socketPath)) {
    printConfigWarnings(loadConfig().warnings); // what a daemon would meet
    if (json)
      std::printf("{\"running\": false, \"socket\": %s}\n",
                  jsonString(paths.socketPath).c_str());
    else
      std::printf("linkd: no daemon is serving %s\n", paths.socketPath.c_str());
    return 1;
  }
  auto reply = daemonInfo(paths, "status");
  if (!reply)
    return 2;
  const v1::InfoReply &info = *reply;
  printConfigWarnings(
      {info.config_warnings().begin(), info.config_warnings().end()});
  auto setting = [&](const char *key) {
    for (const v1::Setting &s : info.settings())
      if (s.key() == key)
        return s.value();
    return std::string();
  };
  if (json) {
    std::printf(
        "{\"running\": true, \"version\": %s, \"lld_version\": %s, "
        "\"pid\": %lld, \"zygote_pid\": %lld, \"uptime_seconds\": %llu, "
        "\"jobs\": %u, \"active_links\": %u, \"queued_links\": %u, "
        "\"links_total\": %llu, \"links_failed\": %llu, "
        "\"links_crashed\": %llu, \"idle_timeout_seconds\": %llu, "
        "\"socket\": %s, \"log\": %s, \"cache\": %s, \"cache_dir\": %s, "
        "\"max_size\": %s, \"base_dir\": %s, \"log_level\": %s}\n",
        jsonString(info.version()).c_str(),
        jsonString(info.lld_version()).c_str(),
        static_cast<long long>(info.pid()),
        static_cast<long long>(info.zygote_pid()),
        static_cast<unsigned long long>(info.uptime_seconds()), info.jobs(),
        info.active_links(), info.queued_links(),
        static_cast<unsigned long long>(info.links_total()),
        static_cast<unsigned long long>(info.links_failed()),
        static_cast<unsigned long long>(info.links_crashed()),
        static_cast<unsigned long long>(info.idle_timeout_seconds()),
        jsonString(info.socket_path()).c_str(),
        jsonString(info.log_path()).c_str(),
        jsonString(setting("cache")).c_str(),
        jsonString(setting("cache_dir")).c_str(),
        jsonString(setting("max_size")).c_str(),
        jsonString(setting("base_dir")).c_str(),
        jsonString(setting("log_level")).c_str());
    return 0;
  }
  std::printf("linkd %s (%s)\n", info.version().c_str(),
              info.lld_version().c_str());
  std::printf("  pid            %lld (zygote %lld)\n",
              static_cast<long long>(info.pid()),
              static_cast<long long>(info.zygote_pid()));
  std::printf("  socket         %s\n", info.socket_path().c_str());
  std::printf("  log            %s\n", info.log_path().c_str());
  std::printf("  uptime         %llu s\n",
              static_cast<unsigned long long>(info.uptime_seconds()));
  std::printf("  jobs           %u (active %u, queued %u)\n", info.jobs(),
              info.active_links(), info.queued_links());
  std::printf("  links          %llu (failed %llu, crashed %llu)\n",
              static_cast<unsigned long long>(info.links_total()),
              static_cast<unsigned long long>(info.links_failed()),
              static_cast<unsigned long long>(info.links_crashed()));
  if (info.idle_timeout_seconds())
    std::printf("  idle timeout   %llu s\n",
                static_cast<unsigned long long>(info.idle_timeout_seconds()));
  else
    std::printf("  idle timeout   never\n");
  if (!info.settings().empty()) { // an older daemon sends none
    std::printf("  cache          %s\n",
                setting("cache") == "true" ? (setting("cache_dir") + " (max " +
                                              setting("max_size") + ")")
                                                 .c_str()
                                           : "off");
    std::string base = setting("base_dir");
    std::printf("  base dir       %s\n", base.empty() ? "none" : base.c_str());
    std::printf("  log level      %s\n", setting("log_level").c_str());
    std::printf("  (linkd config: every setting and where it comes from)\n");
  }
  return 0;
}

namespace {

// The running daemon's drain_timeout (asked before it is told to stop), or
// this environment's.
uint64_t drainTimeout(const RuntimePaths &paths) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::InfoReply info;
  if (connect(paths)->Info(&ctx, v1::InfoRequest(), &info).ok())
    for (const v1::Setting &s : info.settings())
      if (s.key() == "drain_timeout")
        return std::strtoull(s.value().c_str(), nullptr, 10);
  return loadConfig().drainTimeoutSeconds;
}

} // namespace

int stopDaemon() {
  RuntimePaths paths = resolveRuntimePaths();
  if (!socketAnswers(paths.socketPath)) {
    std::printf("linkd: no daemon is serving %s\n", paths.socketPath.c_str());
    return 0;
  }
  uint64_t drain = drainTimeout(paths);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ShutdownReply reply;
  grpc::Status st =
      connect(paths)->Shutdown(&ctx, v1::ShutdownRequest(), &reply);
  // The daemon may close the connection before its reply gets out: that is
  // the stop we asked for. Either way, success is the daemon's lock freed.
  if (!st.ok() && st.error_code() != grpc::StatusCode::CANCELLED &&
      st.error_code() != grpc::StatusCode::UNAVAILABLE) {
    std::fprintf(stderr, "linkd: stop failed: %s\n",
                 st.error_message().c_str());
    return 2;
  }
  // The daemon holds its lock until running links have finished and it is
  // about to exit; wait for that: its drain_timeout, and 10 s for cancelling
  // what did not finish and for the rest of its shutdown. Asked, not taken
  // (config/daemon_lock.h): a daemon starting meanwhile must find it free.
  for (uint64_t i = 0; i < (drain + 10) * 10; ++i) {
    if (!daemonLockHeld(paths.daemonLock))
      return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "linkd: the daemon did not stop within %llu s\n",
               static_cast<unsigned long long>(drain + 10));
  return 2;
}

} // namespace linkd
