#include "daemon/zygote.h"

#include "daemon/frame.h"
#include "link/flavor.h"
#include "link/lld_entry.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

namespace linkd {
namespace {

// Body of a link child, after fork. Never returns.
[[noreturn]] void becomeLinker(const v1::LinkRequest &req, int outFd,
                               int errFd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int devNull = open("/dev/null", O_RDONLY);
  dup2(devNull, STDIN_FILENO);
  dup2(outFd, STDOUT_FILENO);
  dup2(errFd, STDERR_FILENO);
  close_range(3, ~0U, 0);

  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  umask(static_cast<mode_t>(req.umask() & 0777));

  auto flavor = static_cast<Flavor>(req.flavor());
  for (std::string_view name : flavorEnvironment(flavor)) {
    std::string n(name);
    unsetenv(n.c_str());
    if (auto it = req.env().find(n); it != req.env().end())
      setenv(n.c_str(), it->second.c_str(), 1);
  }
  if (chdir(req.cwd().c_str()) != 0) {
    std::string msg = "linkd: error: cannot change to directory " +
                      req.cwd() + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(1);
  }
  LldInvocation inv;
  inv.flavor = flavor;
  inv.argv.assign(req.argv().begin(), req.argv().end());
  inv.stderrIsColorTty = req.stderr_is_color_tty();
  runLldAndExit(inv);
}

struct ZygoteState {
  int controlFd;
  std::map<pid_t, uint64_t> children; // pid -> link id
};

void handleSpawn(ZygoteState &z, Frame &frame) {
  v1::LinkRequest req;
  if (frame.fds.size() != 2 || !req.ParseFromString(frame.payload)) {
    sendFrame(z.controlFd, FrameKind::Failed, frame.id,
              "malformed spawn request", {});
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(z.controlFd);
    becomeLinker(req, frame.fds[0], frame.fds[1]);
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
    struct rusage ru {};
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
    sendFrame(z.controlFd, FrameKind::Exited, it->second, encodeExit(rec),
              {});
    z.children.erase(it);
  }
}

} // namespace

int runZygote(int controlFd) {
  // Die with the daemon; never leave an orphaned zygote behind.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1)
    return 1;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  int sigFd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigFd < 0)
    return 1;
  signal(SIGPIPE, SIG_IGN);

  ZygoteState z{controlFd, {}};
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
      if (frame.kind == FrameKind::Spawn)
        handleSpawn(z, frame);
      else
        frame.closeFds();
    }
  }
}

ZygoteClient::~ZygoteClient() {
  std::unique_lock lock(mu);
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
  if (reader.joinable())
    reader.join(); // the previous zygote's reader has finished
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return std::string("socketpair: ") + std::strerror(errno);
  // Everything the child needs is prepared before fork: in a threaded
  // process only async-signal-safe calls are allowed between fork and exec.
  std::string fdArg = std::to_string(3);
  const char *argv[] = {selfExe.c_str(), "__zygote", fdArg.c_str(), nullptr};
  pid_t pid = fork();
  if (pid == 0) {
    if (sv[1] == 3) {
      fcntl(3, F_SETFD, 0);
    } else {
      dup2(sv[1], 3); // dup2 clears FD_CLOEXEC on the new descriptor
    }
    execv(selfExe.c_str(), const_cast<char *const *>(argv));
    _exit(127);
  }
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return std::string("fork: ") + std::strerror(errno);
  }
  controlFd = sv[0];
  zygotePid = pid;
  reader = std::thread([this, fd = sv[0]] { readerLoop(fd); });
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
                                          int outFd, int errFd) {
  Spawned result;
  uint64_t id;
  int fd;
  std::string err;
  {
    std::lock_guard lock(mu);
    err = startLocked();
    id = nextId++;
    Pending &p = pending[id];
    result.pid = p.pid.get_future().share();
    result.exit = p.exit.get_future().share();
    fd = controlFd;
  }
  // Sending happens outside `mu` so that a large request can never block the
  // reader thread, which the zygote may be waiting on.
  if (err.empty()) {
    std::lock_guard send(sendMu);
    if (!sendFrame(fd, FrameKind::Spawn, id, request.SerializeAsString(),
                   {outFd, errFd}))
      err = std::string("cannot reach the link zygote: ") +
            std::strerror(errno);
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

int64_t ZygoteClient::pid() const {
  std::lock_guard lock(mu);
  return zygotePid;
}

} // namespace linkd
