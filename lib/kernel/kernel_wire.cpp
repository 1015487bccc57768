// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "kernel/kernel_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace linkd::kernel {
namespace {

class Writer {
public:
  explicit Writer(uint8_t type) { s.push_back(static_cast<char>(type)); }
  void u8(uint8_t v) { s.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      s.push_back(static_cast<char>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      s.push_back(static_cast<char>(v >> (8 * i)));
  }
  void str(std::string_view v) {
    u32(static_cast<uint32_t>(v.size()));
    s.append(v);
  }
  void data(std::string_view v) {
    u64(v.size());
    s.append(v);
  }
  std::string take() { return std::move(s); }

private:
  std::string s;
};

class Reader {
public:
  explicit Reader(std::string_view p) : p(p) {}
  bool ok() const { return good; }
  bool done() const { return good && p.empty(); }
  uint8_t u8() { return static_cast<uint8_t>(take(1)[0]); }
  uint32_t u32() {
    std::string_view b = take(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t(static_cast<uint8_t>(b[i])) << (8 * i);
    return v;
  }
  uint64_t u64() {
    std::string_view b = take(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(static_cast<uint8_t>(b[i])) << (8 * i);
    return v;
  }
  std::string_view str() { return take(u32()); }
  std::string_view data() {
    uint64_t n = u64();
    return take(n > p.size() ? p.size() + 1 : static_cast<size_t>(n));
  }
  // A count of items each at least `minBytes` long, or 0 (and failed) if the
  // payload cannot hold that many or it is above `max`.
  size_t count(size_t minBytes, size_t max) {
    uint32_t n = u32();
    if (!good || n > max || n * minBytes > p.size()) {
      good = false;
      return 0;
    }
    return n;
  }

private:
  std::string_view take(size_t n) {
    static constexpr char zeros[8] = {};
    if (!good || n > p.size()) {
      good = false;
      return std::string_view(zeros, n <= 8 ? n : 0);
    }
    std::string_view out = p.substr(0, n);
    p.remove_prefix(n);
    return out;
  }
  std::string_view p;
  bool good = true;
};

bool sendAll(int fd, iovec *iov, int n) {
  while (n > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    auto left = static_cast<size_t>(w);
    while (n > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --n;
    }
    if (n > 0) {
      iov->iov_base = static_cast<char *>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

bool recvAll(int fd, char *buf, size_t n,
             std::chrono::steady_clock::time_point deadline, bool limited) {
  while (n > 0) {
    if (limited && !waitReadable(fd, deadline))
      return false;
    ssize_t got = recv(fd, buf, n, 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    buf += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

} // namespace

std::string encodeLink(const LinkMsg &m) {
  Writer w(MsgLink);
  w.u32(m.version);
  w.u8(m.flavor);
  w.u32(m.flags);
  w.u32(m.timeoutMs);
  w.u32(static_cast<uint32_t>(m.argv.size()));
  for (const std::string &a : m.argv)
    w.str(a);
  w.u32(static_cast<uint32_t>(m.env.size()));
  for (const auto &[k, v] : m.env) {
    w.str(k);
    w.str(v);
  }
  w.u32(static_cast<uint32_t>(m.inputs.size()));
  for (const WireInput &in : m.inputs) {
    w.str(in.name);
    w.str(in.sha256);
    w.u64(in.size);
  }
  return w.take();
}

std::string encodeNeed(const std::vector<uint32_t> &indexes) {
  Writer w(MsgNeed);
  w.u32(static_cast<uint32_t>(indexes.size()));
  for (uint32_t i : indexes)
    w.u32(i);
  return w.take();
}

std::string encodeBlobHead(uint32_t index, uint64_t size) {
  Writer w(MsgBlob);
  w.u32(index);
  w.u64(size);
  return w.take();
}

std::string encodeResult(const ResultMsg &m) {
  Writer w(MsgResult);
  w.u32(static_cast<uint32_t>(m.exitCode));
  w.u32(static_cast<uint32_t>(m.termSignal));
  w.u8(m.cacheHit ? 1 : 0);
  w.u32(m.blobsUploaded);
  w.data(m.out);
  w.data(m.err);
  w.u32(static_cast<uint32_t>(m.outputs.size()));
  for (const WireOutput &o : m.outputs) {
    w.str(o.name);
    w.u32(o.mode);
    w.data(o.data);
  }
  w.str(m.uncacheable);
  return w.take();
}

std::string encodeHealth() { return Writer(MsgHealth).take(); }

std::string encodeHealthReply(const HealthMsg &m) {
  Writer w(MsgHealthReply);
  w.str(m.version);
  w.str(m.lldVersion);
  w.u64(m.activeLinks);
  w.u64(m.linksTotal);
  w.u64(m.hits);
  w.u64(m.misses);
  return w.take();
}

std::string encodeError(std::string_view message, ErrorKind kind) {
  Writer w(MsgError);
  w.str(message);
  w.u8(static_cast<uint8_t>(kind));
  return w.take();
}

std::optional<LinkMsg> decodeLink(std::string_view p) {
  Reader r(p);
  LinkMsg m;
  m.version = r.u32();
  if (!r.ok() || m.version != kWireVersion)
    return std::nullopt;
  m.flavor = r.u8();
  m.flags = r.u32();
  m.timeoutMs = r.u32();
  for (size_t i = 0, n = r.count(4, kMaxArgs); i < n; ++i)
    m.argv.emplace_back(r.str());
  for (size_t i = 0, n = r.count(8, kMaxArgs); i < n; ++i) {
    std::string k(r.str());
    m.env.emplace_back(std::move(k), std::string(r.str()));
  }
  for (size_t i = 0, n = r.count(16, kMaxInputs); i < n; ++i) {
    WireInput in;
    in.name = r.str();
    in.sha256 = r.str();
    in.size = r.u64();
    m.inputs.push_back(std::move(in));
  }
  if (!r.done() || m.argv.empty())
    return std::nullopt;
  return m;
}

std::optional<std::vector<uint32_t>> decodeNeed(std::string_view p) {
  Reader r(p);
  std::vector<uint32_t> out;
  for (size_t i = 0, n = r.count(4, kMaxInputs); i < n; ++i)
    out.push_back(r.u32());
  if (!r.done())
    return std::nullopt;
  return out;
}

std::optional<std::pair<uint32_t, std::string_view>>
decodeBlob(std::string_view p) {
  Reader r(p);
  uint32_t index = r.u32();
  std::string_view data = r.data();
  if (!r.done())
    return std::nullopt;
  return std::make_pair(index, data);
}

std::optional<ResultMsg> decodeResult(std::string_view p) {
  Reader r(p);
  ResultMsg m;
  m.exitCode = static_cast<int32_t>(r.u32());
  m.termSignal = static_cast<int32_t>(r.u32());
  m.cacheHit = r.u8() != 0;
  m.blobsUploaded = r.u32();
  m.out = r.data();
  m.err = r.data();
  for (size_t i = 0, n = r.count(16, kMaxInputs); i < n; ++i) {
    WireOutput o;
    o.name = r.str();
    o.mode = r.u32();
    o.data = r.data();
    m.outputs.push_back(std::move(o));
  }
  // Added after the first release; a daemon before it ends here.
  if (r.ok() && !r.done())
    m.uncacheable = r.str();
  if (!r.done())
    return std::nullopt;
  return m;
}

std::optional<HealthMsg> decodeHealthReply(std::string_view p) {
  Reader r(p);
  HealthMsg m;
  m.version = r.str();
  m.lldVersion = r.str();
  m.activeLinks = r.u64();
  m.linksTotal = r.u64();
  m.hits = r.u64();
  m.misses = r.u64();
  if (!r.done())
    return std::nullopt;
  return m;
}

std::optional<WireError> decodeError(std::string_view p) {
  Reader r(p);
  WireError e;
  e.message = r.str();
  if (r.ok() && !r.done()) // a daemon before the kinds sends none
    e.kind = static_cast<ErrorKind>(r.u8());
  if (!r.done())
    return std::nullopt;
  return e;
}

bool writeFrame(int fd, std::initializer_list<std::string_view> parts) {
  uint64_t total = 0;
  for (std::string_view s : parts)
    total += s.size();
  if (total > kMaxFrameBytes)
    return false;
  char head[4];
  for (int i = 0; i < 4; ++i)
    head[i] = static_cast<char>(total >> (8 * i));
  iovec iov[8];
  int n = 0;
  iov[n++] = {head, 4};
  for (std::string_view s : parts)
    if (n < 8 && !s.empty())
      iov[n++] = {const_cast<char *>(s.data()), s.size()};
  return sendAll(fd, iov, n);
}

bool waitReadable(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left));
    if (r > 0)
      return true;
    if (r == 0 || errno != EINTR)
      return false;
  }
}

bool writeRaw(int fd, std::initializer_list<std::string_view> parts) {
  iovec iov[8];
  int n = 0;
  for (std::string_view s : parts)
    if (n < 8 && !s.empty())
      iov[n++] = {const_cast<char *>(s.data()), s.size()};
  return sendAll(fd, iov, n);
}

bool readFrame(int fd, std::string &payload, uint32_t timeoutMs,
               uint32_t maxBytes) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  unsigned char head[4];
  if (!recvAll(fd, reinterpret_cast<char *>(head), 4, deadline, timeoutMs > 0))
    return false;
  uint32_t n = head[0] | head[1] << 8 | head[2] << 16 | uint32_t(head[3]) << 24;
  if (n == 0 || n > kMaxFrameBytes || n > maxBytes)
    return false;
  // The length is the sender's claim: the buffer grows with what arrives
  // (a MiB at a time), so a connection that announces a GiB and sends a byte
  // costs a MiB, not a GiB.
  constexpr size_t kStep = 1 << 20;
  payload.clear();
  while (payload.size() < n) {
    size_t have = payload.size();
    size_t more = std::min<size_t>(n - have, kStep);
    payload.resize(have + more);
    if (!recvAll(fd, payload.data() + have, more, deadline, timeoutMs > 0))
      return false;
  }
  return true;
}

std::string checkInputName(std::string_view name) {
  if (name.empty())
    return "an input has an empty name";
  if (name.size() > kMaxNameBytes)
    return "input name longer than " + std::to_string(kMaxNameBytes) + " bytes";
  if (name.find('\0') != std::string_view::npos)
    return "input name with a NUL byte";
  std::string_view rest = name;
  if (rest.front() == '/')
    rest.remove_prefix(1);
  for (;;) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == "..")
      return "input name '" + std::string(name) +
             "' has an empty, '.' or '..' component";
    if (slash == std::string_view::npos)
      return {};
    rest.remove_prefix(slash + 1);
  }
}

} // namespace linkd::kernel
