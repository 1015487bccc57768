// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/service/kernel_listener.h"

#include "config/runtime_paths.h"
#include "daemon/linkd/service/kernel_link.h"
#include "kernel/kernel_wire.h"
#include "util/files.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace linkd {
namespace {

// The pid a scratch directory's name begins with (`<pid>-k<id>`, see
// kernel_link.cpp), or 0 if the name is not one.
pid_t scratchOwner(std::string_view name) {
  size_t dash = name.find("-k");
  if (dash == std::string_view::npos || dash + 2 == name.size())
    return 0;
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + dash, pid);
  return ec == std::errc() && end == name.data() + dash && pid > 0 ? pid : 0;
}

// Neither the directory nor its outputs' changed within the hour: a pid is
// only this PID namespace's, and a daemon in another one sharing the cache
// directory may be linking there now.
bool unusedForAnHour(const std::filesystem::path &dir) {
  for (const std::filesystem::path &p : {dir, dir / "out"}) {
    struct stat st{};
    if (lstat(p.c_str(), &st) == 0 && time(nullptr) - st.st_mtime < 3600)
      return false;
  }
  return true;
}

// Removes the scratch directories of daemons that ended without removing
// them (killed, crashed mid-link): those whose pid is gone, and this pid's
// (a daemon before us with our pid, as in a container; we have none yet).
// Another live daemon sharing the cache directory keeps its own, and none
// used within the hour is touched. How many were removed; errors skip an
// entry, never throw.
size_t sweepDeadScratch(const std::string &linksDir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t n = 0;
  for (fs::directory_iterator lane(linksDir, ec), end; !ec && lane != end;
       lane.increment(ec)) {
    std::error_code in;
    if (lane->is_symlink(in) || !lane->is_directory(in))
      continue;
    for (fs::directory_iterator e(lane->path(), in); !in && e != end;
         e.increment(in)) {
      pid_t pid = scratchOwner(e->path().filename().native());
      if (!pid || (pid != getpid() && (kill(pid, 0) == 0 || errno != ESRCH)) ||
          !unusedForAnHour(e->path()))
        continue;
      if (removeTree(e->path().string()))
        ++n;
    }
  }
  return n;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Only the daemon's own user may link through it (as on the gRPC socket).
bool peerIsUs(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
         cred.uid == getuid();
}

} // namespace

KernelListener::KernelListener(KernelListenerConfig c, ZygoteClient &zygote,
                               LocalStore *store, CacheStats *stats,
                               Connections &admitted)
    : config(std::move(c)), zygote(zygote),
      blobs(config.blobDir + "/blobs", config.maxBlobBytes), cache(store),
      stats(stats), slots(config.jobs), admitted(admitted), lastEndNs(nowNs()) {
}

KernelListener::~KernelListener() { stop(); }

std::string KernelListener::start() {
  if (std::string e = ensureDirectoryTree(config.blobDir); !e.empty())
    return e;
  if (std::string e = blobs.open(); !e.empty())
    return e;
  mkdir((config.blobDir + "/links").c_str(), 0700);
  if (size_t n = sweepDeadScratch(config.blobDir + "/links"))
    spdlog::info("removed {} kernel scratch directories an ended daemon left",
                 n);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (config.socketPath.size() >= sizeof(addr.sun_path))
    return "socket path too long: " + config.socketPath;
  std::memcpy(addr.sun_path, config.socketPath.c_str(),
              config.socketPath.size() + 1);
  listenFd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd < 0)
    return std::string("socket: ") + std::strerror(errno);
  unlink(config.socketPath.c_str()); // the daemon lock says it is ours
  mode_t old = umask(0177);
  int rc = bind(listenFd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  umask(old);
  if (rc != 0 || listen(listenFd, 128) != 0) {
    std::string e =
        "cannot listen on " + config.socketPath + ": " + std::strerror(errno);
    close(listenFd);
    listenFd = -1;
    return e;
  }
  acceptor = std::thread([this] { acceptLoop(); });
  return {};
}

void KernelListener::stopAccepting() {
  if (listenFd < 0 || stopping.exchange(true))
    return;
  ::shutdown(listenFd, SHUT_RDWR);
  if (acceptor.joinable())
    acceptor.join();
}

void KernelListener::stop() {
  if (listenFd < 0)
    return;
  stopAccepting();
  close(listenFd);
  listenFd = -1;
  unlink(config.socketPath.c_str());
  for (int i = 0; i < 3000 && connections.load() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

uint64_t KernelListener::idleSeconds() const {
  if (active.load() > 0 || connections.load() > 0)
    return 0;
  return static_cast<uint64_t>((nowNs() - lastEndNs.load()) / 1000000000);
}

void KernelListener::acceptLoop() {
  while (!stopping) {
    int c = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (stopping)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (!peerIsUs(c)) {
      if (std::string more; refusedPeers.allow(more))
        spdlog::warn("kernel socket: refused a peer of another user{}", more);
      close(c);
      continue;
    }
    ++connections;
    auto started = admitted.serve("kernel socket", c, [this, c] {
      serveConnection(c);
      admitted.disown(c);
      close(c);
      lastEndNs = nowNs();
      --connections;
    });
    if (started != Connections::Start::Started) {
      --connections;
      kernel::writeFrame(c, {kernel::encodeError(
                                started == Connections::Start::Full
                                    ? "the daemon has too many connections open"
                                    : "the daemon has no thread for it")});
      close(c);
    }
  }
}

// The wait for a connection's next request, up to the idle limit, in short
// steps: a stopping daemon lets its idle connections go at once.
bool KernelListener::awaitRequest(int fd) const {
  auto deadline = std::chrono::steady_clock::now() + kConnectionIdleLimit;
  while (!stopping) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return false;
    if (kernel::waitReadable(
            fd, std::min(deadline, now + std::chrono::milliseconds(100))))
      return true;
  }
  return false;
}

void KernelListener::serveConnection(int fd) {
  KernelLinkContext ctx{zygote, blobs,  cache,  stats,      slots, lanes,
                        config, nextId, active, peakActive, hits,  misses};
  std::string payload;
  // A client that sends no request within the idle limit gives its thread
  // back; a request's frame gets as long again to arrive.
  while (awaitRequest(fd) &&
         kernel::readFrame(fd, payload, kConnectionIdleLimit.count())) {
    auto type = static_cast<uint8_t>(payload[0]);
    std::string_view body = std::string_view(payload).substr(1);
    if (type == kernel::MsgHealth) {
      kernel::HealthMsg h;
      h.version = LINKD_VERSION;
      h.lldVersion = zygote.lldVersion();
      h.activeLinks = active.load();
      h.linksTotal = nextId.load();
      h.hits = hits.load();
      h.misses = misses.load();
      if (!kernel::writeFrame(fd, {kernel::encodeHealthReply(h)}))
        return;
    } else if (type == kernel::MsgLink) {
      if (!serveKernelLink(ctx, fd, body))
        return;
    } else {
      kernel::writeFrame(fd, {kernel::encodeError("unexpected message")});
      return;
    }
  }
}

} // namespace linkd
