// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "child/frame.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd {
namespace {

constexpr size_t kHeaderSize = 16;
constexpr size_t kMaxFds = 5;
constexpr uint32_t kMaxPayload = 256u << 20; // far above any real argv

bool readFully(int fd, char *buf, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, buf, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    buf += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

template <typename T> void put(std::string &s, T v) {
  s.append(reinterpret_cast<const char *>(&v), sizeof(v));
}
template <typename T> T get(const std::string &s, size_t &off) {
  T v{};
  if (off + sizeof(T) <= s.size())
    std::memcpy(&v, s.data() + off, sizeof(T));
  off += sizeof(T);
  return v;
}

} // namespace

void Frame::closeFds() {
  for (int fd : fds)
    close(fd);
  fds.clear();
}

bool sendFrame(int fd, FrameKind kind, uint64_t id, const std::string &payload,
               const std::vector<int> &fds) {
  if (fds.size() > kMaxFds)
    return false;
  char header[kHeaderSize];
  uint32_t len = static_cast<uint32_t>(payload.size());
  uint32_t k = static_cast<uint32_t>(kind);
  std::memcpy(header, &len, 4);
  std::memcpy(header + 4, &k, 4);
  std::memcpy(header + 8, &id, 8);
  iovec iov[2] = {{header, kHeaderSize},
                  {const_cast<char *>(payload.data()), payload.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  if (fds.size() > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  size_t total = kHeaderSize + payload.size();
  size_t sent = 0;
  while (sent < total) {
    ssize_t r = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    sent += static_cast<size_t>(r);
    // Descriptors go with the first chunk only; advance the iovecs.
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
    size_t skip = static_cast<size_t>(r);
    for (auto &v : iov) {
      size_t d = std::min(skip, v.iov_len);
      v.iov_base = static_cast<char *>(v.iov_base) + d;
      v.iov_len -= d;
      skip -= d;
    }
  }
  return true;
}

FrameStatus recvFrame(int fd, Frame &out) {
  char header[kHeaderSize];
  iovec iov{header, kHeaderSize};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t r;
  do {
    r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (r < 0 && errno == EINTR);
  if (r == 0)
    return FrameStatus::Eof;
  if (r < 0)
    return FrameStatus::Error;
  for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.fds.push_back(received);
    }
  }
  if (static_cast<size_t>(r) < kHeaderSize &&
      !readFully(fd, header + r, kHeaderSize - static_cast<size_t>(r)))
    return FrameStatus::Error;
  uint32_t len, kind;
  std::memcpy(&len, header, 4);
  std::memcpy(&kind, header + 4, 4);
  std::memcpy(&out.id, header + 8, 8);
  out.kind = static_cast<FrameKind>(kind);
  if (len > kMaxPayload)
    return FrameStatus::Error;
  out.payload.resize(len);
  if (len > 0 && !readFully(fd, out.payload.data(), len))
    return FrameStatus::Error;
  return FrameStatus::Ok;
}

std::string encodeExit(const ExitRecord &r) {
  std::string s;
  put(s, r.pid);
  put(s, r.waitStatus);
  put(s, r.userMicros);
  put(s, r.sysMicros);
  put(s, r.maxRssKib);
  return s;
}

ExitRecord decodeExit(const std::string &payload) {
  ExitRecord r;
  size_t off = 0;
  r.pid = get<int32_t>(payload, off);
  r.waitStatus = get<int32_t>(payload, off);
  r.userMicros = get<uint64_t>(payload, off);
  r.sysMicros = get<uint64_t>(payload, off);
  r.maxRssKib = get<uint64_t>(payload, off);
  return r;
}

std::string encodeStarted(int32_t pid) {
  std::string s;
  put(s, pid);
  return s;
}

int32_t decodeStarted(const std::string &payload) {
  size_t off = 0;
  return get<int32_t>(payload, off);
}

} // namespace linkd
