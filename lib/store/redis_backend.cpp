// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Redis tier (hiredis). Keys: <prefix>cas:<sha256-hex> for blobs,
// <prefix>ac:<key-hex> for action entries, with an optional TTL. Blob values
// carry one format byte: 'z' + a zstd frame (blobs up to 16 MiB), 'r' + the
// raw bytes (larger ones, where compression costs more time than it saves).
// Debian 12's hiredis (0.14) has no TLS: use redis+unix:// or a TLS tunnel.
// A small pool of connections serves concurrent links; a connection that saw
// an error is dropped, the next request makes a new one.
#include "store/remote_backend.h"

#include <hiredis/hiredis.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

namespace linkd {
namespace {

constexpr size_t kCompressLimit = 16u << 20;

timeval toTimeval(std::chrono::milliseconds ms) {
  return timeval{static_cast<time_t>(ms.count() / 1000),
                 static_cast<suseconds_t>((ms.count() % 1000) * 1000)};
}

bool isTimeout(const redisContext *c) {
  return c->err == REDIS_ERR_IO &&
         (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT ||
          errno == EINPROGRESS);
}

// Replies read straight from a connection's socket, for the bulk strings of
// a blob: the header line through a small buffer, the body in pieces of up
// to 1 MiB handed to the caller as they arrive. The socket keeps the send and
// receive timeouts hiredis set on it.
class RespStream {
public:
  explicit RespStream(int fd) : fd(fd), buf(kBuffer) {}

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        noteErrno();
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // "$<len>\r\n": the length. An error reply or anything else fails, with
  // the server's words in `failure`.
  bool bulkHeader(long long &len, std::string &failure) {
    std::string line;
    if (!readLine(line)) {
      failure = timeout ? "timed out" : "connection lost";
      return false;
    }
    if (line.empty() || line[0] != '$') {
      failure =
          line.empty() || line[0] != '-' ? "unexpected reply" : line.substr(1);
      return false;
    }
    char *end = nullptr;
    errno = 0;
    len = std::strtoll(line.c_str() + 1, &end, 10);
    if (errno != 0 || *end != '\0' || len < -1 || len > (1ll << 40)) {
      failure = "unexpected reply";
      return false;
    }
    return true;
  }

  // The body of a bulk string of `len` bytes and its "\r\n".
  bool body(long long len, const std::function<bool(std::string_view)> &sink,
            std::string &failure) {
    auto left = static_cast<size_t>(len);
    while (left > 0) {
      if (pos == end) {
        pos = end = 0;
        // Fill the buffer (up to what the reply has left) before handing it
        // on: fewer, larger writes to the output file.
        size_t want = std::min(left, buf.size());
        while (end < want)
          if (!fill(want)) {
            failure = timeout ? "timed out" : "connection lost";
            return false;
          }
      }
      size_t n = std::min(left, end - pos);
      if (!sink({buf.data() + pos, n})) {
        failure.clear();
        return false;
      }
      pos += n;
      left -= n;
    }
    std::string crlf;
    if (!readLine(crlf) || !crlf.empty()) {
      failure = timeout ? "timed out" : "unexpected reply";
      return false;
    }
    return true;
  }

  bool drained() const { return pos == end; }
  bool timedOut() const { return timeout; }

private:
  static constexpr size_t kBuffer = 1u << 20;

  // One line without its "\r\n" (header lines are short).
  bool readLine(std::string &line) {
    line.clear();
    for (;;) {
      for (; pos < end; ++pos) {
        if (buf[pos] == '\n' && !line.empty() && line.back() == '\r') {
          ++pos;
          line.pop_back();
          return true;
        }
        if (line.size() > 4096)
          return false;
        line += buf[pos];
      }
      pos = end = 0;
      if (!fill(buf.size()))
        return false;
    }
  }

  // Reads once into buf[end, upto).
  bool fill(size_t upto) {
    for (;;) {
      ssize_t n = ::read(fd, buf.data() + end, upto - end);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        noteErrno();
        return false;
      }
      end += static_cast<size_t>(n);
      return true;
    }
  }

  void noteErrno() {
    timeout = errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT;
  }

  int fd;
  std::vector<char> buf;
  size_t pos = 0, end = 0;
  bool timeout = false;
};

class RedisBackend final : public RemoteBackend {
public:
  explicit RedisBackend(RemoteTierConfig cfg) : cfg(std::move(cfg)) {}
  ~RedisBackend() override {
    for (redisContext *c : pool)
      redisFree(c);
  }

  RemoteStatus getBlob(const Digest &d, uint64_t, std::string &out) override {
    std::string v;
    RemoteStatus st = get(key("cas:", d), v);
    if (st != RemoteStatus::Hit)
      return st;
    // A value that is not a blob of ours was damaged where it is stored:
    // handed up as it is, it fails its digest check and counts as corrupt
    // (then replaced by the next writer that has it), not as an error of
    // the tier (which would open its breaker).
    auto damaged = [&] {
      out = std::move(v);
      return RemoteStatus::Hit;
    };
    if (v.empty())
      return damaged();
    if (v[0] == 'r') {
      out = v.substr(1);
      return RemoteStatus::Hit;
    }
    if (v[0] != 'z')
      return damaged();
    unsigned long long n = ZSTD_getFrameContentSize(v.data() + 1, v.size() - 1);
    if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN ||
        n > (1ull << 30))
      return damaged();
    out.resize(n);
    size_t got = ZSTD_decompress(out.data(), out.size(), v.data() + 1,
                                 v.size() - 1);
    if (ZSTD_isError(got) || got != n)
      return damaged();
    return RemoteStatus::Hit;
  }

  // Raw values are read with GETRANGE in 8 MiB pieces, two in flight, and
  // their replies straight from the connection's socket (RespStream): hiredis
  // would copy every piece twice (into its reader's buffer, then into a reply
  // object), and drop and regrow an 8 MiB buffer per piece.
  RemoteStatus
  streamBlob(const Digest &d, uint64_t size,
             const std::function<bool(std::string_view)> &sink) override {
    std::string k = key("cas:", d);
    std::string head;
    RemoteStatus st = range(k, 0, 0, head);
    if (st != RemoteStatus::Hit)
      return st;
    if (head.empty())
      return RemoteStatus::Miss; // GETRANGE of a missing key is ""
    if (head[0] != 'r')
      return RemoteBackend::streamBlob(d, size, sink);
    long long total = 0;
    st = command(
        [&](redisContext *c) {
          return static_cast<redisReply *>(
              redisCommand(c, "STRLEN %b", k.data(), k.size()));
        },
        [&](redisReply *r) {
          if (r->type != REDIS_REPLY_INTEGER)
            return RemoteStatus::Error;
          total = r->integer;
          return RemoteStatus::Hit;
        });
    if (st != RemoteStatus::Hit)
      return st;
    redisContext *c = take();
    if (!c)
      return RemoteStatus::Error;
    // Nothing of hiredis's may be pending on the connection we read raw.
    if (sdslen(c->obuf) != 0 || c->reader->len != c->reader->pos) {
      redisFree(c);
      return RemoteStatus::Error;
    }
    RespStream in(c->fd);
    constexpr long long kPiece = 2ll << 20;
    auto request = [&](long long off) {
      char *cmd = nullptr;
      int n = redisFormatCommand(&cmd, "GETRANGE %b %lld %lld", k.data(),
                                 k.size(), off, off + kPiece - 1);
      bool sent = n > 0 && in.send({cmd, static_cast<size_t>(n)});
      free(cmd); // NOLINT(cppcoreguidelines-no-malloc): hiredis's allocation
      return sent;
    };
    long long next = 1, received = 1;
    int inFlight = 0;
    bool ok = true;
    for (int i = 0; i < 2 && next < total && ok; ++i, next += kPiece, ++inFlight)
      ok = request(next);
    std::string failure;
    while (ok && received < total) {
      long long len = 0;
      if (!in.bulkHeader(len, failure)) {
        ok = false;
        break;
      }
      --inFlight;
      // A piece is at most what was asked for: a longer one is a server we
      // cannot follow, refused before its bytes reach the output file.
      if (len > kPiece) {
        failure = "a GETRANGE reply longer than asked";
        ok = false;
        break;
      }
      long long got = 0;
      ok = len > 0 && in.body(
                          len,
                          [&](std::string_view piece) {
                            got += static_cast<long long>(piece.size());
                            return sink(piece);
                          },
                          failure);
      received += got;
      // A piece beyond the length STRLEN gave is a server we cannot follow.
      if (ok && received > total) {
        failure = "GETRANGE replies longer than the value";
        ok = false;
      }
      if (ok && next < total) {
        ok = request(next);
        next += kPiece;
        ++inFlight;
      }
    }
    // Replies still in flight, or bytes beyond them, make the connection
    // unusable for others.
    if (ok && inFlight == 0 && in.drained()) {
      give(c);
      return RemoteStatus::Hit;
    }
    RemoteStatus err =
        in.timedOut() ? RemoteStatus::Timeout : RemoteStatus::Error;
    if (!failure.empty())
      noteError(failure);
    redisFree(c);
    return err;
  }

  RemoteStatus putBlob(const Digest &d, std::string_view data) override {
    std::string v;
    if (data.size() <= kCompressLimit) {
      v.resize(1 + ZSTD_compressBound(data.size()));
      v[0] = 'z';
      size_t n = ZSTD_compress(v.data() + 1, v.size() - 1, data.data(),
                               data.size(), 1);
      if (ZSTD_isError(n))
        return RemoteStatus::Error;
      v.resize(1 + n);
    } else {
      v.reserve(1 + data.size());
      v += 'r';
      v += data;
    }
    return set(key("cas:", d), v);
  }

  RemoteStatus hasBlob(const Digest &d, uint64_t) override {
    std::string k = key("cas:", d);
    return command([&](redisContext *c) {
      return static_cast<redisReply *>(
          redisCommand(c, "EXISTS %b", k.data(), k.size()));
    }, [](redisReply *r) {
      return r->type == REDIS_REPLY_INTEGER && r->integer > 0
                 ? RemoteStatus::Hit
                 : RemoteStatus::Miss;
    });
  }

  RemoteStatus getAction(const Digest &k, std::string &out) override {
    return get(key("ac:", k), out);
  }

  RemoteStatus putAction(const Digest &k, std::string_view value) override {
    return set(key("ac:", k), value);
  }

private:
  std::string key(const char *kind, const Digest &d) const {
    return cfg.keyPrefix + kind + d.hex();
  }

  redisContext *connect() {
    timeval tv = toTimeval(cfg.connectTimeout);
    redisContext *c = cfg.scheme == "redis+unix"
                          ? redisConnectUnixWithTimeout(cfg.path.c_str(), tv)
                          : redisConnectWithTimeout(cfg.host.c_str(), cfg.port,
                                                    tv);
    if (!c)
      return nullptr;
    if (c->err) {
      lastConnectTimedOut = isTimeout(c);
      redisFree(c);
      return nullptr;
    }
    redisSetTimeout(c, toTimeval(cfg.timeout));
    auto ok = [&](redisReply *r) {
      bool good = r && r->type != REDIS_REPLY_ERROR;
      if (r)
        freeReplyObject(r);
      return good;
    };
    if (!cfg.password.empty()) {
      redisReply *r =
          cfg.user.empty()
              ? static_cast<redisReply *>(
                    redisCommand(c, "AUTH %s", cfg.password.c_str()))
              : static_cast<redisReply *>(redisCommand(
                    c, "AUTH %s %s", cfg.user.c_str(), cfg.password.c_str()));
      if (!ok(r)) {
        redisFree(c);
        return nullptr;
      }
    }
    if (cfg.db != 0 &&
        !ok(static_cast<redisReply *>(redisCommand(c, "SELECT %d", cfg.db)))) {
      redisFree(c);
      return nullptr;
    }
    return c;
  }

  redisContext *take() {
    {
      std::lock_guard lock(mu);
      if (!pool.empty()) {
        redisContext *c = pool.back();
        pool.pop_back();
        return c;
      }
    }
    return connect();
  }

  void give(redisContext *c) {
    std::lock_guard lock(mu);
    if (pool.size() < 8)
      pool.push_back(c);
    else
      redisFree(c);
  }

  template <typename Send, typename Read>
  RemoteStatus command(Send send, Read read) {
    lastConnectTimedOut = false;
    redisContext *c = take();
    if (!c) {
      noteError(lastConnectTimedOut ? "connect timed out"
                                    : "cannot connect or log in");
      return lastConnectTimedOut ? RemoteStatus::Timeout : RemoteStatus::Error;
    }
    redisReply *r = send(c);
    if (!r) {
      RemoteStatus st = isTimeout(c) ? RemoteStatus::Timeout
                                     : RemoteStatus::Error;
      noteError(c->errstr[0] ? c->errstr : "no reply");
      redisFree(c);
      return st;
    }
    if (r->type == REDIS_REPLY_ERROR)
      noteError(std::string(r->str, r->len));
    RemoteStatus st = r->type == REDIS_REPLY_ERROR ? RemoteStatus::Error
                                                   : read(r);
    freeReplyObject(r);
    give(c);
    return st;
  }

  RemoteStatus get(const std::string &k, std::string &out) {
    return command(
        [&](redisContext *c) {
          return static_cast<redisReply *>(
              redisCommand(c, "GET %b", k.data(), k.size()));
        },
        [&](redisReply *r) {
          if (r->type == REDIS_REPLY_NIL)
            return RemoteStatus::Miss;
          if (r->type != REDIS_REPLY_STRING)
            return RemoteStatus::Error;
          out.assign(r->str, r->len);
          return RemoteStatus::Hit;
        });
  }

  RemoteStatus range(const std::string &k, long long from, long long to,
                     std::string &out) {
    return command(
        [&](redisContext *c) {
          return static_cast<redisReply *>(redisCommand(
              c, "GETRANGE %b %lld %lld", k.data(), k.size(), from, to));
        },
        [&](redisReply *r) {
          if (r->type != REDIS_REPLY_STRING)
            return RemoteStatus::Error;
          out.assign(r->str, r->len);
          return RemoteStatus::Hit;
        });
  }

  RemoteStatus set(const std::string &k, std::string_view v) {
    return command(
        [&](redisContext *c) {
          if (cfg.ttlSeconds)
            return static_cast<redisReply *>(
                redisCommand(c, "SET %b %b EX %llu", k.data(), k.size(),
                             v.data(), v.size(),
                             static_cast<unsigned long long>(cfg.ttlSeconds)));
          return static_cast<redisReply *>(redisCommand(
              c, "SET %b %b", k.data(), k.size(), v.data(), v.size()));
        },
        [](redisReply *) { return RemoteStatus::Stored; });
  }

  RemoteTierConfig cfg;
  std::mutex mu;
  std::vector<redisContext *> pool;
  thread_local static bool lastConnectTimedOut;
};

thread_local bool RedisBackend::lastConnectTimedOut = false;

} // namespace

std::unique_ptr<RemoteBackend> makeRedisBackend(const RemoteTierConfig &cfg) {
  return std::make_unique<RedisBackend>(cfg);
}

} // namespace linkd
