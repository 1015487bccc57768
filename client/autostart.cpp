// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/autostart.h"

#include "client/fallback.h"
#include "config/config.h"
#include "config/daemon_lock.h"
#include "config/env_flag.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds startTimeout() {
  if (const char *v = std::getenv("LINKD_START_TIMEOUT_MS"); v && *v)
    return std::chrono::milliseconds(std::atoll(v));
  return std::chrono::milliseconds(10000);
}

bool lockWithDeadline(int fd, Clock::time_point deadline) {
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      return false;
    if (Clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Starts `linkd serve` in its own session. Returns the daemon's pid or -1.
pid_t spawnDetachedDaemon(const RuntimePaths &paths, const std::string &bin,
                          std::string &err) {
  ensureDirectoryTree(paths.stateDir);
  std::string log = paths.stateDir + "/linkd.log";
  const char *argv[] = {bin.c_str(), "serve", nullptr};
  int pidPipe[2];
  if (pipe2(pidPipe, O_CLOEXEC) != 0) {
    err = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  pid_t mid = fork();
  if (mid < 0) {
    err = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  if (mid == 0) {
    setsid();
    pid_t daemonPid = fork();
    if (daemonPid == 0) {
      int nullFd = open("/dev/null", O_RDWR);
      int logFd = open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0600);
      dup2(nullFd, STDIN_FILENO);
      dup2(logFd >= 0 ? logFd : nullFd, STDOUT_FILENO);
      dup2(logFd >= 0 ? logFd : nullFd, STDERR_FILENO);
      close_range(3, ~0U, 0);
      if (chdir("/") != 0)
        _exit(126);
      signal(SIGPIPE, SIG_DFL);
      execv(bin.c_str(), const_cast<char *const *>(argv));
      _exit(127);
    }
    (void)!write(pidPipe[1], &daemonPid, sizeof(daemonPid));
    _exit(0);
  }
  close(pidPipe[1]);
  pid_t daemonPid = -1;
  if (read(pidPipe[0], &daemonPid, sizeof(daemonPid)) != sizeof(daemonPid))
    daemonPid = -1;
  close(pidPipe[0]);
  waitpid(mid, nullptr, 0);
  if (daemonPid <= 0)
    err = "could not start " + bin;
  return daemonPid;
}

// Gone, or a zombie nobody has reaped yet (containers without an init).
bool processGone(pid_t pid) {
  if (kill(pid, 0) != 0)
    return errno == ESRCH;
  char path[64], buf[256];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return true;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return true;
  buf[n] = '\0';
  const char *paren = std::strrchr(buf, ')');
  return paren && paren[1] == ' ' && paren[2] == 'Z';
}

// The daemon this client just started read the configuration with this
// client's environment: its mistakes are this client's to show (the daemon's
// stderr is its log).
void reportConfigMistakes() {
  if (envFlag("LINKD_QUIET"))
    return;
  for (const std::string &w : loadConfig().warnings) {
    std::string msg = "linkd: config: " + w + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
  }
}

// A connected socket, or -1.
int connectUnix(const std::string &socketPath) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof(addr.sun_path))
    return -1;
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  // A daemon that does not accept (stopped, its backlog full) makes connect
  // wait, for good by default; no longer than a start may take.
  auto ms = startTimeout().count();
  timeval limit{static_cast<time_t>(ms / 1000),
                static_cast<suseconds_t>(ms % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  int rc;
  do
    rc = connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

} // namespace

bool daemonAnswers(const std::string &socketPath) {
  int fd = connectUnix(socketPath);
  if (fd >= 0)
    close(fd);
  return fd >= 0;
}

// A socket this user does not own is not this user's daemon (its owner
// could be anyone who got at the directory); the daemon refuses other users
// anyway (daemon/linkd/peer_check.h).
static std::string socketOwnerProblem(const std::string &socketPath) {
  struct stat st {};
  if (lstat(socketPath.c_str(), &st) != 0 || st.st_uid == getuid())
    return {};
  return socketPath + " belongs to uid " + std::to_string(st.st_uid) +
         ", not to this user";
}

std::string ensureDaemon(const RuntimePaths &paths, bool *lasting) {
  return ensureDaemon(paths, daemonBinary(), lasting);
}

std::string ensureDaemon(const RuntimePaths &paths,
                         const std::string &daemonBin, bool *lasting) {
  bool ignored;
  bool &stays = lasting ? *lasting : ignored;
  stays = true;
  if (std::string err = socketOwnerProblem(paths.socketPath); !err.empty())
    return err;
  if (daemonAnswers(paths.socketPath))
    return {};
  if (daemonBin.empty())
    return std::string(kNoDaemonInstalled);
  if (std::string err = ensurePrivateDirectory(paths.runtimeDir); !err.empty())
    return err;
  auto deadline = Clock::now() + startTimeout();
  int lockFd =
      open(paths.autostartLock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lockFd < 0)
    return "cannot open " + paths.autostartLock + ": " + std::strerror(errno);
  struct Closer {
    int fd;
    ~Closer() { close(fd); } // also releases the lock
  } closer{lockFd};
  stays = false;
  if (!lockWithDeadline(lockFd, deadline))
    return "timed out waiting for another client to start the daemon";
  if (daemonAnswers(paths.socketPath))
    return {};
  std::string err;
  pid_t pid = spawnDetachedDaemon(paths, daemonBin, err);
  stays = pid < 0;
  if (pid < 0)
    return err;
  // Ours gone with the lifetime lock someone else's: it exited 3, "a daemon
  // is already serving", while that one has not opened the socket yet
  // (started by hand or by systemd, it opens its cache first). That one
  // answers soon: this client keeps connecting until its deadline rather
  // than link locally, uncounted. Should that one stop instead, the lock
  // comes free and a daemon is started again.
  bool yielded = false;
  while (Clock::now() < deadline) {
    if (daemonAnswers(paths.socketPath)) {
      reportConfigMistakes();
      return {};
    }
    if (processGone(pid)) {
      if (daemonLockHeld(paths.daemonLock)) {
        yielded = true;
      } else if (yielded) {
        yielded = false;
        if ((pid = spawnDetachedDaemon(paths, daemonBin, err)) < 0)
          return err;
      } else {
        stays = true;
        return "the daemon exited at start-up (see " + paths.stateDir +
               "/linkd.log)";
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return "the daemon did not start within " +
         std::to_string(startTimeout().count()) + " ms";
}

// The socket's owner was checked before connecting; the process that
// accepted is asked after (a socket file this user owns, in a directory
// another user can write, may be a name for another user's listener: the
// owner check alone leaves that window). -1 and why, or `fd`.
static int servedByThisUser(int fd, const std::string &socketPath,
                            std::string &error) {
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 &&
      peer.uid == getuid())
    return fd;
  error = socketPath + " is served by uid " + std::to_string(peer.uid) +
          ", not by this user";
  close(fd);
  return -1;
}

int connectDaemon(const RuntimePaths &paths, std::string &error,
                  bool *lasting) {
  if (lasting)
    *lasting = true;
  if (error = socketOwnerProblem(paths.socketPath); !error.empty())
    return -1;
  if (int fd = connectUnix(paths.socketPath); fd >= 0)
    return servedByThisUser(fd, paths.socketPath, error);
  if (error = ensureDaemon(paths, lasting); !error.empty())
    return -1;
  int fd = connectUnix(paths.socketPath);
  if (fd >= 0)
    return servedByThisUser(fd, paths.socketPath, error);
  error = "the daemon stopped answering on " + paths.socketPath;
  if (lasting)
    *lasting = false;
  return -1;
}

} // namespace linkd
