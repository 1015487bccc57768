// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A client of one Remote Execution API v2 endpoint: a cluster (BuildBuddy,
// Buildbarn, EngFlow, NativeLink, BuildGrid, Bazel's RemoteWorker) or a cache
// (bazel-remote). The shared-cache tier (reapi_cache.h) and, later, the
// executor use it; it knows the protocol, not linkd's entries.
//
// Every call carries the configured headers (API keys, `authorization`), the
// `requestmetadata-bin` header REAPI servers expect (tool linkd and its
// version, one invocation id per daemon), a deadline, and is retried with
// backoff when the server says it is busy or briefly away (UNAVAILABLE,
// RESOURCE_EXHAUSTED, ABORTED), within that deadline. Nothing it returns is
// trusted: every blob read is checked against the digest asked for (size and
// SHA-256) before the caller sees it.
//
// Blobs up to the server's batch limit go in BatchUpdateBlobs/BatchReadBlobs,
// larger ones through ByteStream (`{instance}/uploads/{uuid}/blobs/{h}/{n}`,
// `{instance}/blobs/{h}/{n}`) in 1 MiB pieces, never held whole.
// Thread-safe: one channel, calls from any thread.
#pragma once

#include "config/config.h"
#include "digest/digest.h"

#include "build/bazel/remote/execution/v2/remote_execution.grpc.pb.h"
#include "google/bytestream/bytestream.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace linkd::reapi {

namespace re = build::bazel::remote::execution::v2;

// Where and how to reach the endpoint.
struct Endpoint {
  std::string url;          // as configured: grpc://host:port[/instance]
  std::string target;       // host:port, for gRPC
  bool tls = false;         // grpcs://
  std::string instanceName; // the URL's path, else remote_instance_name
  std::string tlsCa, tlsCert, tlsKey; // PEM files (grpcs)
  // Sent with every call: API keys, `authorization: Bearer ...`.
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds connectTimeout{2000};
  std::chrono::milliseconds timeout{60000}; // one call, retries included

  // The URL without its instance name's secrets (none) or headers: for
  // logs.
  std::string displayName() const;
};

// grpc://host:port[/instance] or grpcs://...; nullopt and `error` for
// anything else. The instance name may contain slashes
// (`grpc://h:8980/projects/p/instances/default`).
std::optional<Endpoint> parseEndpoint(const std::string &url,
                                      std::string *error);

// One header per line, `NAME=VALUE` or `name: value` (a header file, or
// remote_header values); blank lines and `#` comments skipped. Names are
// lower-cased (gRPC's rule). False with `error` for a malformed line, a
// name gRPC reserves (`:authority`, `grpc-*`, `content-type`, `te`) or a
// value with a line break.
bool parseHeaderLines(const std::string &text,
                      std::vector<std::pair<std::string, std::string>> &out,
                      std::string *error);

// What every REAPI endpoint of `settings` shares: the instance name, TLS
// files and headers (remote_header values, then remote_header_file's
// lines). False and `error` when the header file cannot be read or a header
// is malformed.
bool endpointSettings(const Config &settings, Endpoint &base,
                      std::string *error);

// REAPI digests: lower-case hex SHA-256 and the size.
re::Digest toProto(const Digest &d, uint64_t size);
std::optional<Digest> fromProto(const re::Digest &d);
re::Digest digestOf(std::string_view data);

// What the server said it can do (GetCapabilities).
struct Capabilities {
  bool sha256 = false;        // the CAS takes SHA-256 digests
  uint64_t maxBatchBytes = 0; // 0 as the server says: no limit of its own
  bool actionCacheUpdates = false;
  bool execution = false; // Execute is served, with SHA-256
  int lowMajor = 2, lowMinor = 0, highMajor = 2, highMinor = 0;
  // v2.1+: Command.output_paths (else output_files/output_directories).
  bool outputPaths() const {
    return highMajor > 2 || (highMajor == 2 && highMinor >= 1);
  }
};

// A blob to upload: bytes in memory, or a file read when it is sent.
struct UploadBlob {
  re::Digest digest;
  std::string data; // when `path` is empty
  std::string path;
};

class Client {
public:
  static std::unique_ptr<Client> create(const Endpoint &endpoint,
                                        std::string *error);

  const Endpoint &endpoint() const { return ep; }

  // The server's capabilities, asked once (again after a failure).
  grpc::Status capabilities(Capabilities &out);

  grpc::Status findMissing(const std::vector<re::Digest> &digests,
                           std::vector<re::Digest> &missing);
  // Uploads every blob (batched up to the server's limit; ByteStream
  // above it). `bytesSent` counts what went over the wire.
  grpc::Status upload(const std::vector<UploadBlob> &blobs,
                      uint64_t *bytesSent = nullptr);
  // Reads blob `d` whole, verified (NOT_FOUND: the server lacks it;
  // DATA_LOSS: it sent other bytes).
  grpc::Status read(const re::Digest &d, std::string &out);
  // Streams blob `d` to `sink` in pieces, then verifies it: a DATA_LOSS
  // status means what the sink got is not the blob. `sink` returning false
  // cancels (CANCELLED).
  grpc::Status stream(const re::Digest &d,
                      const std::function<bool(std::string_view)> &sink);

  grpc::Status getActionResult(const re::Digest &action,
                               const std::vector<std::string> &inlineFiles,
                               re::ActionResult &out);
  grpc::Status updateActionResult(const re::Digest &action,
                                  const re::ActionResult &result);

  // Deadline `timeout` from now, the headers and the request metadata
  // (`actionId`: the link's, for the server's logs) on a fresh context.
  void prepare(grpc::ClientContext &ctx, std::chrono::milliseconds timeout,
               const std::string &actionId = "") const;
  // Runs `call` on fresh contexts until it succeeds, fails for good, or the
  // endpoint's timeout has passed; backoff between attempts.
  grpc::Status
  withRetries(const std::function<grpc::Status(grpc::ClientContext &)> &call,
              const std::string &actionId = "") const;

  std::shared_ptr<grpc::Channel> channel() const { return chan; }
  const std::string &invocationId() const { return invocation; }

private:
  explicit Client(Endpoint e) : ep(std::move(e)) {}
  uint64_t batchLimit();
  grpc::Status batchUpload(const std::vector<const UploadBlob *> &blobs,
                           uint64_t *bytesSent);
  grpc::Status byteStreamUpload(const UploadBlob &blob, uint64_t *bytesSent);
  std::string readResource(const re::Digest &d) const;

  Endpoint ep;
  std::shared_ptr<grpc::Channel> chan;
  std::unique_ptr<re::ContentAddressableStorage::Stub> cas;
  std::unique_ptr<re::ActionCache::Stub> ac;
  std::unique_ptr<re::Capabilities::Stub> caps;
  std::unique_ptr<google::bytestream::ByteStream::Stub> bytestream;
  std::string invocation;
  std::string metadata; // serialized RequestMetadata without action id
  std::mutex capsMu;
  std::optional<Capabilities> known;
  // The server answered UNIMPLEMENTED to a batch call (Bazel 4's
  // RemoteWorker has no BatchReadBlobs): ByteStream from then on.
  std::atomic<bool> noBatchRead{false}, noBatchUpdate{false};
};

// "NOT_FOUND", "UNAVAILABLE", ... for messages.
std::string codeName(grpc::StatusCode code);

} // namespace linkd::reapi
