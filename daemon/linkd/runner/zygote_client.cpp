// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/runner/zygote_client.h"

#include "child/frame.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>

extern char **environ;

namespace linkd {
namespace {

// The daemon's environment, with LD_BIND_NOW: the dynamic loader resolves
// every symbol of libLLVM and the rest when the zygote starts, once, instead
// of each link child resolving the ones it calls on first use (~80 page
// faults and 0.4 ms of CPU per hello-world link). Link children start from
// an empty environment (the client's variables), so it goes no further.
constexpr char kBindNow[] = "LD_BIND_NOW=1";

std::vector<char *> zygoteEnvironment() {
  std::vector<char *> envp;
  for (char **e = environ; *e; ++e)
    if (std::strncmp(*e, "LD_BIND_NOW=", 12) != 0)
      envp.push_back(*e);
  envp.push_back(const_cast<char *>(kBindNow));
  envp.push_back(nullptr);
  return envp;
}

} // namespace

ZygoteClient::ZygoteClient(std::string lldExe) : lldExe(std::move(lldExe)) {
  haveStartFdLimit = getrlimit(RLIMIT_NOFILE, &startFdLimit) == 0;
}

ZygoteClient::~ZygoteClient() { stop(); }

void ZygoteClient::stop() {
  std::unique_lock lock(mu);
  stopping = true;
  if (controlFd >= 0)
    shutdown(controlFd, SHUT_RDWR);
  lock.unlock();
  if (reader.joinable())
    reader.join();
}

std::string ZygoteClient::start() {
  std::lock_guard lock(mu);
  return startLocked();
}

std::string ZygoteClient::startLocked() {
  if (controlFd >= 0)
    return {};
  if (stopping)
    return "the daemon is stopping";
  if (reader.joinable())
    reader.join(); // the previous zygote's reader has finished
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return std::string("socketpair: ") + std::strerror(errno);
  // Everything the child needs is prepared before fork: in a threaded
  // process only async-signal-safe calls are allowed between fork and exec.
  std::string fdArg = std::to_string(3);
  const char *argv[] = {lldExe.c_str(), "__zygote", fdArg.c_str(), nullptr};
  // The zygote dies with the thread that forked it (PR_SET_PDEATHSIG fires
  // when the parent *thread* exits), so its reader thread forks it: that
  // thread lives exactly as long as the zygote. A request's thread would
  // take the zygote with it when it ends.
  std::vector<char *> envp = zygoteEnvironment();
  std::promise<pid_t> forked;
  std::future<pid_t> pidOf = forked.get_future();
  reader = std::thread([&, child = sv[1], fd = sv[0]] {
    pid_t pid = fork();
    if (pid == 0) {
      if (haveStartFdLimit)
        setrlimit(RLIMIT_NOFILE, &startFdLimit); // async-signal-safe
      if (child == 3)
        fcntl(3, F_SETFD, 0);
      else
        dup2(child, 3); // dup2 clears FD_CLOEXEC on the new descriptor
      // The zygote gets stdio and its control socket, nothing else: a
      // descriptor some library left without FD_CLOEXEC would otherwise live
      // in it and every link child (async-signal-safe: a system call).
      close_range(4, ~0U, 0);
      execve(lldExe.c_str(), const_cast<char *const *>(argv), envp.data());
      _exit(127);
    }
    int err = errno;
    forked.set_value(pid < 0 ? -err : pid);
    if (pid > 0)
      readerLoop(fd);
  });
  pid_t pid = pidOf.get(); // argv and `forked` outlive the fork
  close(sv[1]);
  if (pid < 0) {
    reader.join();
    close(sv[0]);
    return std::string("fork: ") + std::strerror(-pid);
  }
  controlFd = sv[0];
  zygotePid = pid;
  return {};
}

void ZygoteClient::readerLoop(int fd) {
  for (;;) {
    Frame frame;
    FrameStatus st = recvFrame(fd, frame);
    if (st != FrameStatus::Ok) {
      // Lock order: sendMu, then mu. Holding sendMu keeps the descriptor
      // from being closed under a sender.
      std::lock_guard send(sendMu);
      std::lock_guard lock(mu);
      if (!stopping)
        spdlog::warn("link zygote pid={} exited; a new one starts with the "
                     "next link",
                     zygotePid);
      failAllLocked("the link zygote exited");
      close(fd);
      if (controlFd == fd)
        controlFd = -1;
      waitpid(zygotePid, nullptr, 0);
      zygotePid = -1;
      return;
    }
    frame.closeFds();
    std::lock_guard lock(mu);
    if (frame.kind == FrameKind::Hello) {
      version = frame.payload;
      versionCv.notify_all();
      continue;
    }
    auto it = pending.find(frame.id);
    if (it == pending.end())
      continue;
    Pending &p = it->second;
    switch (frame.kind) {
    case FrameKind::Started:
      p.pid.set_value(decodeStarted(frame.payload));
      p.pidSet = true;
      break;
    case FrameKind::Exited: {
      ExitRecord rec = decodeExit(frame.payload);
      ChildExit e;
      e.ran = true;
      e.waitStatus = rec.waitStatus;
      e.userMicros = rec.userMicros;
      e.sysMicros = rec.sysMicros;
      e.maxRssKib = rec.maxRssKib;
      p.exit.set_value(e);
      pending.erase(it);
      break;
    }
    case FrameKind::Failed: {
      if (!p.pidSet)
        p.pid.set_value(-1);
      ChildExit e;
      e.error = frame.payload;
      p.exit.set_value(e);
      pending.erase(it);
      break;
    }
    default:
      break;
    }
  }
}

void ZygoteClient::failAllLocked(const std::string &why) {
  for (auto &[id, p] : pending) {
    if (!p.pidSet)
      p.pid.set_value(-1);
    ChildExit e;
    e.error = why;
    p.exit.set_value(e);
  }
  pending.clear();
}

ZygoteClient::Spawned ZygoteClient::spawn(const v1::LinkRequest &request,
                                          const ChildFds &child,
                                          bool reusable) {
  Spawned result;
  uint64_t id;
  int fd;
  std::string err;
  {
    std::lock_guard lock(mu);
    err = startLocked();
    id = nextId++;
    result.id = id;
    Pending &p = pending[id];
    result.pid = p.pid.get_future().share();
    result.exit = p.exit.get_future().share();
    fd = controlFd;
  }
  // Sending happens outside `mu` so that a large request can never block the
  // reader thread, which the zygote may be waiting on.
  if (err.empty()) {
    std::lock_guard send(sendMu);
    std::string payload = request.SerializeAsString();
    // Positional, as the zygote reads them (daemon/linkd-lld/zygote.h).
    std::vector<int> fds = {child.out, child.err};
    if (child.records >= 0)
      fds.push_back(child.records);
    if (child.records >= 0 && child.sandbox >= 0)
      fds.push_back(child.sandbox);
    if (child.ordered >= 0)
      fds.push_back(child.ordered);
    FrameKind kind = child.ordered < 0 ? FrameKind::Spawn
                     : reusable        ? FrameKind::SpawnReusable
                                       : FrameKind::SpawnOrdered;
    bool sent = sendFrame(fd, kind, id, payload, fds);
    if (!sent)
      err =
          std::string("cannot reach the link zygote: ") + std::strerror(errno);
  }
  if (!err.empty()) {
    std::lock_guard lock(mu);
    if (auto it = pending.find(id); it != pending.end()) {
      it->second.pid.set_value(-1);
      ChildExit e;
      e.error = err;
      it->second.exit.set_value(e);
      pending.erase(it);
    }
  }
  return result;
}

void ZygoteClient::release(uint64_t id, const ChildExit &reported) {
  // Lock order: sendMu, then mu (readerLoop). Holding sendMu keeps the
  // descriptor from being closed under us; the frame is a few bytes.
  std::lock_guard send(sendMu);
  int fd;
  {
    std::lock_guard lock(mu);
    auto it = pending.find(id);
    if (it == pending.end())
      return; // reaped already, or its zygote is gone
    it->second.exit.set_value(reported);
    pending.erase(it);
    fd = controlFd;
  }
  if (fd >= 0)
    sendFrame(fd, FrameKind::Release, id, {}, {});
}

int64_t ZygoteClient::pid() const {
  std::lock_guard lock(mu);
  return zygotePid;
}

} // namespace linkd

namespace linkd {
std::string ZygoteClient::lldVersion() const {
  std::lock_guard lock(mu);
  return version;
}

std::string ZygoteClient::waitForLldVersion(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu);
  versionCv.wait_for(lock, timeout, [this] { return !version.empty(); });
  return version;
}
} // namespace linkd
