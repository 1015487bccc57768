// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/peer_check.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd {

std::string refusePeer(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return std::string("cannot ask the peer's credentials: ") +
           std::strerror(errno);
  if (cred.uid != geteuid())
    return "peer uid " + std::to_string(cred.uid) + " pid " +
           std::to_string(cred.pid) + " is not this daemon's user (uid " +
           std::to_string(geteuid()) + ")";
  return {};
}

int listenUnix(const std::string &path, std::string *error) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path too long: " + path;
    return -1;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  unlink(path.c_str());
  mode_t old = umask(0177); // created 0600
  int rc = bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  umask(old);
  if (rc != 0 || listen(fd, 512) != 0) {
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

} // namespace linkd
