// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/zygote.h"

#include "child/frame.h"
#include "child/ordered_output.h"
#include "child/sandbox_protocol.h"
#include "config/runtime_paths.h"
#include "daemon/linkd-lld/access_recorder.h"
#include "daemon/linkd-lld/code_pages.h"
#include "daemon/linkd-lld/link_child.h"
#include "daemon/linkd-lld/link_worker.h"
#include "daemon/linkd-lld/lld_entry.h"
#include "daemon/linkd-lld/ordered_writer.h"
#include "daemon/linkd-lld/report_sender.h"
#include "daemon/linkd-lld/sandbox_child.h"
#include "daemon/linkd-lld/state_record_child.h"
#include "daemon/linkd-lld/stock_process.h"
#include "link/flavor.h"
#include "linkd/v1/linkd.pb.h"
#include "store/temp_journal.h"

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

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace linkd {
namespace {

// The daemon's temporaries journal (store/temp_journal.h), opened by the
// zygote for its children: -1 until the state directory exists (the daemon
// makes it after the zygote starts), so each spawn tries again until then.
void openTempJournal(int &fd) {
  if (fd < 0)
    fd = open(tempJournalPath(resolveRuntimePaths().stateDir).c_str(),
              O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

// A pre-forked link child (a spare): forked ahead of a request, it waits on
// its own socket for the Spawn frame the zygote forwards, then does all of a
// link child's per-request set-up (link_child.h). A fresh spare has never
// run a tool and carries nothing from a previous link; before the request
// all it does is what every link does first and no request changes
// (prepareForLink, lld_entry.h). What it saves a link: the fork (~0.6 ms of
// wall time on the request's path) and ~220 copy-on-write faults. A spare
// that served a link and stayed (`used`) is a reusable worker
// (link_worker.h): only requests that mayRunInWorker go to it.
struct Spare {
  pid_t pid = -1;
  int fd = -1; // the zygote's end of the spare's socket
  bool used = false;
  // Its Landlock confinement (if any), applied when it was forked: it
  // takes only links confined alike (link_worker.h).
  SandboxConfinement confinement;
};

// A worker running a reusable link: it is back in the pool once it said it
// is idle and the daemon released the link (the daemon may still signal the
// link's pid until then, and that must not reach the worker's next link).
struct Busy {
  int fd = -1;
  uint64_t linkId = 0;
  bool idle = false;
  bool released = false;
  SandboxConfinement confinement;
};

struct ZygoteState {
  int controlFd;
  int sigFd;
  pid_t pid;
  std::map<pid_t, uint64_t> children; // pid -> link id
  std::vector<Spare> spares;
  std::map<pid_t, Busy> workers;      // pid -> the reusable link it runs
  int journalFd = -1;                 // openTempJournal
  // The confinements reusable sandboxed links asked for (the daemon's kernel
  // lanes), most recent first: each keeps a fresh spare confined as it asks.
  std::vector<SandboxConfinement> confinements;
};

// At most this many confinements keep a spare (a daemon has a lane per job
// slot).
constexpr size_t kMaxConfinedKinds = 16;

// Fresh spares kept waiting. A taken one is replaced after a link, never
// while one runs: when a child has been reaped (reapChildren) or a worker
// came back (takeBackWorker).
constexpr size_t kSpares = 1;
// Used workers kept waiting at most (one per link that may run at once on
// this machine, up to 16); a worker beyond that is let go.
size_t maxIdleWorkers() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<size_t>(std::clamp(n, 1L, 16L));
}
// A request larger than this is not forwarded to a spare (the zygote would
// wait for the spare to read it); it gets a child of its own.
constexpr size_t kSpareMaxPayload = 64 << 10;

void closeSpareFds(const ZygoteState &z) {
  close(z.controlFd);
  close(z.sigFd);
  for (const Spare &other : z.spares)
    close(other.fd);
  for (const auto &[pid, busy] : z.workers)
    close(busy.fd);
}

// A spare for sandboxed links (`confinement`, sandboxConfinement) is confined
// before anything else: Landlock holds for the thread that asks and the
// threads it starts afterwards, and a spare starts LLD's thread pool before
// its first request (prepareForLink, lld_entry.h). A spare confined by its
// first link would run that pool, and every later link's, unconfined.
void forkSpare(ZygoteState &z, const SandboxConfinement &confinement = {}) {
  openTempJournal(z.journalFd); // the spare's link announces its temporaries
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return;
  pid_t pid = fork();
  if (pid == 0) {
    closeSpareFds(z);
    close(sv[0]);
    // A failure is the link's to report (setUpLinkChild asks again and
    // gets this outcome: sandbox_child.h).
    if (confinement.sandboxed)
      (void)sandbox::confineSandbox(confinement.readDir, confinement.writeDir);
    serveLinks(sv[1], z.pid, z.journalFd);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return;
  }
  z.spares.push_back({pid, sv[0], false, confinement});
}

// A fresh spare for links outside the sandbox and one for each confinement
// in use: a kernel link that comes before its lane's worker is back (the
// library's next call, right after the answer) takes it instead of waiting
// for a fork, a confinement and LLD's start-up on its own path
// (bench/kernels.sh, library miss on 1 thread: 7.2–10.9 ms per link that
// way, 6.1 with the spare, in the same hour of a noisy machine).
void replenishSpares(ZygoteState &z) {
  auto fresh = [&z](const SandboxConfinement &confinement) {
    return static_cast<size_t>(std::count_if(
        z.spares.begin(), z.spares.end(), [&](const Spare &s) {
          return !s.used && s.confinement == confinement;
        }));
  };
  std::vector<SandboxConfinement> kinds = {SandboxConfinement{}};
  kinds.insert(kinds.end(), z.confinements.begin(), z.confinements.end());
  for (const SandboxConfinement &kind : kinds)
    while (fresh(kind) < kSpares) {
      size_t before = z.spares.size();
      forkSpare(z, kind);
      if (z.spares.size() == before)
        return; // fork failed; the next link forks its own child
    }
}

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

// Hands the request to a waiting spare confined as it asks (none for a
// link outside the sandbox): for a reusable request a used worker first
// (warm), else a fresh spare; other requests only to a fresh one. Its pid,
// or -1 if none took it (a spare that died meanwhile cannot receive: the
// next one is tried).
pid_t handToSpare(ZygoteState &z, const Frame &frame, bool reusable,
                  const SandboxConfinement &confinement) {
  if (frame.payload.size() > kSpareMaxPayload)
    return -1;
  for (bool used : {true, false}) {
    if (used && !reusable)
      continue;
    for (auto it = z.spares.begin(); it != z.spares.end();) {
      if (it->used != used || it->confinement != confinement) {
        ++it;
        continue;
      }
      Spare spare = *it;
      it = z.spares.erase(it);
      if (!sendFrame(spare.fd, frame.kind, frame.id, frame.payload,
                     frame.fds)) {
        close(spare.fd);
        continue;
      }
      if (reusable)
        z.workers[spare.pid] =
            Busy{spare.fd, frame.id, false, false, confinement};
      else
        close(spare.fd); // it runs this one link and exits
      return spare.pid;
    }
  }
  return -1;
}

// A child of its own for the request, forked now.
pid_t forkChild(ZygoteState &z, const v1::LinkRequest &req,
                const LinkChannels &ch) {
  pid_t pid = fork();
  if (pid == 0) {
    child_report::noteRequest(/*prestarted=*/false);
    closeSpareFds(z);
    // Dies with the zygote (becomeLinker); one that died between the fork
    // and that request took its daemon's link along: nothing to do.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != z.pid)
      _exit(1);
    becomeLinker(req, ch);
  }
  return pid;
}

void handleSpawn(ZygoteState &z, Frame &frame) {
  v1::LinkRequest req;
  LinkChannels ch;
  openTempJournal(z.journalFd);
  if (!channelsOf(frame, z.journalFd, ch) ||
      !req.ParseFromString(frame.payload)) {
    sendFrame(z.controlFd, FrameKind::Failed, frame.id,
              "malformed spawn request", {});
    return;
  }
  bool reusable =
      frame.kind == FrameKind::SpawnReusable && mayRunInWorker(req);
  if (frame.kind == FrameKind::SpawnReusable && !reusable)
    frame.kind = FrameKind::SpawnOrdered; // its child exits after it
  pid_t pid = -1;
  SandboxConfinement confinement = sandboxConfinement(req, ch);
  if (reusable && confinement.sandboxed) {
    auto &kinds = z.confinements;
    kinds.erase(std::remove(kinds.begin(), kinds.end(), confinement),
                kinds.end());
    kinds.insert(kinds.begin(), confinement);
    if (kinds.size() > kMaxConfinedKinds)
      kinds.pop_back();
  }
  if (!setsThreadCount(req)) {
    pid = handToSpare(z, frame, reusable, confinement);
    // A reusable link without a spare: a new worker, so that it can stay.
    // A sandboxed one that is not (the farm's) gets a child of its own:
    // forked from this single-threaded zygote, it confines itself before
    // LLD starts any thread.
    if (pid < 0 && reusable) {
      forkSpare(z, confinement);
      pid = handToSpare(z, frame, reusable, confinement);
    }
  }
  if (pid < 0)
    pid = forkChild(z, req, ch); // exits after its link (becomeLinker)
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

// A worker whose link is over on both sides waits for the next, or goes if
// enough are waiting already (its socket closes: it exits).
void takeBackWorker(ZygoteState &z, pid_t pid) {
  auto it = z.workers.find(pid);
  if (it == z.workers.end() || !it->second.idle || !it->second.released)
    return;
  int fd = it->second.fd;
  SandboxConfinement confinement = std::move(it->second.confinement);
  z.workers.erase(it);
  z.children.erase(pid);
  size_t idle = static_cast<size_t>(
      std::count_if(z.spares.begin(), z.spares.end(),
                    [](const Spare &s) { return s.used; }));
  if (idle < maxIdleWorkers())
    z.spares.push_back({pid, fd, true, std::move(confinement)});
  else
    close(fd);
  replenishSpares(z);
}

// The daemon is done with link `id`'s pid.
void handleRelease(ZygoteState &z, uint64_t id) {
  for (auto &[pid, busy] : z.workers)
    if (busy.linkId == id) {
      busy.released = true;
      takeBackWorker(z, pid);
      return;
    }
}

// A busy worker's socket is readable: its Idle frame, or its end.
void handleWorker(ZygoteState &z, pid_t pid) {
  auto it = z.workers.find(pid);
  if (it == z.workers.end())
    return;
  Frame frame;
  if (recvFrame(it->second.fd, frame) != FrameStatus::Ok ||
      frame.kind != FrameKind::Idle || frame.id != it->second.linkId) {
    // Gone, or talking nonsense: not reused (it exits on the closed socket,
    // and is reaped as a child).
    close(it->second.fd);
    z.workers.erase(it);
    return;
  }
  frame.closeFds();
  it->second.idle = true;
  takeBackWorker(z, pid);
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
    if (auto w = z.workers.find(pid); w != z.workers.end()) {
      close(w->second.fd);
      z.workers.erase(w);
    }
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
  ZygoteState z{controlFd, sigFd, getpid(), {}, {}, {}, -1, {}};
  if (!sendFrame(controlFd, FrameKind::Hello, 0, lldVersionString(), {}))
    return 1;
  replenishSpares(z);
  std::vector<pollfd> fds;
  std::vector<pid_t> polled; // the busy worker of fds[2 + i]
  for (;;) {
    fds.assign({{controlFd, POLLIN, 0}, {sigFd, POLLIN, 0}});
    polled.clear();
    for (const auto &[pid, busy] : z.workers)
      if (!busy.idle) {
        fds.push_back({busy.fd, POLLIN, 0});
        polled.push_back(pid);
      }
    if (poll(fds.data(), fds.size(), -1) < 0) {
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
    for (size_t i = 0; i < polled.size(); ++i)
      if (fds[2 + i].revents & (POLLIN | POLLHUP | POLLERR))
        handleWorker(z, polled[i]);
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      Frame frame;
      FrameStatus st = recvFrame(controlFd, frame);
      if (st == FrameStatus::Eof || st == FrameStatus::Error)
        return 0; // daemon went away; children die with us
      if (frame.kind == FrameKind::Spawn ||
          frame.kind == FrameKind::SpawnOrdered ||
          frame.kind == FrameKind::SpawnReusable)
        handleSpawn(z, frame);
      else if (frame.kind == FrameKind::Release)
        handleRelease(z, frame.id);
      else
        frame.closeFds();
    }
  }
}

} // namespace linkd
