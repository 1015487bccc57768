// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A remote cache tier: blobs by SHA-256 digest, action entries by action
// key, on storage teams already run (Redis; HTTP in the bazel-remote
// /cas/ + /ac/ layout, served by bazel-remote, nginx WebDAV and REAPI HTTP
// fronts).
//
// Failures are values (RemoteStatus), never exceptions: a remote that is
// down, slow or wrong is a miss for the link, counted by the caller
// (remote_tiers.h), which also verifies every blob against its digest and
// every signed action entry against the shared key.
#pragma once

#include "digest/digest.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

enum class RemoteStatus { Hit, Miss, Stored, Error, Timeout };

enum class TierMode { ReadWrite, ReadOnly, WriteOnly };

struct RemoteTierConfig {
  std::string url;             // as configured (credentials included)
  std::string scheme;          // redis, redis+unix, http, https, grpc, grpcs
  std::string host;
  int port = 0;
  std::string path;            // http: prefix; redis+unix: socket path;
                               // grpc: the instance name
  int db = 0;                  // redis database
  std::string user, password;  // redis ACL / http basic
  std::string bearerToken;     // http
  std::string keyPrefix;       // redis key namespace
  uint64_t ttlSeconds = 0;     // redis: 0 = no expiry
  TierMode mode = TierMode::ReadWrite;
  std::chrono::milliseconds connectTimeout{300};
  std::chrono::milliseconds timeout{5000};
  bool tlsInsecure = false;    // https: skip certificate verification

  // The URL without credentials, for logs and stats.
  std::string displayName() const;
};

// Parses one tier URL:
//   redis://[user:password@]host[:port][/db][?prefix=P&ttl=S&mode=M]
//   redis+unix:///path/to/socket[?db=N&prefix=P&ttl=S&mode=M]
//   http(s)://[user:password@]host[:port][/prefix][?mode=M&token_file=F&insecure=1]
//   grpc(s)://host[:port][/instance-name][?mode=M]  (REAPI CAS + action
//                 cache; grpcs without a port is 443; TLS files and headers
//                 come from the remote_tls_* and remote_header settings)
// mode: read-write (default), read-only, write-only. Returns nullopt and
// sets `error` for anything else.
std::optional<RemoteTierConfig> parseRemoteUrl(const std::string &url,
                                               std::string *error);

// A blob's size where the caller does not know it. REAPI names blobs by
// digest and size and cannot read one without it (a miss there); Redis and
// HTTP name them by digest alone.
constexpr uint64_t kSizeUnknown = UINT64_MAX;

class RemoteBackend {
public:
  virtual ~RemoteBackend() = default;
  // Blob content, exactly the bytes whose SHA-256 is `d` (`size` of them,
  // or kSizeUnknown).
  virtual RemoteStatus getBlob(const Digest &d, uint64_t size,
                               std::string &out) = 0;
  virtual RemoteStatus putBlob(const Digest &d, std::string_view data) = 0;
  // The blob's content in order, in chunks, without holding it whole (a
  // 130 MB output). `sink` returning false aborts (Error). The default reads
  // it whole.
  virtual RemoteStatus
  streamBlob(const Digest &d, uint64_t size,
             const std::function<bool(std::string_view)> &sink) {
    std::string data;
    RemoteStatus st = getBlob(d, size, data);
    if (st == RemoteStatus::Hit && !sink(data))
      return RemoteStatus::Error;
    return st;
  }
  virtual RemoteStatus hasBlob(const Digest &d, uint64_t size) = 0;
  // Action entries: opaque bytes under a key (the caller signs them).
  virtual RemoteStatus getAction(const Digest &key, std::string &out) = 0;
  virtual RemoteStatus putAction(const Digest &key, std::string_view value) = 0;
  // What the last Error or Timeout was, as the server or transport said it
  // ("NOPERM this user has no permissions to run the 'strlen' command",
  // "HTTP 403", "Couldn't connect to server"), for the log.
  std::string lastError() const {
    std::lock_guard lock(errorMu);
    return lastErrorText;
  }

protected:
  void noteError(std::string text) {
    std::lock_guard lock(errorMu);
    lastErrorText = std::move(text);
  }

private:
  mutable std::mutex errorMu;
  std::string lastErrorText;
};

std::unique_ptr<RemoteBackend> makeRedisBackend(const RemoteTierConfig &cfg);
std::unique_ptr<RemoteBackend> makeHttpBackend(const RemoteTierConfig &cfg);

} // namespace linkd
