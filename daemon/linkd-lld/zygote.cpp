#include "daemon/linkd-lld/zygote.h"

#include "daemon/linkd-lld/archiver_main.h"
#include "daemon/linkd-lld/child_report.h"
#include "child/frame.h"
#include "daemon/linkd-lld/link_rewrite.h"
#include "daemon/linkd-lld/rewrite_command.h"
#include "daemon/linkd-lld/access_recorder.h"
#include "link/flavor.h"
#include "daemon/linkd-lld/lld_entry.h"
#include "daemon/linkd-lld/sandbox_child.h"
#include "daemon/linkd-lld/state_record_child.h"
#include "child/ordered_output.h"
#include "child/sandbox_protocol.h"
#include "config/runtime_paths.h"
#include "store/temp_journal.h"
#include "daemon/linkd-lld/ordered_output.h"
#include "daemon/linkd-lld/stock_process.h"
#include "linkd/v1/linkd.pb.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace linkd {
namespace {

// The child's stdin: the client's, if it sent it (an MRI script), in an
// anonymous file (a pipe could not hold more than its buffer before the tool
// reads); else /dev/null.
void setUpStdin(const v1::LinkRequest &req) {
  int fd = -1;
  if (req.has_stdin_data()) {
    fd = memfd_create("linkd-stdin", MFD_CLOEXEC);
    const std::string &data = req.stdin_data();
    for (size_t off = 0; fd >= 0 && off < data.size();) {
      ssize_t n = write(fd, data.data() + off, data.size() - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        close(fd);
        fd = -1;
        break;
      }
      off += static_cast<size_t>(n);
    }
    if (fd >= 0)
      lseek(fd, 0, SEEK_SET);
  }
  if (fd < 0)
    fd = open("/dev/null", O_RDONLY);
  dup2(fd, STDIN_FILENO);
}

constexpr int kRecordFdNumber = 3;
constexpr int kJournalFdNumber = 6; // above ordered::kChildFd

// The channels a link child was given move to their fixed numbers (records
// 3, sandbox 4, ordered output 5, temporaries journal 6; those absent stay
// closed), and every other inherited fd is closed. Each moves above those
// numbers first, so that no dup2 overwrites one still to be moved.
void placeChildFds(int recordFd, int sandboxFd, int orderedFd, int journalFd) {
  static_assert(kJournalFdNumber > ordered::kChildFd &&
                ordered::kChildFd > sandbox::kSandboxFd &&
                sandbox::kSandboxFd > kRecordFdNumber);
  int high[4] = {recordFd, sandboxFd, orderedFd, journalFd};
  for (int &fd : high)
    if (fd >= 0 && fd <= kJournalFdNumber)
      fd = fcntl(fd, F_DUPFD, kJournalFdNumber + 1);
  if (high[0] >= 0)
    dup2(high[0], kRecordFdNumber);
  if (high[1] >= 0)
    dup2(high[1], sandbox::kSandboxFd);
  if (high[2] >= 0)
    dup2(high[2], ordered::kChildFd);
  if (high[3] >= 0)
    dup2(high[3], kJournalFdNumber);
  close_range(journalFd >= 0   ? kJournalFdNumber + 1
              : orderedFd >= 0 ? ordered::kChildFd + 1
              : sandboxFd >= 0 ? sandbox::kSandboxFd + 1
              : recordFd >= 0  ? kRecordFdNumber + 1
                               : kRecordFdNumber,
              ~0U, 0);
}

// The daemon's temporaries journal (store/temp_journal.h), opened by the
// zygote for its children: -1 until the state directory exists (the daemon
// makes it after the zygote starts), so each spawn tries again until then.
void openTempJournal(int &fd) {
  if (fd < 0)
    fd = open(tempJournalPath(resolveRuntimePaths().stateDir).c_str(),
              O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

// The link sees the client's environment, never the daemon's: it starts
// empty and gets the variables the tool reads (lib/link/flavor.h) that the
// client had set.
void useClientEnvironment(const v1::LinkRequest &req, Flavor flavor) {
  clearenv();
  for (auto names : {flavorEnvironment(flavor), processEnvironment()})
    for (std::string_view name : names) {
      std::string n(name);
      if (auto it = req.env().find(n); it != req.env().end())
        setenv(n.c_str(), it->second.c_str(), 1);
    }
}

// The rewriter and the archivers, after the same set-up as a link.
[[noreturn]] void becomeOtherTool(const v1::LinkRequest &req, Flavor flavor) {
  child_report::noteTool();
  std::vector<std::string> args(req.argv().begin(), req.argv().end());
  if (flavor == Flavor::Rewrite) {
    StockProcess process(args);
    std::vector<char *> argv;
    for (std::string &a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    int rc = cmdRewrite(static_cast<int>(args.size()), argv.data());
    std::fflush(nullptr);
    _exit(rc);
  }
  args[0] = lldProgramName(args[0], flavor);
  StockProcess process(args);
  archive::ArchiverInvocation inv;
  inv.flavor = flavor;
  inv.argv.assign(req.argv().begin(), req.argv().end());
  inv.stderrIsColorTty = req.stderr_is_color_tty();
  inv.stdinAvailable = req.has_stdin_data();
  archive::runArchiverAndExit(inv);
}

// The tool's heap, set in each child (the zygote keeps glibc's defaults, so
// that a large request it parsed is given back): allocations up to 32 MiB
// (the most glibc's adaptive threshold would reach) come from the heap
// rather than from mmap, so that a growing hash table (LLD's symbol map)
// reuses what its previous size freed instead of faulting in fresh pages,
// and freed memory stays for the rest of the link. A hello-world link:
// ~150 page faults fewer (1820 -> 1670), ~0.5 ms of CPU.
void tuneMalloc() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 1 << 20);
}

// Body of a link child, after fork. Never returns.
// `recordFd` >= 0: report file accesses there (the cache wants them).
// `sandboxFd` >= 0 (farm nodes, with a record fd): the link sees the client's
// file system through the node's daemon (daemon/linkd-lld/sandbox_child.h).
// `orderedFd` >= 0: stdout and stderr writes go there as ordered records
// (daemon/linkd-lld/ordered_output.h).
// `journalFd` >= 0: the daemon's temporaries journal (access_recorder.h).
[[noreturn]] void becomeLinker(const v1::LinkRequest &req, int outFd, int errFd,
                               int recordFd, int sandboxFd, int orderedFd,
                               int journalFd) {
  // SIGTERM, not SIGKILL: LLVM's handler (stock_process.h) removes the
  // temporary output the link is writing, then the child dies of it. A
  // daemon killed mid-link leaves nothing behind that it could not journal.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  tuneMalloc();
  // A daemon setting, from the zygote's environment, before the client's
  // replaces it.
  bool stateRecord = stateRecordWanted();
  setUpStdin(req);
  dup2(outFd, STDOUT_FILENO);
  dup2(errFd, STDERR_FILENO);
  placeChildFds(recordFd, sandboxFd, orderedFd,
                sandboxFd >= 0 ? -1 : journalFd);
  if (orderedFd >= 0)
    startOrderedOutput(ordered::kChildFd);

  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  umask(static_cast<mode_t>(req.umask() & 0777));

  auto flavor = static_cast<Flavor>(req.flavor());
  useClientEnvironment(req, flavor);
  // In the sandbox the client's cwd exists only as a name (every relative
  // path is resolved against it by the sandbox); the real one is "/".
  const std::string &dir = sandboxFd >= 0 ? std::string("/") : req.cwd();
  if (chdir(dir.c_str()) != 0) {
    std::string msg = "linkd: error: cannot change to directory " + req.cwd() +
                      ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(1);
  }
  // A plan is applied before the sandbox starts, with the node's own file
  // system in view: a sandboxed link never carries one. The farm node
  // refuses such requests already (offload_request.h); this holds if a
  // later path forgets to.
  if (sandboxFd >= 0 && req.has_rewrite_plan()) {
    const char msg[] = "linkd: error: a sandboxed link carries a rewrite "
                       "plan; refused\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(125);
  }
  if (req.has_rewrite_plan()) {
    if (std::string err = applyRewritePlan(req.rewrite_plan()); !err.empty()) {
      std::string msg = "linkd: error: link-time rewriting: " + err + "\n";
      (void)!write(STDERR_FILENO, msg.data(), msg.size());
      _exit(1);
    }
  }
  if (journalFd >= 0 && sandboxFd < 0)
    startTempJournal(kJournalFdNumber, req.cwd());
  if (recordFd >= 0)
    startAccessRecording(kRecordFdNumber, req.cwd());
  if (sandboxFd >= 0) {
    sandbox::startSandbox(sandbox::kSandboxFd, req.cwd());
    // The farm names the only directories the link may touch; a node that
    // cannot confine the link refuses to run it.
    auto dir = [&](const char *key) {
      auto it = req.env().find(key);
      return it == req.env().end() ? std::string() : it->second;
    };
    std::string err = sandbox::confineSandbox(dir(sandbox::kReadDirKey),
                                              dir(sandbox::kWriteDirKey));
    if (!err.empty() && dir(sandbox::kRequireKey) == "1") {
      std::string msg = "linkd: error: cannot confine the link: " + err + "\n";
      (void)!write(STDERR_FILENO, msg.data(), msg.size());
      _exit(125);
    }
  }
  if (flavor == Flavor::Rewrite || isArchiver(flavor))
    becomeOtherTool(req, flavor);
  LldInvocation inv;
  inv.flavor = flavor;
  inv.argv.assign(req.argv().begin(), req.argv().end());
  inv.stderrIsColorTty = req.stderr_is_color_tty();
  if (recordFd >= 0 && sandboxFd < 0)
    armStateRecord(inv, stateRecord);
  runLldAndExit(inv);
}

// A pre-forked link child (a spare): forked ahead of a request, it waits on
// its own socket for the Spawn frame the zygote forwards, then does all of a
// link child's per-request set-up (becomeLinker). It has never run a tool
// and carries nothing from a previous link; before the request all it does
// is what every link does first and no request changes (prepareForLink,
// lld_entry.h). What it saves a link: the fork (~0.6 ms of wall time on the
// request's path) and ~220 copy-on-write faults.
struct Spare {
  pid_t pid = -1;
  int fd = -1; // the zygote's end of the spare's socket
};

struct ZygoteState {
  int controlFd;
  int sigFd;
  pid_t pid;
  std::map<pid_t, uint64_t> children; // pid -> link id
  std::vector<Spare> spares;
  int journalFd = -1;                 // openTempJournal
};

// Spares kept waiting. A taken spare is replaced when a child has been
// reaped (reapChildren), not while the link it took runs.
constexpr size_t kSpares = 1;
// A request larger than this is not forwarded to a spare (the zygote would
// wait for the spare to read it); it gets a child of its own.
constexpr size_t kSpareMaxPayload = 64 << 10;
// Body of a spare after fork: waits for its request, then becomes the
// linker. Never returns.
[[noreturn]] void serveAsSpare(int fd, pid_t zygotePid, int journalFd) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != zygotePid)
    _exit(1);
  prctl(PR_SET_NAME, "linkd-spare");
  prepareForLink();
  Frame frame;
  if (recvFrame(fd, frame) != FrameStatus::Ok)
    _exit(0); // the zygote closed it: no longer wanted
  child_report::noteRequest(/*prestarted=*/true);
  close(fd);
  prctl(PR_SET_NAME, "linkd-lld");
  v1::LinkRequest req;
  bool ordered = frame.kind == FrameKind::SpawnOrdered;
  size_t plain = frame.fds.size() - (ordered ? 1 : 0);
  // The zygote checked the frame before forwarding it; this holds if the
  // descriptors did not all arrive.
  if (frame.fds.size() < (ordered ? 3u : 2u) || plain > 4 ||
      !req.ParseFromString(frame.payload))
    _exit(125);
  becomeLinker(req, frame.fds[0], frame.fds[1], plain >= 3 ? frame.fds[2] : -1,
               plain == 4 ? frame.fds[3] : -1, ordered ? frame.fds.back() : -1,
               journalFd);
}

void forkSpare(ZygoteState &z) {
  openTempJournal(z.journalFd); // the spare's link announces its temporaries
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return;
  pid_t pid = fork();
  if (pid == 0) {
    close(z.controlFd);
    close(z.sigFd);
    for (const Spare &other : z.spares)
      close(other.fd);
    close(sv[0]);
    serveAsSpare(sv[1], z.pid, z.journalFd);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return;
  }
  z.spares.push_back({pid, sv[0]});
}

void replenishSpares(ZygoteState &z) {
  while (z.spares.size() < kSpares) {
    size_t before = z.spares.size();
    forkSpare(z);
    if (z.spares.size() == before)
      return; // fork failed; the next link forks its own child
  }
}

// Hands the request to a waiting spare. Its pid, or -1 if none took it (a
// spare that died meanwhile cannot receive: the next one is tried).
// True if the request's argv may set LLD's thread count: --threads=N,
// -threads=N, --threads N (ELF, Mach-O, Wasm), /threads:N or -threads:N
// (COFF), or a response file that could hold any of them. Such a link does
// not go to a spare, whose thread pool already has the default size
// (prepareForLink, lld_entry.h).
bool setsThreadCount(const v1::LinkRequest &req) {
  for (const std::string &a : req.argv()) {
    std::string_view v = a;
    if (v.starts_with("--threads") || v.starts_with("-threads") ||
        v.starts_with("/threads") || v.starts_with("@"))
      return true;
  }
  return false;
}

pid_t handToSpare(ZygoteState &z, const Frame &frame) {
  if (frame.payload.size() > kSpareMaxPayload)
    return -1;
  while (!z.spares.empty()) {
    Spare spare = z.spares.front();
    z.spares.erase(z.spares.begin());
    bool sent =
        sendFrame(spare.fd, frame.kind, frame.id, frame.payload, frame.fds);
    close(spare.fd);
    if (sent)
      return spare.pid;
  }
  return -1;
}

// A child of its own for the request, forked now.
pid_t forkChild(ZygoteState &z, const v1::LinkRequest &req, Frame &frame) {
  bool ordered = frame.kind == FrameKind::SpawnOrdered;
  size_t plain = frame.fds.size() - (ordered ? 1 : 0);
  pid_t pid = fork();
  if (pid == 0) {
    child_report::noteRequest(/*prestarted=*/false);
    close(z.controlFd);
    close(z.sigFd);
    for (const Spare &spare : z.spares)
      close(spare.fd);
    // Dies with the zygote (becomeLinker); one that died between the fork
    // and that request took its daemon's link along: nothing to do.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != z.pid)
      _exit(1);
    becomeLinker(req, frame.fds[0], frame.fds[1],
                 plain >= 3 ? frame.fds[2] : -1, plain == 4 ? frame.fds[3] : -1,
                 ordered ? frame.fds.back() : -1, z.journalFd);
  }
  return pid;
}

void handleSpawn(ZygoteState &z, Frame &frame) {
  v1::LinkRequest req;
  bool ordered = frame.kind == FrameKind::SpawnOrdered;
  size_t plain = frame.fds.size() - (ordered ? 1 : 0);
  if (frame.fds.size() < (ordered ? 3u : 2u) || plain > 4 ||
      !req.ParseFromString(frame.payload)) {
    sendFrame(z.controlFd, FrameKind::Failed, frame.id,
              "malformed spawn request", {});
    return;
  }
  openTempJournal(z.journalFd);
  pid_t pid = setsThreadCount(req) ? -1 : handToSpare(z, frame);
  if (pid < 0)
    pid = forkChild(z, req, frame);
  int savedErrno = errno;
  frame.closeFds();
  if (pid < 0) {
    sendFrame(z.controlFd, FrameKind::Failed, frame.id,
              std::string("fork failed: ") + std::strerror(savedErrno), {});
    return;
  }
  z.children[pid] = frame.id;
  sendFrame(z.controlFd, FrameKind::Started, frame.id, encodeStarted(pid), {});
  // The next spare is forked when a child has been reaped, not now: a fork
  // while this link runs would take CPU from it (measured on 2 cores: the
  // trivial link's LLD phase 2.3 -> 4.4 ms).
}

void forgetSpare(ZygoteState &z, pid_t pid) {
  for (auto it = z.spares.begin(); it != z.spares.end(); ++it)
    if (it->pid == pid) {
      close(it->fd);
      z.spares.erase(it);
      return;
    }
}

void reapChildren(ZygoteState &z) {
  for (;;) {
    int status = 0;
    struct rusage ru{};
    pid_t pid = wait4(-1, &status, WNOHANG, &ru);
    if (pid <= 0)
      break;
    auto it = z.children.find(pid);
    if (it == z.children.end()) {
      forgetSpare(z, pid); // killed while it waited
      continue;
    }
    ExitRecord rec;
    rec.pid = pid;
    rec.waitStatus = status;
    rec.userMicros = ru.ru_utime.tv_sec * 1000000ull + ru.ru_utime.tv_usec;
    rec.sysMicros = ru.ru_stime.tv_sec * 1000000ull + ru.ru_stime.tv_usec;
    rec.maxRssKib = static_cast<uint64_t>(ru.ru_maxrss);
    sendFrame(z.controlFd, FrameKind::Exited, it->second, encodeExit(rec), {});
    z.children.erase(it);
  }
  replenishSpares(z);
}

// Drops the zygote's page-table entries for executable file mappings
// (libLLVM's code, mostly). They are clean copies of page-cache pages, so
// nothing is lost; children fault them in anyway, because fork does not copy
// page tables of file mappings that were never written. Only r-x mappings:
// read-only data may be RELRO, written during relocation, and discarding it
// would revert it to the file's bytes. This keeps the zygote's idle RSS small.
void dropCodePages() {
  FILE *maps = std::fopen("/proc/self/maps", "r");
  if (!maps)
    return;
  char line[4096];
  while (std::fgets(line, sizeof(line), maps)) {
    unsigned long start = 0, end = 0;
    char perms[8] = {};
    int pathStart = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms,
                    &pathStart) < 3)
      continue;
    const char *path = line + pathStart;
    if (std::strcmp(perms, "r-xp") != 0 || path[0] != '/')
      continue;
    madvise(reinterpret_cast<void *>(start), end - start, MADV_DONTNEED);
  }
  std::fclose(maps);
}

} // namespace

int runZygote(int controlFd) {
  // Die with the daemon; never leave an orphaned zygote behind.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1)
    return 1;
  // Exactly SIGCHLD blocked (for the signalfd); the daemon execs us with its
  // stop signals blocked, which are not ours to ignore.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_SETMASK, &chld, nullptr);
  int sigFd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigFd < 0)
    return 1;
  signal(SIGPIPE, SIG_IGN);

  prepareAccessRecording();
  dropCodePages();
  ZygoteState z{controlFd, sigFd, getpid(), {}, {}, -1};
  if (!sendFrame(controlFd, FrameKind::Hello, 0, lldVersionString(), {}))
    return 1;
  replenishSpares(z);
  for (;;) {
    pollfd fds[2] = {{controlFd, POLLIN, 0}, {sigFd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return 1;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(sigFd, &info, sizeof(info)) == sizeof(info)) {
      }
      reapChildren(z);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      Frame frame;
      FrameStatus st = recvFrame(controlFd, frame);
      if (st == FrameStatus::Eof || st == FrameStatus::Error)
        return 0; // daemon went away; children die with us
      if (frame.kind == FrameKind::Spawn ||
          frame.kind == FrameKind::SpawnOrdered)
        handleSpawn(z, frame);
      else
        frame.closeFds();
    }
  }
}

} // namespace linkd
