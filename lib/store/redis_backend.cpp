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

#include <cerrno>
#include <mutex>
#include <vector>

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

class RedisBackend final : public RemoteBackend {
public:
  explicit RedisBackend(RemoteTierConfig cfg) : cfg(std::move(cfg)) {}
  ~RedisBackend() override {
    for (redisContext *c : pool)
      redisFree(c);
  }

  RemoteStatus getBlob(const Digest &d, std::string &out) override {
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

  // Raw values are read with GETRANGE in 8 MiB pieces: hiredis would
  // otherwise grow one reply buffer to the blob's size.
  RemoteStatus
  streamBlob(const Digest &d,
             const std::function<bool(std::string_view)> &sink) override {
    std::string k = key("cas:", d);
    std::string head;
    RemoteStatus st = range(k, 0, 0, head);
    if (st != RemoteStatus::Hit)
      return st;
    if (head.empty())
      return RemoteStatus::Miss; // GETRANGE of a missing key is ""
    if (head[0] != 'r')
      return RemoteBackend::streamBlob(d, sink);
    // The pieces are pipelined, two requests in flight: Redis prepares the
    // next piece while we take in this one.
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
    constexpr long long kPiece = 8ll << 20;
    auto request = [&](long long off) {
      return redisAppendCommand(c, "GETRANGE %b %lld %lld", k.data(), k.size(),
                                off, off + kPiece - 1) == REDIS_OK;
    };
    long long next = 1, received = 1;
    int inFlight = 0;
    bool ok = true;
    for (int i = 0; i < 2 && next < total && ok; ++i, next += kPiece, ++inFlight)
      ok = request(next);
    while (ok && received < total) {
      void *raw = nullptr;
      if (redisGetReply(c, &raw) != REDIS_OK || !raw) {
        RemoteStatus err = isTimeout(c) ? RemoteStatus::Timeout
                                        : RemoteStatus::Error;
        redisFree(c);
        return err;
      }
      --inFlight;
      auto *r = static_cast<redisReply *>(raw);
      ok = r->type == REDIS_REPLY_STRING && r->len > 0 &&
           sink({r->str, r->len});
      received += ok ? static_cast<long long>(r->len) : 0;
      freeReplyObject(r);
      if (ok && next < total) {
        ok = request(next);
        next += kPiece;
        ++inFlight;
      }
    }
    // Replies still in flight make the connection unusable for others.
    if (ok && inFlight == 0)
      give(c);
    else
      redisFree(c);
    return ok ? RemoteStatus::Hit : RemoteStatus::Error;
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

  RemoteStatus hasBlob(const Digest &d) override {
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
