#include "daemon/linkd-lld/zygote.h"

#include "daemon/linkd-lld/archiver_main.h"
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

struct ZygoteState {
  int controlFd;
  std::map<pid_t, uint64_t> children; // pid -> link id
  int journalFd = -1;                 // openTempJournal
};

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
  pid_t zygotePid = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(z.controlFd);
    // Dies with the zygote (becomeLinker); one that died between the fork
    // and that request took its daemon's link along: nothing to do.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != zygotePid)
      _exit(1);
    becomeLinker(req, frame.fds[0], frame.fds[1],
                 plain >= 3 ? frame.fds[2] : -1, plain == 4 ? frame.fds[3] : -1,
                 ordered ? frame.fds.back() : -1, z.journalFd);
  }
  int savedErrno = errno;
  frame.closeFds();
  if (pid < 0) {
    sendFrame(z.controlFd, FrameKind::Failed, frame.id,
              std::string("fork failed: ") + std::strerror(savedErrno), {});
    return;
  }
  z.children[pid] = frame.id;
  sendFrame(z.controlFd, FrameKind::Started, frame.id, encodeStarted(pid), {});
}

void reapChildren(ZygoteState &z) {
  for (;;) {
    int status = 0;
    struct rusage ru{};
    pid_t pid = wait4(-1, &status, WNOHANG, &ru);
    if (pid <= 0)
      return;
    auto it = z.children.find(pid);
    if (it == z.children.end())
      continue;
    ExitRecord rec;
    rec.pid = pid;
    rec.waitStatus = status;
    rec.userMicros = ru.ru_utime.tv_sec * 1000000ull + ru.ru_utime.tv_usec;
    rec.sysMicros = ru.ru_stime.tv_sec * 1000000ull + ru.ru_stime.tv_usec;
    rec.maxRssKib = static_cast<uint64_t>(ru.ru_maxrss);
    sendFrame(z.controlFd, FrameKind::Exited, it->second, encodeExit(rec), {});
    z.children.erase(it);
  }
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
  ZygoteState z{controlFd, {}, -1};
  if (!sendFrame(controlFd, FrameKind::Hello, 0, lldVersionString(), {}))
    return 1;
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
