// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/service/kernel_link.h"

#include "daemon/linkd/runner/child_runner.h"
#include "daemon/linkd/service/kernel_request.h"

#include "cache/access_log.h"
#include "child/sandbox_protocol.h"
#include "kernel/view_names.h"
#include "link/flavor.h"
#include "util/files.h"
#include "view/path_fact.h"
#include "view/sandbox_view.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kViewCwd = kKernelViewCwd;

// One kernel link's state, from the request to the result.
struct Session {
  Session(KernelLinkContext &ctx, int fd) : ctx(ctx), fd(fd) {}
  KernelLinkContext &ctx;
  int fd;
  uint64_t id = 0;
  kernel::LinkMsg req;
  std::vector<Digest> digests;  // per input
  std::optional<Digest> key;    // set when the cache may be used
  bool readDaemonFiles = false; // the link saw files that are not its inputs
  bool lostBlob = false;      // an input's blob went missing (evicted) mid-link
  bool timedOut = false;      // the caller's or the daemon's limit passed
  std::string uncacheableWhy; // the first reason the access log gave
  uint32_t uploaded = 0, present = 0;
  std::string records;
  unsigned lane = 0;        // KernelLanes
  int pid = -1;             // the process that ran the link
  uint32_t linksBefore = 0; // links that process ran before (a worker's)
  kernel::ResultMsg result;
  Clock::time_point begin = Clock::now();
};

std::string viewPath(std::string_view name) { return blobViewPath(name); }

// The caller's spelling of a path in the view.
std::string callerName(const std::string &path) {
  std::string prefix = std::string(kViewCwd) + "/";
  return path.starts_with(prefix) ? path.substr(prefix.size()) : path;
}

bool insideViewCwd(const std::string &path) {
  return path == kViewCwd || path.starts_with(std::string(kViewCwd) + "/");
}

bool reply(int fd, const std::string &msg) {
  return kernel::writeFrame(fd, {msg});
}

std::string validate(Session &s) {
  return checkKernelLink(s.req, s.ctx.config.maxRequestBytes, s.digests);
}

// Asks for the inputs the store lacks and stores what arrives, verified.
std::string receiveBlobs(Session &s) {
  std::map<Digest, uint32_t> missing; // digest -> the input carrying it
  for (uint32_t i = 0; i < s.digests.size(); ++i)
    if (!missing.count(s.digests[i]) && !s.ctx.blobs.has(s.digests[i]))
      missing.emplace(s.digests[i], i);
  s.present = static_cast<uint32_t>(s.digests.size() - missing.size());
  if (missing.empty())
    return {};
  std::vector<uint32_t> ask;
  for (const auto &[d, i] : missing)
    ask.push_back(i);
  if (!reply(s.fd, kernel::encodeNeed(ask)))
    return "the client went away";
  std::string payload;
  for (size_t n = 0; n < ask.size(); ++n) {
    if (!kernel::readFrame(s.fd, payload, 60000) ||
        static_cast<uint8_t>(payload[0]) != kernel::MsgBlob)
      return "the client did not send the inputs asked for";
    auto blob = kernel::decodeBlob(std::string_view(payload).substr(1));
    if (!blob || blob->first >= s.digests.size() ||
        blob->second.size() != s.req.inputs[blob->first].size)
      return "a malformed input upload";
    const Digest &d = s.digests[blob->first];
    Digest got = sha256(blob->second);
    if (got != d)
      return "input '" + s.req.inputs[blob->first].name +
             "' does not match its digest";
    if (std::string e = s.ctx.blobs.storeWhole(d, blob->second); !e.empty())
      return "cannot store input '" + s.req.inputs[blob->first].name +
             "': " + e;
    ++s.uploaded;
  }
  return {};
}

v1::PathFact dirFact(const std::string &path, uint64_t ino) {
  v1::PathFact f;
  f.set_path(path);
  f.set_kind(v1::PathFact::DIRECTORY);
  f.set_mode(S_IFDIR | 0755);
  f.set_dev(1);
  f.set_ino(ino);
  return f;
}

// The inputs at their names, and the directories that hold them.
void describeInputs(Session &s, SandboxView &view) {
  uint64_t ino = 1;
  std::set<std::string> dirs = {"/", std::string(kViewCwd)};
  for (size_t i = 0; i < s.req.inputs.size(); ++i) {
    std::string p = viewPath(s.req.inputs[i].name);
    v1::PathFact f;
    f.set_path(p);
    f.set_kind(v1::PathFact::FILE);
    f.set_digest(std::string(s.digests[i].raw()));
    f.set_size(s.req.inputs[i].size);
    f.set_mode(S_IFREG | 0644);
    f.set_dev(1);
    f.set_ino(ino++);
    f.set_likely_read(true);
    view.addFact(f);
    for (size_t slash = p.rfind('/'); slash != 0 && slash != std::string::npos;
         slash = p.rfind('/', slash - 1))
      dirs.insert(p.substr(0, slash));
  }
  for (const std::string &d : dirs)
    view.addFact(dirFact(d, ino++));
}

// A path the link asked about that is not among the inputs: absent inside
// the virtual working directory, else what the daemon's file system holds
// (a file is copied into the blob store, so the sandboxed child still reads
// only blobs).
v1::PathFact outsideFact(Session &s, const std::string &path) {
  v1::PathFact f;
  f.set_path(path);
  f.set_kind(v1::PathFact::ABSENT);
  f.set_error(ENOENT);
  if (insideViewCwd(path))
    return f;
  bool regular = statPathFact(path, f);
  if (f.kind() == v1::PathFact::DIRECTORY)
    return f;
  s.readDaemonFiles = true;
  if (!regular)
    return f;
  Result<std::string> data = readFile(path, s.ctx.config.maxRequestBytes);
  if (!data) {
    f.set_kind(v1::PathFact::UNREADABLE);
    f.set_error(EACCES);
    return f;
  }
  Digest d = sha256(*data);
  if (!s.ctx.blobs.has(d) && !s.ctx.blobs.storeWhole(d, *data).empty()) {
    f.set_kind(v1::PathFact::UNREADABLE);
    f.set_error(EIO);
    return f;
  }
  f.set_kind(v1::PathFact::FILE);
  f.set_digest(std::string(d.raw()));
  f.set_size(data->size());
  return f;
}

// A path inside the virtual working directory as the kernel of a local
// link would resolve it: "." and empty parts dropped, ".." taken back over a
// directory the view holds (every directory there is one the inputs' names
// made, never a link). Anything else stays as it is and so is absent, as
// for a local link: ".." over a directory that does not exist, or above the
// working directory. Outside the working directory only "." and empty parts
// are dropped (an input named absolutely is found however it is spelled;
// ".." there is the file system's, which may hold links): as linkd-lld's
// local view does (daemon/linkd-lld/local_view.h).
std::string resolvedInView(const SandboxView &view, const std::string &path) {
  if (!insideViewCwd(path))
    return kernel::viewLookupName(path);
  std::string out(kViewCwd);
  std::string_view rest = std::string_view(path).substr(kViewCwd.size());
  while (!rest.empty()) {
    std::string_view part = kernel::nextPathPart(rest);
    if (part.empty() || part == ".")
      continue;
    if (part == "..") {
      if (out.size() == kViewCwd.size() || !view.knowsDirectory(out))
        return path;
      out.resize(out.rfind('/'));
      continue;
    }
    out += '/';
    out += part;
  }
  return out;
}

// The answer to one question of the link child, learning outside paths as
// needed.
std::string answerQuestion(Session &s, SandboxView &view,
                           std::string_view msg) {
  std::optional<SandboxView::Question> q = SandboxView::parse(msg);
  if (q) {
    q->path = resolvedInView(view, q->path);
    if (q->op == sandbox::OpRename)
      q->path2 = resolvedInView(view, q->path2);
  }
  SandboxView::Answer a;
  for (int round = 0; q && round < 64; ++round) {
    a = view.answer(*q);
    if (a.ready || a.needPath.empty())
      break;
    view.addFact(outsideFact(s, a.needPath));
  }
  if (q && !a.ready && a.needBlob)
    s.lostBlob = true;
  if (!q || !a.ready) {
    a = SandboxView::Answer{};
    a.reply.kind = sandbox::KindError;
    a.reply.err = q ? EIO : EINVAL;
    a.real.clear();
  }
  std::string out(sizeof(a.reply) + a.real.size(), '\0');
  std::memcpy(out.data(), &a.reply, sizeof(a.reply));
  std::memcpy(out.data() + sizeof(a.reply), a.real.data(), a.real.size());
  return out;
}

uint64_t timeoutMs(const Session &s) {
  uint64_t limit = s.ctx.config.linkTimeoutSeconds * 1000;
  return s.req.timeoutMs && s.req.timeoutMs < limit ? s.req.timeoutMs : limit;
}

std::string laneDir(const Session &s) {
  return s.ctx.config.blobDir + "/links/lane" + std::to_string(s.lane);
}

std::string scratchDir(Session &s) {
  return laneDir(s) + "/" + std::to_string(getpid()) + "-k" +
         std::to_string(s.id);
}

// The request the link child is given: the caller's link in the view.
v1::LinkRequest childRequest(const Session &s) {
  v1::LinkRequest link;
  link.set_protocol_version(1);
  link.set_flavor(static_cast<v1::Flavor>(s.req.flavor));
  for (const std::string &a : s.req.argv)
    link.add_argv(a);
  link.set_cwd(std::string(kViewCwd));
  link.set_umask(022);
  for (const auto &[k, v] : s.req.env)
    (*link.mutable_env())[k] = v;
  // Confined to the blobs and to its lane's directory, which holds this
  // link's scratch directory and, one at a time, those of the next links of
  // the lane: a reusable worker (daemon/linkd-lld/link_worker.h), confined
  // once, serves the lane's next link, and reaches no other lane's.
  (*link.mutable_env())[sandbox::kReadDirKey] = s.ctx.blobs.root();
  (*link.mutable_env())[sandbox::kWriteDirKey] = laneDir(s);
  (*link.mutable_env())[sandbox::kRequireKey] = "0";
  return link;
}

// Runs the link in a sandboxed child over `view`, its output and records
// gathered into the session, until it is done or its time is up; "" or why
// it did not run.
std::string runChild(Session &s, SandboxView &view) {
  ChildRunner runner(s.ctx.zygote,
                     {.records = true, .sandbox = true, .reusable = true},
                     "kernel link id=" + std::to_string(s.id));
  auto deadline = s.begin + std::chrono::milliseconds(timeoutMs(s));
  ChildHooks hooks;
  hooks.output = [&s](bool isStderr, std::string_view data) {
    (isStderr ? s.result.err : s.result.out).append(data);
    return true;
  };
  hooks.records = [&s](std::string_view data) { s.records.append(data); };
  hooks.question = [&](std::string_view q) {
    runner.answer(answerQuestion(s, view, q));
    return true;
  };
  hooks.tick = [&] {
    s.timedOut = Clock::now() > deadline;
    return !s.timedOut;
  };
  ChildRun run = runner.run(childRequest(s), hooks);
  if (!run.error.empty())
    return run.error;
  s.pid = run.pid;
  if (s.timedOut)
    return "the link did not finish within " + std::to_string(timeoutMs(s)) +
           " ms";
  if (run.stopped)
    return run.stopReason;
  if (run.report) {
    s.result.exitCode = run.report->status;
    s.linksBefore = run.report->linksBefore;
    return {};
  }
  if (!run.exit.ran)
    return "the link could not run: " + run.exit.error;
  if (WIFSIGNALED(run.exit.waitStatus)) {
    s.result.termSignal = WTERMSIG(run.exit.waitStatus);
    s.result.exitCode = 128 + s.result.termSignal;
  } else {
    s.result.exitCode = WEXITSTATUS(run.exit.waitStatus);
  }
  return {};
}

void collectOutputs(Session &s, SandboxView &view) {
  for (const SandboxView::Output &o : view.outputs()) {
    int in = ::open(o.real.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st{};
    if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
      if (in >= 0)
        close(in);
      continue;
    }
    kernel::WireOutput w;
    w.name = callerName(o.path);
    w.mode = st.st_mode & 0777;
    w.data.resize(static_cast<size_t>(st.st_size));
    ssize_t got = pread(in, w.data.data(), w.data.size(), 0);
    close(in);
    if (got == static_cast<ssize_t>(w.data.size()))
      s.result.outputs.push_back(std::move(w));
  }
  std::sort(s.result.outputs.begin(), s.result.outputs.end(),
            [](const auto &a, const auto &b) { return a.name < b.name; });
}

void count(Session &s, const char *name, uint64_t n = 1) {
  if (s.ctx.stats && n)
    s.ctx.stats->addCounter(name, n);
}

// The link itself, over a fresh view; "" or why it did not run.
std::string link(Session &s) {
  if (mkdir(laneDir(s).c_str(), 0700) != 0 && errno != EEXIST)
    return "cannot create " + laneDir(s) + ": " + std::strerror(errno);
  BlobStore &store = s.ctx.blobs;
  SandboxView view(
      BlobFiles{[&store](const Digest &d) { return store.has(d); },
                [&store](const Digest &d) { return store.pathOf(d); }},
      scratchDir(s));
  if (std::string e = view.open(); !e.empty())
    return e;
  describeInputs(s, view);
  std::string e = runChild(s, view);
  if (e.empty())
    collectOutputs(s, view);
  removeTree(view.scratchDir());
  if (!e.empty())
    return e;
  AccessLog log = parseAccessLog(s.records);
  if (!log.uncacheable.empty()) {
    s.readDaemonFiles = true;
    s.uncacheableWhy = log.uncacheable.front();
  }
  if (s.lostBlob) // the link saw EIO where its input was: not LLD's answer
    return "an input's blob went missing during the link";
  return {};
}

struct ActiveLink {
  KernelLinkContext &ctx;
  explicit ActiveLink(KernelLinkContext &c) : ctx(c) {
    uint64_t now = ++ctx.active;
    uint64_t peak = ctx.peakActive.load();
    while (now > peak && !ctx.peakActive.compare_exchange_weak(peak, now)) {
    }
  }
  ~ActiveLink() { --ctx.active; }
};

} // namespace

namespace {

// A refusal the library answers by linking in a child process; false if the
// connection should close.
bool refuse(Session &s, const std::string &why, bool keepConnection = true,
            kernel::ErrorKind kind = kernel::ErrorKind::CannotRun) {
  count(s, "kernel_errors");
  spdlog::warn("kernel link id={}: {}", s.id, why);
  return reply(s.fd, kernel::encodeError(why, kind)) && keepConnection;
}

// Why this result will not be stored, for the caller ("" if it will be).
std::string uncacheableReason(const Session &s) {
  if (!s.key)
    return s.req.flags & kernel::FlagNoCache ? "the caller asked for no cache"
                                             : "the daemon's cache is off";
  if (s.readDaemonFiles)
    return "the link read files that are not its inputs (" + s.uncacheableWhy +
           ")";
  if (s.result.termSignal)
    return "the linker died of signal " + std::to_string(s.result.termSignal);
  return {};
}

// A stored result for the request's content, sent; false if none.
bool answerFromCache(Session &s) {
  if (s.ctx.cache.enabled() && !(s.req.flags & kernel::FlagNoCache))
    s.key = kernelKey(s.req, s.ctx.zygote.lldVersion());
  std::optional<kernel::ResultMsg> hit;
  if (s.key)
    hit = s.ctx.cache.lookup(*s.key);
  if (!hit) {
    count(s, s.key ? "kernel_misses" : "kernel_cache_disabled");
    if (s.key)
      ++s.ctx.misses;
    return false;
  }
  hit->cacheHit = true;
  hit->blobsUploaded = 0;
  count(s, "kernel_hits");
  ++s.ctx.hits;
  spdlog::info("kernel link id={} hit inputs={}", s.id, s.req.inputs.size());
  reply(s.fd, kernel::encodeResult(*hit));
  return true;
}

// The link in one of the daemon's job slots; "" or why it did not run.
std::string linkInSlot(Session &s) {
  JobSlots::Hold slot(s.ctx.slots);
  if (!slot.acquire([] { return false; }))
    return "no job slot";
  s.lane = s.ctx.lanes.take();
  std::string e = link(s);
  s.ctx.lanes.give(s.lane);
  return e;
}

// Counted and logged before answering, as ordinary links are: the log and
// the counters hold a link once its caller has the answer.
void logOutcome(Session &s) {
  if (s.key && s.readDaemonFiles)
    count(s, "kernel_uncacheable");
  spdlog::info("kernel link id={} rc={} outputs={} uploaded={} present={} "
               "daemon_files={} pid={} reused={} wall_ms={:.1f}",
               s.id, s.result.exitCode, s.result.outputs.size(), s.uploaded,
               s.present, s.readDaemonFiles, s.pid, s.linksBefore,
               std::chrono::duration<double, std::milli>(Clock::now() - s.begin)
                   .count());
}

} // namespace

bool serveKernelLink(KernelLinkContext &ctx, int fd, std::string_view payload) {
  Session s(ctx, fd);
  s.id = ++ctx.nextId;
  auto req = kernel::decodeLink(payload);
  if (!req)
    return refuse(s, "a malformed link request", false);
  s.req = std::move(*req);
  count(s, "kernel_links");
  if (std::string e = validate(s); !e.empty())
    return refuse(s, e, true, kernel::ErrorKind::Refused);
  // 1. The cache, by the request's content: only digests have travelled.
  if (answerFromCache(s))
    return true;
  // 2. The inputs the daemon lacks; active from here (no trim under it).
  ActiveLink active(ctx);
  if (ctx.stats)
    ctx.stats->raiseCounter("kernel_peak_concurrent", ctx.peakActive.load());
  if (std::string e = receiveBlobs(s); !e.empty())
    return refuse(s, e, false);
  count(s, "kernel_blobs_uploaded", s.uploaded);
  count(s, "kernel_blobs_present", s.present);
  // 3. The link over the view, 4. the answer, 5. the store.
  if (std::string e = linkInSlot(s); !e.empty())
    return refuse(s, e, true,
                  s.timedOut ? kernel::ErrorKind::Timeout
                             : kernel::ErrorKind::CannotRun);
  s.result.blobsUploaded = s.uploaded;
  s.result.uncacheable = uncacheableReason(s);
  bool store = s.key && !s.readDaemonFiles && !s.result.termSignal;
  if (store)
    ctx.cache.announce(*s.key, s.result);
  logOutcome(s);
  bool ok = reply(fd, kernel::encodeResult(s.result));
  if (store) // after answering
    ctx.cache.put(*s.key, s.result);
  return ok;
}

} // namespace linkd
