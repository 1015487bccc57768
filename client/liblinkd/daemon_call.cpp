// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/liblinkd/daemon_call.h"

#include "link/flavor.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace linkd::kernel {
namespace {

struct Socket {
  int fd;
  ~Socket() {
    if (fd >= 0)
      close(fd);
  }
};

LinkMsg wireRequest(const Request &req) {
  LinkMsg m;
  m.flavor = static_cast<uint8_t>(req.flavor);
  m.flags = req.noCache() ? FlagNoCache : 0;
  m.timeoutMs = req.timeoutMs;
  m.argv = req.argv;
  // Exactly the variables LLD reads for this flavor, as the client forwards
  // them (IREE sets LLD_VERSION, say).
  for (std::string_view name : flavorEnvironment(req.flavor))
    if (const char *v = std::getenv(std::string(name).c_str()))
      m.env.emplace_back(std::string(name), v);
  for (const Input &in : req.inputs)
    m.inputs.push_back({in.name, in.sha256, in.data.size()});
  return m;
}

// The caller's deadline for the whole exchange, with room for the daemon to
// report its own timeout first; 0: none.
uint32_t readTimeout(const Request &req) {
  return req.timeoutMs ? req.timeoutMs + 2000 : 0;
}

bool uploadNeeded(int fd, const Request &req, std::string_view payload,
                  Outcome &out) {
  auto need = decodeNeed(payload);
  if (!need) {
    out = failedWith(LINKD_DAEMON_ERROR,
                     "the daemon sent a malformed list of needed inputs");
    return false;
  }
  for (uint32_t i : *need) {
    if (i >= req.inputs.size()) {
      out = failedWith(LINKD_DAEMON_ERROR,
                       "the daemon asked for an input that does not exist");
      return false;
    }
    std::string_view data = req.inputs[i].data;
    if (!writeFrame(fd, {encodeBlobHead(i, data.size()), data})) {
      out = failedWith(LINKD_DAEMON_ERROR,
                       "the daemon went away during an upload");
      return false;
    }
  }
  return true;
}

// The daemon's Error: a timeout or a refusal is the answer; anything else
// (it cannot run the link) is for a local link to answer.
DaemonCall daemonRefused(std::string_view body, Outcome &out) {
  std::optional<WireError> e = decodeError(body);
  if (!e) {
    out = failedWith(LINKD_DAEMON_ERROR, "the daemon sent a malformed error");
    return DaemonCall::Failed;
  }
  switch (e->kind) {
  case ErrorKind::Timeout:
    out = failedWith(LINKD_TIMEOUT, e->message);
    return DaemonCall::Failed;
  case ErrorKind::Refused:
    out = failedWith(LINKD_BAD_ARGUMENT, e->message);
    return DaemonCall::Failed;
  case ErrorKind::CannotRun:
    break;
  }
  out = failedWith(LINKD_DAEMON_ERROR, e->message);
  return DaemonCall::Unavailable;
}

} // namespace

int connectBlobSocket(const RuntimePaths &paths, std::string *untrusted) {
  std::string path = paths.socketPath + std::string(kSocketSuffix);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // Whoever serves this socket gets the caller's inputs and chooses its
  // outputs: it must be this user's, as the file and as the process on the
  // other end (another user who can write the directory, a shared
  // XDG_RUNTIME_DIR or LINKD_SOCKET, could have put one there).
  auto refuse = [&](int fd, const std::string &why) {
    if (fd >= 0)
      close(fd);
    if (untrusted)
      *untrusted = why;
    errno = EPERM;
    return -1;
  };
  struct stat st{};
  // (Through a symbolic link, as connect() goes: what it leads to counts.)
  if (stat(path.c_str(), &st) == 0 &&
      (!S_ISSOCK(st.st_mode) || st.st_uid != getuid()))
    return refuse(-1,
                  path + (S_ISSOCK(st.st_mode)
                              ? " belongs to uid " + std::to_string(st.st_uid) +
                                    ", not to this user"
                              : " is not a socket"));
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
    return refuse(fd, "cannot tell who serves " + path);
  if (peer.uid != getuid())
    return refuse(fd, path + " is served by uid " + std::to_string(peer.uid) +
                          ", not by this user");
  return fd;
}

DaemonCall linkThroughDaemon(const RuntimePaths &paths, const Request &req,
                             Outcome &out) {
  std::string untrusted;
  Socket s{connectBlobSocket(paths, &untrusted)};
  if (s.fd < 0 && !untrusted.empty()) {
    // Not this user's daemon: no link through it, and none started.
    out = failedWith(LINKD_DAEMON_ERROR, untrusted);
    return DaemonCall::Unavailable;
  }
  if (s.fd < 0) {
    out = failedWith(LINKD_NO_DAEMON, "cannot connect to " + paths.socketPath +
                                          std::string(kSocketSuffix) + ": " +
                                          std::strerror(errno));
    return DaemonCall::NoDaemon;
  }
  if (!writeFrame(s.fd, {encodeLink(wireRequest(req))})) {
    out = failedWith(LINKD_DAEMON_ERROR, "the daemon closed the connection");
    return DaemonCall::Unavailable;
  }
  std::string payload;
  bool uploaded = false;
  for (;;) {
    if (!readFrame(s.fd, payload, readTimeout(req))) {
      if (req.timeoutMs) {
        out = failedWith(LINKD_TIMEOUT, "no answer from the daemon within " +
                                            std::to_string(req.timeoutMs) +
                                            " ms");
        return DaemonCall::Failed;
      }
      out = failedWith(LINKD_DAEMON_ERROR,
                       uploaded ? "the daemon went away mid-link"
                                : "the daemon went away before answering");
      return uploaded ? DaemonCall::Failed : DaemonCall::Unavailable;
    }
    std::string_view body = std::string_view(payload).substr(1);
    switch (static_cast<uint8_t>(payload[0])) {
    case MsgNeed:
      if (!uploadNeeded(s.fd, req, body, out))
        return DaemonCall::Failed;
      uploaded = true;
      continue;
    case MsgResult:
      out.result = decodeResult(body);
      if (!out.result) {
        out = failedWith(LINKD_DAEMON_ERROR,
                         "the daemon sent a malformed result");
        return DaemonCall::Failed;
      }
      return DaemonCall::Done;
    case MsgError:
      return daemonRefused(body, out);
    default:
      out = failedWith(LINKD_DAEMON_ERROR,
                       "the daemon sent an unexpected message");
      return DaemonCall::Failed;
    }
  }
}

bool daemonHealth(const RuntimePaths &paths, HealthMsg &reply,
                  std::string &error) {
  std::string untrusted;
  Socket s{connectBlobSocket(paths, &untrusted)};
  if (s.fd < 0) {
    error = !untrusted.empty()
                ? untrusted
                : "cannot connect to " + paths.socketPath +
                      std::string(kSocketSuffix) + ": " + std::strerror(errno);
    return false;
  }
  std::string payload;
  if (!writeFrame(s.fd, {encodeHealth()}) || !readFrame(s.fd, payload, 10000) ||
      static_cast<uint8_t>(payload[0]) != MsgHealthReply) {
    error = "the daemon did not answer a health check";
    return false;
  }
  auto h = decodeHealthReply(std::string_view(payload).substr(1));
  if (!h) {
    error = "the daemon sent a malformed health reply";
    return false;
  }
  reply = std::move(*h);
  return true;
}

} // namespace linkd::kernel
