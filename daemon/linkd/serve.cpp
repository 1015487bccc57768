// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/serve.h"

#include "audit/state_record.h"

#include "daemon/linkd/peer_check.h"

#include "config/config.h"
#include "config/daemon_lock.h"
#include "config/runtime_paths.h"
#include "daemon/linkd/farm_client/farm_client.h"
#include "daemon/linkd/farm_node/farm_service.h"
#include "daemon/linkd/metrics/daemon_metrics.h"
#include "daemon/linkd/metrics/metrics_listener.h"
#include "daemon/linkd/reapi/reapi_cache.h"
#include "daemon/linkd/reapi/reapi_executor.h"
#include "daemon/linkd/runner/zygote_client.h"
#include "daemon/linkd/service/kernel_listener.h"
#include "daemon/linkd/service/link_service.h"
#include "daemon/linkd/service/local_link.h"
#include "daemon/linkd/service/log_limit.h"
#include "log/log_format.h"
#include "util/files.h"

#include <absl/synchronization/mutex.h>
#include <fcntl.h>
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <malloc.h>
#include <signal.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace linkd {
namespace {

// Protobuf's complaints (a client's request with a string that is not
// UTF-8) go to the log as records, not raw to stderr: an autostarted
// daemon's stderr is the log file, and a raw line there is no JSON.
void protobufToLog(google::protobuf::LogLevel, const char *, int,
                   const std::string &message) {
  spdlog::warn("protobuf: {}", message);
}

constexpr size_t kLogFileBytes = 16u << 20;
constexpr size_t kLogFilesKept = 2; // besides linkd.log

void setUpLogging(const RuntimePaths &paths, const std::string &level,
                  const std::string &format) {
  std::string lvl = level;
  if (lvl.empty()) {
    const char *env = std::getenv("LINKD_LOG");
    lvl = env && *env ? env : "info";
  }
  std::shared_ptr<spdlog::logger> logger;
  if (ensureDirectoryTree(paths.stateDir).empty()) {
    try {
      // Capped: linkd.log, then linkd.1.log and linkd.2.log, 16 MiB each.
      // A daemon that serves for weeks, or that someone floods with what
      // it must log, never fills the disk.
      logger = spdlog::rotating_logger_mt("linkd", paths.logPath, kLogFileBytes,
                                          kLogFilesKept);
    } catch (const spdlog::spdlog_ex &) {
    }
  }
  if (!logger)
    logger = spdlog::default_logger();
  logger->set_formatter(makeLogFormatter(format)); // lib/log/log_format.h
  google::protobuf::SetLogHandler(protobufToLog);
  logger->set_level(spdlog::level::from_str(lvl));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

class ShutdownSignal {
public:
  void request() {
    std::lock_guard lock(mu);
    requested = true;
    cv.notify_all();
  }
  // Waits up to `d`; true once shutdown was requested.
  bool waitFor(std::chrono::milliseconds d) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, d, [this] { return requested; });
  }

private:
  std::mutex mu;
  std::condition_variable cv;
  bool requested = false;
};

// Everything the cache needs, owned here for the daemon's lifetime.
struct CacheParts {
  std::unique_ptr<RemoteTiers> remote;
  std::unique_ptr<LocalStore> store;
  std::unique_ptr<LocalStore> recordStore; // the cache off: audit records
  std::unique_ptr<StatCache> statCache;
  std::unique_ptr<SpareCopies> spares;
  std::unique_ptr<LinkCache> cache;
  std::unique_ptr<CacheStats> stats;
  std::unique_ptr<TempJournal> journal;
  KeyContext keyContext;
  uint64_t corruptSeen = 0;
  uint64_t evictionsSeen = 0;
  uint64_t maintainRounds = 0;

  CacheRuntime runtime() {
    CacheRuntime r;
    r.enabled = cache != nullptr;
    r.store = store.get();
    r.recordStore = store ? store.get() : recordStore.get();
    r.statCache = statCache.get();
    r.cache = cache.get();
    r.stats = stats.get();
    r.remote = remote.get();
    r.journal = journal.get();
    r.keyContext = keyContext;
    return r;
  }

  void maintain() {
    if (!store)
      return;
    statCache->flush();
    // Every 10 s: an fstat per held descriptor finds the deleted inputs.
    if (++maintainRounds % 10 == 0)
      cache->sweepHeldInputs();
    // Evictions by size, and for room on a full disk (made by the writes).
    store->maintain();
    uint64_t evicted = store->evictionCount();
    if (evicted > evictionsSeen) {
      stats->addCounter("evictions", evicted - evictionsSeen);
      evictionsSeen = evicted;
    }
    uint64_t corrupt = store->corruptCount();
    if (corrupt > corruptSeen) {
      stats->addCounter("corrupt_entries", corrupt - corruptSeen);
      corruptSeen = corrupt;
    }
    stats->save();
  }
};

// The remote tiers; a tier that cannot be configured is left out (and
// logged), so a typo costs sharing, never links.
std::unique_ptr<RemoteTiers> openRemote(const Config &settings) {
  if (settings.remotes.empty())
    return nullptr;
  RemoteOptions opts;
  opts.hmacKey = settings.remoteKey;
  opts.breakerCooldown = std::chrono::seconds(settings.remoteBreakerSeconds);
  opts.warn = [](const std::string &m) { spdlog::warn("{}", m); };
  opts.makeGrpcBackend =
      [settings](const RemoteTierConfig &cfg,
                 std::string *error) -> std::unique_ptr<RemoteBackend> {
    reapi::Endpoint base;
    if (!reapi::endpointSettings(settings, base, error))
      return nullptr;
    return reapi::makeCacheBackend(cfg, base, error);
  };
  for (const std::string &url : settings.remotes) {
    std::string err;
    auto cfg = parseRemoteUrl(url, &err);
    if (!cfg) {
      spdlog::error("remote tier ignored: {}", err);
      continue;
    }
    cfg->timeout = std::chrono::milliseconds(settings.remoteTimeoutMs);
    cfg->connectTimeout =
        std::chrono::milliseconds(settings.remoteConnectTimeoutMs);
    spdlog::info("remote tier {} mode={} signed={}", cfg->displayName(),
                 cfg->mode == TierMode::ReadWrite  ? "read-write"
                 : cfg->mode == TierMode::ReadOnly ? "read-only"
                                                   : "write-only",
                 !opts.hmacKey.empty());
    opts.tiers.push_back(*cfg);
  }
  if (opts.tiers.empty())
    return nullptr;
  std::string err;
  auto tiers = RemoteTiers::create(opts, &err);
  if (!tiers)
    spdlog::error("remote tiers off: {}", err);
  return tiers;
}

// The store in the cache directory, after the cache's checks on it (the
// directory made, no other user able to write there or to repoint a link
// to it); null and why not. `sc.root` becomes the resolved directory.
std::unique_ptr<LocalStore> openLocalStore(StoreConfig &sc, std::string &err) {
  err = ensureDirectoryTree(sc.root);
  std::string resolved;
  if (err.empty())
    err = resolveCacheDirectory(sc.root, resolved);
  if (!err.empty())
    return nullptr;
  sc.root = resolved;
  auto store = LocalStore::open(sc, &err);
  if (!store)
    err = "cannot open the store in " + sc.root + ": " + err;
  return store;
}

StoreConfig storeConfig(const Config &settings) {
  StoreConfig sc;
  sc.root = settings.cacheDir;
  sc.maxBytes = settings.maxSize;
  sc.warn = [](const std::string &m) { spdlog::warn("{}", m); };
  return sc;
}

// With the cache off, the audit's link records still go to the store in
// the cache directory, where `linkd audit` looks (docs/audit.md), unless
// LINKD_AUDIT_RECORD=0.
std::unique_ptr<LocalStore> openRecordStore(const Config &settings) {
  if (audit::recordPolicyFrom(std::getenv("LINKD_AUDIT_RECORD")) ==
      audit::RecordPolicy::Off)
    return nullptr;
  std::string err;
  StoreConfig sc = storeConfig(settings);
  auto store = openLocalStore(sc, err);
  if (!store)
    spdlog::error("audit link records off: {}", err);
  return store;
}

CacheParts openCache(const Config &settings, ZygoteClient &zygote) {
  CacheParts parts;
  if (!settings.cacheEnabled) {
    spdlog::info("cache off by configuration");
    parts.recordStore = openRecordStore(settings);
    return parts;
  }
  std::string lld = zygote.waitForLldVersion(std::chrono::milliseconds(10000));
  if (lld.empty()) {
    spdlog::error("the link zygote did not report LLD's version; cache off");
    return parts;
  }
  StoreConfig sc = storeConfig(settings);
  std::string err;
  auto store = openLocalStore(sc, err);
  if (!store) {
    spdlog::error("cache off: {}", err);
    return parts;
  }
  auto statCache = StatCache::open(sc.root + "/statcache.sqlite", &err);
  if (!statCache) {
    spdlog::error("cannot open the cache in {}: {}; cache off", sc.root, err);
    return parts;
  }
  parts.store = std::move(store);
  parts.statCache = std::move(statCache);
  // What a killed daemon left half-written in build directories goes first.
  size_t swept = 0;
  parts.journal = std::make_unique<TempJournal>(
      tempJournalPath(resolveRuntimePaths().stateDir), &swept);
  if (swept)
    spdlog::info("removed {} temporaries a previous daemon left", swept);
  parts.store->setTempJournal(parts.journal.get());
  parts.remote = openRemote(settings);
  // Ready copies of outputs stored raw (above the compression limit), up to
  // an eighth of the cache's size (store/spare_copies.h).
  parts.spares = std::make_unique<SpareCopies>(
      *parts.store, sc.root, sc.compressLimit, sc.maxBytes / 8);
  parts.cache = std::make_unique<LinkCache>(
      *parts.store, *parts.statCache, parts.remote.get(), parts.spares.get(),
      inputHandleBudget(), settings.watchInputs);
  parts.stats = std::make_unique<CacheStats>(sc.root + "/stats");
  parts.stats->load();
  for (auto [name, why] :
       {std::pair{"index.sqlite", &parts.store->indexRebuilt()},
        std::pair{"statcache.sqlite", &parts.statCache->rebuilt()}}) {
    if (why->empty())
      continue;
    spdlog::warn("cache: {}/{} was damaged ({}); moved aside as {}.damaged "
                 "and rebuilt empty",
                 sc.root, name, *why, name);
    parts.stats->addCounter("cache_db_rebuilt", 1);
  }
  parts.keyContext.linkdVersion = LINKD_VERSION;
  parts.keyContext.lldVersion = lld;
  parts.keyContext.baseDir = settings.baseDir;
  parts.keyContext.sloppiness = settings.sloppiness;
  return parts;
}

std::optional<std::string> readPem(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return std::nullopt;
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    s.append(buf, n);
  std::fclose(f);
  return s;
}

bool isLoopback(const std::string &listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  return host == "127.0.0.1" || host == "localhost" || host == "[::1]" ||
         host.starts_with("127.");
}

// The farm node's half: its store, tokens, service and listening port.
struct FarmNode {
  std::unique_ptr<BlobStore> blobs;
  std::optional<FarmTokens> tokens;
  std::unique_ptr<FarmService> service;

  // "" or why the node cannot serve (the daemon then refuses to start).
  std::string open(const ServeOptions &o, const Config &settings,
                   ZygoteClient &zygote, unsigned jobs) {
    bool tls = !o.tlsCert.empty() || !o.tlsKey.empty();
    if (tls && (o.tlsCert.empty() || o.tlsKey.empty()))
      return "--tls-cert and --tls-key go together";
    if (!tls && !o.insecure && !isLoopback(o.listen))
      return "refusing to listen on " + o.listen +
             " without TLS (give --tls-cert/--tls-key, or --insecure)";
    if (!o.clientCa.empty() && !tls)
      return "--client-ca needs TLS";
    if (o.tokenFile.empty())
      return "a farm node needs --token-file";
    FarmNodeConfig c;
    c.listen = o.listen;
    c.tlsCert = o.tlsCert;
    c.tlsKey = o.tlsKey;
    c.clientCa = o.clientCa;
    c.tokenFile = o.tokenFile;
    c.insecure = o.insecure;
    if (o.maxRequestBytes)
      c.maxRequestBytes = o.maxRequestBytes;
    if (o.maxPaths)
      c.caps.maxFacts = o.maxPaths;
    if (o.maxPathBytes)
      c.caps.maxPathBytes = o.maxPathBytes;
    if (o.maxLinksPerToken)
      c.maxLinksPerToken = o.maxLinksPerToken;
    if (o.linkTimeoutSeconds)
      c.linkTimeoutSeconds = o.linkTimeoutSeconds;
    if (o.stallTimeoutSeconds)
      c.stallTimeoutSeconds = o.stallTimeoutSeconds;
    c.jobs = jobs;
    c.storeDir = settings.cacheDir + "/farm";
    c.storeMaxBytes = settings.maxSize;
    std::string err;
    auto loaded = FarmTokens::load(o.tokenFile, c.maxLinksPerToken, &err);
    if (!loaded)
      return err;
    tokens.emplace(std::move(*loaded));
    if (std::string e = ensureDirectoryTree(c.storeDir); !e.empty())
      return e;
    // Scratch directories of links a previous node process left behind.
    removeTree(c.storeDir + "/links");
    if (mkdir((c.storeDir + "/links").c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create " + c.storeDir + "/links";
    blobs = std::make_unique<BlobStore>(c.storeDir + "/blobs", c.storeMaxBytes);
    if (std::string e = blobs->open(); !e.empty())
      return e;
    service = std::make_unique<FarmService>(c, zygote, *blobs, *tokens);
    return {};
  }

  std::string addPort(grpc::ServerBuilder &builder, const ServeOptions &o,
                      int *port) {
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (o.tlsCert.empty()) {
      creds = grpc::InsecureServerCredentials();
    } else {
      auto cert = readPem(o.tlsCert), key = readPem(o.tlsKey);
      if (!cert || !key)
        return "cannot read " + (cert ? o.tlsKey : o.tlsCert);
      grpc::SslServerCredentialsOptions ssl(
          o.clientCa.empty()
              ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      if (!o.clientCa.empty()) {
        auto ca = readPem(o.clientCa);
        if (!ca)
          return "cannot read " + o.clientCa;
        ssl.pem_root_certs = *ca;
      }
      ssl.pem_key_cert_pairs.push_back({*key, *cert});
      creds = grpc::SslServerCredentials(ssl);
    }
    builder.AddListeningPort(o.listen, creds, port);
    builder.RegisterService(service.get());
    return {};
  }

  // A farm link ran or is running since the last call.
  bool busySinceLastCheck() {
    if (!service)
      return false;
    uint64_t started = service->linksStarted();
    bool busy = service->activeLinks() > 0 || started != lastStarted;
    lastStarted = started;
    return busy;
  }
  uint64_t lastStarted = 0;

  void maintain() {
    if (!service)
      return;
    if (service->activeLinks() == 0)
      blobs->evict(); // a link may hold a blob it has not opened yet
    service->noteStoreBytes(blobs->bytes());
  }
};

// Descriptors the starting process left open go first: a shell's pipe
// (`out=$(linkd serve &)`), a build tool's jobserver or output capture. Held by
// the daemon, its zygote and every link child, such a pipe never sees EOF.
// Kept: stdin, stdout, stderr, and the sockets systemd hands over on purpose
// (LISTEN_FDS from fd 3, when LISTEN_PID is us).
void closeInheritedDescriptors() {
  unsigned keep = 3;
  const char *pid = std::getenv("LISTEN_PID");
  const char *fds = std::getenv("LISTEN_FDS");
  if (pid && fds && std::atol(pid) == getpid()) {
    int n = std::atoi(fds);
    if (n > 0 && n < 1024)
      keep += static_cast<unsigned>(n);
  }
  close_range(keep, ~0U, 0);
}

// The listening socket systemd passed (socket activation: LISTEN_PID is us,
// LISTEN_FDS >= 1, the socket is fd 3), or -1.
int activatedSocket() {
  const char *pid = std::getenv("LISTEN_PID");
  const char *fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds || std::atol(pid) != getpid() || std::atoi(fds) < 1)
    return -1;
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  fcntl(3, F_SETFD, FD_CLOEXEC);
  return 3;
}

// The daemon between the steps of its life (serve() below, in order).
struct Daemon {
  explicit Daemon(const ServeOptions &options) : options(options) {}
  const ServeOptions &options;
  int activated = -1; // a socket systemd passed, or -1
  int listener = -1;  // the socket connections are accepted on
  RuntimePaths paths;
  int lockFd = -1;
  sigset_t stopSignals;
  std::optional<ZygoteClient> zygote;
  Config settings;
  ServiceConfig config;
  CacheParts parts;
  std::unique_ptr<FarmClient> farmClient;
  // A Remote Execution API cluster as the offload target instead
  // (remote_executor), when no farm is set.
  std::unique_ptr<reapi::Executor> executor;
  OffloadTarget *offloadTarget() {
    if (farmClient)
      return farmClient.get();
    return executor.get();
  }
  FarmNode node;
  ShutdownSignal shutdown;
  std::unique_ptr<LinkService> service;
  std::unique_ptr<MetricsService> metricsService; // `linkd metrics`
  std::unique_ptr<KernelListener> kernels;        // liblinkd's socket
  // Made in startServer: gRPC starts threads when its first object is made,
  // and none may exist before the zygote is exec'd and the stop signals are
  // blocked.
  std::optional<grpc::ServerBuilder> builder;
  std::optional<grpc::ResourceQuota> quota;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor;
  std::unique_ptr<grpc::Server> server;
  std::thread acceptThread;
  // Every listener's connections that hold a thread, under one cap
  // (connection_limits.h).
  Connections connections{kMaxConnections};
  LogLimit refusedPeers; // their log lines (service/log_limit.h)
  int farmPort = 0;
  std::unique_ptr<MetricsListener> metrics; // metrics_listen, --metrics-listen
  int64_t startTime = std::time(nullptr);
};

// The socket directory and the lifetime lock, and the process-wide settings
// that must be in place before any thread exists. Non-zero: exit status.
int claimSocket(Daemon &d) {
  closeInheritedDescriptors();
  // Debian builds Abseil without NDEBUG, so every absl::Mutex::Lock inside
  // gRPC maintained a lock-order graph for deadlock detection: ~4 % of the
  // daemon's CPU on a run of small links (perf: absl DeadlockCheck, GetId).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  d.activated = activatedSocket();
  if (!d.options.socketPath.empty())
    setenv("LINKD_SOCKET", d.options.socketPath.c_str(), 1);
  d.paths = resolveRuntimePaths();
  if (std::string err = ensurePrivateDirectory(d.paths.runtimeDir);
      !err.empty()) {
    std::fprintf(stderr, "linkd: error: %s\n", err.c_str());
    return 1;
  }
  d.lockFd = takeDaemonLock(d.paths.daemonLock);
  if (d.lockFd < 0) {
    std::fprintf(stderr, "linkd: a daemon is already serving %s\n",
                 d.paths.socketPath.c_str());
    return 3;
  }
  signal(SIGPIPE, SIG_IGN);
  // Freed memory stays with the process while it is busy, and goes back
  // once per idle spell (waitForShutdown). glibc's defaults map every buffer
  // above 128 KiB afresh and trim the heap behind each free, so a farm
  // transfer (1 MiB messages) touched new pages for every chunk: 70,000
  // page faults on a node receiving W1's 353 MiB, 17,000 on a client
  // receiving its output; on this VM a new page costs ~9 us.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Stop signals are taken by one thread (waitForShutdown); block them
  // before any other thread exists so that none of gRPC's threads gets the
  // default action.
  sigemptyset(&d.stopSignals);
  sigaddset(&d.stopSignals, SIGTERM);
  sigaddset(&d.stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &d.stopSignals, nullptr);
  return 0;
}

// The zygote, while this process is single-threaded.
int startZygote(Daemon &d) {
  d.zygote.emplace(executableDirectory() + "/linkd-lld");
  if (std::string err = d.zygote->start(); !err.empty()) {
    std::fprintf(stderr, "linkd: error: cannot start the link zygote: %s\n",
                 err.c_str());
    return 1;
  }
  return 0;
}

// Config mistakes also go to stderr, for `linkd serve` in a terminal or under
// systemd (the journal); an autostarted daemon's stderr is the log, which
// has them already.
void printConfigWarnings(const Config &settings, const RuntimePaths &paths) {
  struct stat err, log;
  if (fstat(STDERR_FILENO, &err) == 0 &&
      stat(paths.logPath.c_str(), &log) == 0 && err.st_dev == log.st_dev &&
      err.st_ino == log.st_ino)
    return;
  for (const std::string &w : settings.warnings)
    std::fprintf(stderr, "linkd: config: %s\n", w.c_str());
}

// What `linkd config` shows for this daemon: the configuration, with the
// values `serve`'s options replaced named as their source.
std::vector<Setting> effectiveSettings(const Config &settings,
                                       const ServeOptions &options,
                                       const ServiceConfig &config) {
  std::vector<Setting> out = listSettings(settings);
  for (Setting &s : out) {
    if (s.key == "jobs" && options.jobs) {
      s.value = std::to_string(config.jobs);
      s.source = "serve --jobs";
    } else if (s.key == "idle_timeout" &&
               config.idleTimeoutSeconds != settings.idleTimeoutSeconds) {
      s.value = std::to_string(config.idleTimeoutSeconds);
      s.source = options.idleTimeoutSeconds >= 0 ? "serve --idle-timeout"
                                                 : "serve --listen";
    } else if (s.key == "log_level" && !options.logLevel.empty()) {
      s.value = options.logLevel;
      s.source = "serve --log-level";
    }
  }
  return out;
}

// Logging and the service's settings.
void configure(Daemon &d) {
  const ServeOptions &o = d.options;
  d.settings = loadConfig();
  if (!o.metricsListen.empty()) {
    d.settings.metricsListen = o.metricsListen;
    d.settings.sources["metrics_listen"] = "serve --metrics-listen";
  }
  if (!o.metricsAllow.empty()) {
    d.settings.metricsAllow = o.metricsAllow;
    d.settings.sources["metrics_allow"] = "serve --metrics-allow";
  }
  setUpLogging(d.paths, o.logLevel.empty() ? d.settings.logLevel : o.logLevel,
               d.settings.logFormat);
  for (const std::string &w : d.settings.warnings)
    spdlog::warn("config: {}", w);
  ServiceConfig &c = d.config;
  c.jobs = o.jobs ? o.jobs : d.settings.jobs;
  c.idleTimeoutSeconds = o.idleTimeoutSeconds >= 0
                             ? static_cast<uint64_t>(o.idleTimeoutSeconds)
                             : d.settings.idleTimeoutSeconds;
  // A farm node serves others: it does not go away when idle.
  if (!o.listen.empty() && o.idleTimeoutSeconds < 0)
    c.idleTimeoutSeconds = 0;
  c.socketPath = d.paths.socketPath;
  c.logPath = d.paths.logPath;
  c.workDir = d.paths.runtimeDir;
  c.incrementalDir = d.paths.stateDir + "/incremental";
  c.incrementalVerify = d.settings.incrementalVerify;
  c.incrementalSlackPercent = d.settings.incrementalSlackPercent;
  c.incrementalSlackBytes = d.settings.incrementalSlackBytes;
  printConfigWarnings(d.settings, d.paths);
  c.settings = effectiveSettings(d.settings, o, c);
  c.configWarnings = d.settings.warnings;
}

// The farm: as its client (LINKD_FARM), and as a node (--listen).
int openFarm(Daemon &d) {
  const Config &settings = d.settings;
  if (!settings.farm.empty()) {
    std::string err;
    d.farmClient = FarmClient::create(settings, d.parts.statCache.get(), &err);
    if (d.farmClient)
      d.farmClient->setTempJournal(d.parts.journal.get());
    if (!d.farmClient)
      spdlog::error("farm {} off: {}", settings.farm, err);
    else if (!d.parts.cache)
      spdlog::warn("farm {} unused: it needs the cache", settings.farm);
    else
      spdlog::info("farm {} policy={} min_input={}", settings.farm,
                   settings.farmPolicy, settings.farmMinInput);
  }
  if (!settings.remoteExecutor.empty() && !settings.farm.empty()) {
    spdlog::warn("remote_executor {} unused: the farm {} is the offload target",
                 settings.remoteExecutor, settings.farm);
  } else if (!settings.remoteExecutor.empty()) {
    std::string err;
    d.executor = reapi::Executor::create(settings, d.parts.statCache.get(),
                                         reapi::loadedFiles(d.zygote->pid()),
                                         d.zygote->lldVersion(), &err);
    if (d.executor)
      d.executor->setTempJournal(d.parts.journal.get());
    if (!d.executor)
      spdlog::error("remote executor {} off: {}", settings.remoteExecutor, err);
    else if (!d.parts.cache)
      spdlog::warn("remote executor {} unused: it needs the cache",
                   settings.remoteExecutor);
    else
      spdlog::info(
          "remote executor {} policy={} min_input={} linker={}",
          settings.remoteExecutor, settings.farmPolicy, settings.farmMinInput,
          settings.remoteLinker.empty() ? "shipped" : settings.remoteLinker);
  }
  if (d.options.listen.empty())
    return 0;
  if (std::string err =
          d.node.open(d.options, settings, *d.zygote, d.config.jobs);
      !err.empty()) {
    spdlog::error("farm node: {}", err);
    std::fprintf(stderr, "linkd: error: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

// liblinkd's socket (<socket>.blob, docs/kernels.md), before gRPC's answers:
// autostart waits for that one. Without it the daemon still serves gRPC, and
// the library links in child processes.
void startKernelSocket(Daemon &d) {
  KernelListenerConfig c;
  c.socketPath = d.paths.socketPath + std::string(kernel::kSocketSuffix);
  // Under the cache directory only when the cache uses it (a directory it
  // refused, e.g. one others can write, is not written to).
  c.blobDir = d.parts.store ? d.settings.cacheDir + "/kernels"
                            : d.paths.stateDir + "/kernels";
  c.jobs = d.config.jobs;
  d.kernels = std::make_unique<KernelListener>(
      std::move(c), *d.zygote, d.parts.store.get(), d.parts.stats.get(),
      d.connections);
  if (std::string err = d.kernels->start(); !err.empty())
    spdlog::error("kernel socket off: {}", err);
}

// One accepted connection of this daemon's user: the thin client's framed
// wire is served here (local_link.h), anything else goes to gRPC.
void routeConnection(Daemon &d, int c) {
  switch (sniffProtocol(c, kConnectionIdleLimit.count())) {
  case Protocol::Framed:
    serveLocalLink(*d.service, c);
    break;
  case Protocol::Other: {
    d.connections.disown(c); // gRPC's from here on
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
    p.listener_fd = d.listener;
    p.fd = c;
    d.acceptor->HandleNewConnection(&p);
    return;
  }
  case Protocol::Gone:
    break;
  }
  d.connections.disown(c);
  close(c);
}

// Accepts on the socket (ours or systemd's), refuses peers of other users
// (peer_check.h), and gives each connection a thread that routes it: a link
// blocks its thread for the link's length, and a slow first byte must not
// hold up the next client. Over the cap, or with no thread to be had, new
// ones are turned away (their clients link locally).
void acceptConnections(Daemon &d) {
  for (;;) {
    int c = accept4(d.listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      return; // shut down in stopServing
    }
    if (std::string why = refusePeer(c); !why.empty()) {
      if (std::string more; d.refusedPeers.allow(more))
        spdlog::warn("refused a connection: {}{}", why, more);
      close(c);
      continue;
    }
    auto started =
        d.connections.serve("socket", c, [&d, c] { routeConnection(d, c); });
    if (started == Connections::Start::Full)
      turnAway(c, "the daemon has " + std::to_string(kMaxConnections) +
                      " connections open");
    else if (started == Connections::Start::NoThread)
      turnAway(c, "the daemon has no thread for it");
  }
}

// Everything the metrics are read from, as it is at the moment of a scrape.
MetricsSources metricsSources(Daemon &d) {
  MetricsSources src;
  src.stats = d.parts.stats.get();
  src.store = d.parts.store.get();
  src.storeMaxBytes = d.settings.maxSize;
  src.remote = d.parts.remote.get();
  src.farm = d.offloadTarget();
  src.service = d.service.get();
  src.node = d.node.service.get();
  src.lldVersion = d.zygote->lldVersion();
  src.startTimeSeconds = d.startTime;
  return src;
}

// The gRPC server on the socket (and the farm node's port). The lock
// guarantees nobody else owns the socket, so a leftover file is from a dead
// daemon.
int startServer(Daemon &d) {
  d.service = std::make_unique<LinkService>(
      d.config, *d.zygote, d.parts.runtime(), [&d] { d.shutdown.request(); },
      d.parts.cache ? d.offloadTarget() : nullptr);
  d.metricsService = std::make_unique<MetricsService>(
      [&d] { return renderMetrics(metricsSources(d)); }); // `linkd metrics`
  grpc::ServerBuilder &builder = d.builder.emplace();
  d.listener = d.activated;
  if (d.listener < 0) {
    std::string err;
    d.listener = listenUnix(d.paths.socketPath, &err);
    if (d.listener < 0) {
      spdlog::error("{}", err);
      std::fprintf(stderr, "linkd: error: %s\n", err.c_str());
      return 1;
    }
  }
  d.acceptor = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      grpc::InsecureServerCredentials());
  builder.RegisterService(d.service.get());
  builder.RegisterService(d.metricsService.get());
  if (d.node.service) {
    if (std::string err = d.node.addPort(builder, d.options, &d.farmPort);
        !err.empty()) {
      std::fprintf(stderr, "linkd: error: %s\n", err.c_str());
      return 1;
    }
  }
  // grpc.health.v1.Health on a node, for load balancers and probes: gRPC's
  // own implementation (Check and Watch), enabled process-wide before the
  // one server is built; SERVING until the node drains (stopServing).
  if (d.node.service)
    grpc::EnableDefaultHealthCheckService(true);
  // Every message in memory before any check of ours sees it: a link
  // request's argv, a farm start's facts (counted before parsing,
  // offload_wire.h) or a 1 MiB blob chunk fit many times over.
  builder.SetMaxReceiveMessageSize(64 << 20);
  // Farm clients ping every FarmClient::kKeepaliveMs during a call (a silent
  // node is given up in seconds); gRPC's default policy would answer pings
  // more often than every 5 minutes without data with GOAWAY. The node pings
  // its clients too: a client gone silent frees its link sooner than the
  // stall timeout would.
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      FarmClient::kKeepaliveMs / 2);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  // The cap and idle limit of every listener (connection_limits.h): gRPC
  // holds an idle connection without a thread, and runs calls on at most
  // that many.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(kConnectionIdleLimit.count()));
  d.quota.emplace("linkd").SetMaxThreads(kMaxConnections);
  builder.SetResourceQuota(*d.quota);
  mode_t oldMask = umask(0177); // the socket is created 0600
  d.server = builder.BuildAndStart();
  umask(oldMask);
  if (!d.server) {
    spdlog::error("cannot listen on {}", d.paths.socketPath);
    std::fprintf(stderr, "linkd: error: cannot listen on %s\n",
                 d.paths.socketPath.c_str());
    return 1;
  }
  if (d.activated < 0)
    chmod(d.paths.socketPath.c_str(), 0600);
  d.acceptThread = std::thread([&d] { acceptConnections(d); });
  if (d.node.service && d.farmPort == 0) {
    spdlog::error("farm node: cannot listen on {}", d.options.listen);
    std::fprintf(stderr, "linkd: error: cannot listen on %s\n",
                 d.options.listen.c_str());
    d.server->Shutdown(std::chrono::system_clock::now());
    return 1;
  }
  if (d.node.service)
    if (grpc::HealthCheckServiceInterface *health =
            d.server->GetHealthCheckService())
      health->SetServingStatus(v1::Farm::service_full_name(), true);
  return 0;
}

// The metrics endpoint, if asked for. An address from the config that
// cannot be served costs the metrics, never the daemon; one given to
// `serve` on the command line (a node's unit) is an error.
int startMetrics(Daemon &d) {
  if (d.settings.metricsListen.empty())
    return 0;
  d.metrics = std::make_unique<MetricsListener>(
      MetricsListenerConfig{d.settings.metricsListen, d.settings.metricsAllow,
                            /*ownerOnLoopback=*/!d.node.service},
      [&d] { return renderMetrics(metricsSources(d)); }, d.connections);
  if (std::string err = d.metrics->start(); !err.empty()) {
    d.metrics.reset();
    spdlog::error("metrics off: {}", err);
    if (!d.options.metricsListen.empty()) {
      std::fprintf(stderr, "linkd: error: %s\n", err.c_str());
      return 1; // serve() stops what started
    }
    return 0;
  }
  std::string allow = "loopback";
  for (const std::string &a : d.settings.metricsAllow)
    allow += "," + a;
  spdlog::info("metrics on http://{}/metrics allow={}", d.metrics->address(),
               allow);
  return 0;
}

void announce(Daemon &d) {
  if (d.node.service)
    spdlog::info("farm node listening on {} tls={} client_ca={} tokens={}",
                 d.options.listen, !d.options.tlsCert.empty(),
                 !d.options.clientCa.empty(), d.options.tokenFile);
  // Clients warn once about falling back while no daemon answers; from now
  // on a fallback is news again.
  unlink(d.paths.fallbackMark.c_str());
  spdlog::info("serving socket={} jobs={} idle_timeout_s={} zygote_pid={} "
               "version={} cache={} cache_dir={} max_size={} base_dir={}",
               d.paths.socketPath, d.config.jobs, d.config.idleTimeoutSeconds,
               d.zygote->pid(), LINKD_VERSION, d.parts.store ? "on" : "off",
               d.settings.cacheDir, d.settings.maxSize, d.settings.baseDir);
}

// Until `linkd stop`, SIGTERM/SIGINT, or idleness; keeps the cache's books
// on the way (last-use times, eviction, counters), off the link path.
void waitForShutdown(Daemon &d) {
  std::thread signalWaiter([&d] {
    int sig = 0;
    sigwait(&d.stopSignals, &sig);
    if (sig != 0) {
      spdlog::info("signal {} received", sig);
      d.shutdown.request();
    }
  });
  signalWaiter.detach();
  bool trimmed = false;
  while (!d.shutdown.waitFor(std::chrono::seconds(1))) {
    d.parts.maintain();
    d.node.maintain();
    d.kernels->maintain();
    // Once per idle spell: the heap pages links left free go back to the
    // system (an idle daemon should cost its working set, not its peak).
    uint64_t idle = d.service->idleSeconds();
    if (idle == 0 || d.node.busySinceLastCheck())
      trimmed = false;
    else if (!trimmed) {
      malloc_trim(0);
      trimmed = true;
    }
    if (d.config.idleTimeoutSeconds > 0 &&
        std::min(d.service->idleSeconds(), d.kernels->idleSeconds()) >=
            d.config.idleTimeoutSeconds) {
      spdlog::info("idle for {} s, exiting", d.config.idleTimeoutSeconds);
      break;
    }
  }
}

// A node's drain: health turns NOT_SERVING (load balancers and gRPC
// clients that watch it stop sending), and offloads that still come are
// refused with UNAVAILABLE (their clients link elsewhere); the links it has
// go on.
void startDraining(Daemon &d) {
  if (!d.node.service)
    return;
  d.node.service->startDraining();
  if (grpc::HealthCheckServiceInterface *health =
          d.server->GetHealthCheckService())
    health->SetServingStatus(false);
  spdlog::info("farm node draining: {} links running, up to {} s",
               d.node.service->activeLinks(), d.settings.drainTimeoutSeconds);
}

// Stop listening first, so clients arriving now start a new daemon or link
// locally (a node: drain), then let running links finish. An activated
// socket stays with systemd, which starts us again on the next connection.
void stopServing(Daemon &d) {
  startDraining(d);
  if (d.activated < 0)
    unlink(d.paths.socketPath.c_str());
  ::shutdown(d.listener, SHUT_RDWR);
  if (d.acceptThread.joinable())
    d.acceptThread.join();
  d.kernels->stopAccepting(); // its idle connections go now, links run on
  // Running links get up to drain_timeout to finish; then the server goes
  // down at once (gRPC's own graceful shutdown lingers seconds even when
  // idle).
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(d.settings.drainTimeoutSeconds);
  while (std::chrono::steady_clock::now() < deadline &&
         (d.service->activeLinks() > 0 || d.connections.open() > 0 ||
          (d.node.service && d.node.service->activeLinks())))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (d.node.service)
    spdlog::info("farm node drained: {} links still running are cancelled",
                 d.node.service->activeLinks());
  // Links still running are cancelled, as gRPC's Shutdown cancels its calls:
  // their connections are hung up, and their threads, which use the service
  // and the zygote, are waited for before those go (a cancel takes a second
  // or so; `linkd stop` waits 40 s in all).
  if (!d.connections.hangUpAll(std::chrono::seconds(5)))
    spdlog::warn("{} connections did not end; stopping under them",
                 d.connections.open());
  d.kernels->stop();
  if (d.metrics)
    d.metrics->stop(); // it reads the service, which goes next
  d.server->Shutdown(std::chrono::system_clock::now());
  d.zygote->stop();
  if (d.parts.remote)
    d.parts.remote->drain(); // queued remote writes (bounded by timeouts)
  d.parts.maintain();
  spdlog::info("stopped");
  spdlog::shutdown();
  close(d.lockFd);
}

} // namespace

// The daemon's life, in order (serve.h says why the order matters). A store
// that cannot be opened means links run uncached, never that the daemon
// fails.
int serve(const ServeOptions &options) {
  Daemon d(options);
  if (int rc = claimSocket(d)) // socket dir, lifetime lock, signals
    return rc;
  if (int rc = startZygote(d)) // while this process is single-threaded
    return rc;
  configure(d); // logging and settings; threads may start from here on
  d.parts = openCache(d.settings, *d.zygote);
  if (int rc = openFarm(d)) // as its client, and as a node (--listen)
    return rc;
  startKernelSocket(d);
  if (int rc = startServer(d))
    return rc;
  if (int rc = startMetrics(d)) { // metrics_listen, --metrics-listen
    stopServing(d);
    return rc;
  }
  announce(d);
  waitForShutdown(d);
  stopServing(d);
  return 0;
}

} // namespace linkd
