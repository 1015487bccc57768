// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The REAPI client and cache tier (daemon/linkd/reapi/) against a scripted
// server in this process: what every call carries (instance name, headers,
// request metadata), and what a hostile or unwell server gets out of it —
// other bytes than the digest's, too many bytes, a wrong committed size, an
// inlined entry that is not its digest, busy answers, silence, calls it does
// not implement. A blob the client returns is always exactly the one asked
// for; everything else is a status.
#include "daemon/linkd/reapi/reapi_cache.h"
#include "daemon/linkd/reapi/reapi_client.h"

#include "util/files.h"
#include <grpcpp/grpcpp.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

namespace linkd::reapi {
namespace {

using namespace std::chrono_literals;
namespace bs = google::bytestream;

// What the scripted server holds and how it misbehaves.
struct Script {
  std::mutex mu;
  std::map<std::string, std::string> blobs;        // hash -> bytes served
  std::map<std::string, re::ActionResult> actions; // action hash -> result
  std::vector<std::string> instances;              // instance names seen
  std::multimap<std::string, std::string> headers; // of the last call
  int unavailableLeft = 0; // answer this many calls UNAVAILABLE first
  std::string extraBytes;  // appended to every ByteStream read
  std::atomic<bool> batchReadUnimplemented{false};
  std::atomic<bool> silent{false};        // never answer (until the deadline)
  std::atomic<int64_t> committedDelta{0}; // added to the committed size
  std::atomic<int> calls{0};

  grpc::Status enter(grpc::ServerContext *ctx, const std::string &instance) {
    ++calls;
    {
      std::lock_guard lock(mu);
      instances.push_back(instance);
      headers.clear();
      for (const auto &[k, v] : ctx->client_metadata())
        headers.emplace(std::string(k.data(), k.size()),
                        std::string(v.data(), v.size()));
      if (!silent && unavailableLeft > 0) {
        --unavailableLeft;
        return {grpc::StatusCode::UNAVAILABLE, "busy"};
      }
      if (!silent)
        return grpc::Status::OK;
    }
    while (!ctx->IsCancelled())
      std::this_thread::sleep_for(5ms);
    return {grpc::StatusCode::CANCELLED, "gone"};
  }
};

class Cas final : public re::ContentAddressableStorage::Service {
public:
  explicit Cas(Script &s) : s(s) {}
  grpc::Status FindMissingBlobs(grpc::ServerContext *ctx,
                                const re::FindMissingBlobsRequest *req,
                                re::FindMissingBlobsResponse *resp) override {
    if (auto st = s.enter(ctx, req->instance_name()); !st.ok())
      return st;
    std::lock_guard lock(s.mu);
    for (const auto &d : req->blob_digests())
      if (!s.blobs.count(d.hash()))
        *resp->add_missing_blob_digests() = d;
    return grpc::Status::OK;
  }
  grpc::Status BatchUpdateBlobs(grpc::ServerContext *ctx,
                                const re::BatchUpdateBlobsRequest *req,
                                re::BatchUpdateBlobsResponse *resp) override {
    if (auto st = s.enter(ctx, req->instance_name()); !st.ok())
      return st;
    std::lock_guard lock(s.mu);
    for (const auto &r : req->requests()) {
      s.blobs[r.digest().hash()] = r.data();
      auto *out = resp->add_responses();
      *out->mutable_digest() = r.digest();
    }
    return grpc::Status::OK;
  }
  grpc::Status BatchReadBlobs(grpc::ServerContext *ctx,
                              const re::BatchReadBlobsRequest *req,
                              re::BatchReadBlobsResponse *resp) override {
    if (auto st = s.enter(ctx, req->instance_name()); !st.ok())
      return st;
    std::lock_guard lock(s.mu);
    if (s.batchReadUnimplemented)
      return {grpc::StatusCode::UNIMPLEMENTED, "no batch reads"};
    for (const auto &d : req->digests()) {
      auto *r = resp->add_responses();
      *r->mutable_digest() = d;
      if (auto it = s.blobs.find(d.hash()); it != s.blobs.end())
        r->set_data(it->second);
      else
        r->mutable_status()->set_code(grpc::StatusCode::NOT_FOUND);
    }
    return grpc::Status::OK;
  }

private:
  Script &s;
};

// Resource names: [instance/]blobs/H/N or [instance/]uploads/U/blobs/H/N.
std::string hashOf(const std::string &resource, std::string *instance) {
  size_t at = resource.find("blobs/");
  std::string rest = resource.substr(at + 6);
  std::string head = resource.substr(0, at);
  if (size_t up = head.find("uploads/"); up != std::string::npos)
    head = head.substr(0, up);
  if (!head.empty() && head.back() == '/')
    head.pop_back();
  *instance = head;
  return rest.substr(0, rest.find('/'));
}

class ByteStream final : public bs::ByteStream::Service {
public:
  explicit ByteStream(Script &s) : s(s) {}
  grpc::Status Read(grpc::ServerContext *ctx, const bs::ReadRequest *req,
                    grpc::ServerWriter<bs::ReadResponse> *w) override {
    std::string instance, hash = hashOf(req->resource_name(), &instance);
    if (auto st = s.enter(ctx, instance); !st.ok())
      return st;
    std::string data;
    {
      std::lock_guard lock(s.mu);
      auto it = s.blobs.find(hash);
      if (it == s.blobs.end())
        return {grpc::StatusCode::NOT_FOUND, "no " + hash};
      data = it->second + s.extraBytes;
    }
    for (size_t at = 0; at < data.size(); at += 4096) {
      bs::ReadResponse r;
      r.set_data(data.substr(at, 4096));
      w->Write(r);
    }
    return grpc::Status::OK;
  }
  grpc::Status Write(grpc::ServerContext *ctx,
                     grpc::ServerReader<bs::WriteRequest> *r,
                     bs::WriteResponse *resp) override {
    bs::WriteRequest req;
    std::string resource, data;
    while (r->Read(&req)) {
      if (resource.empty())
        resource = req.resource_name();
      if (req.write_offset() != static_cast<int64_t>(data.size()))
        return {grpc::StatusCode::INVALID_ARGUMENT, "bad offset"};
      data += req.data();
    }
    std::string instance, hash = hashOf(resource, &instance);
    if (auto st = s.enter(ctx, instance); !st.ok())
      return st;
    std::lock_guard lock(s.mu);
    s.blobs[hash] = data;
    resp->set_committed_size(static_cast<int64_t>(data.size()) +
                             s.committedDelta);
    return grpc::Status::OK;
  }

private:
  Script &s;
};

class ActionCache final : public re::ActionCache::Service {
public:
  explicit ActionCache(Script &s) : s(s) {}
  grpc::Status GetActionResult(grpc::ServerContext *ctx,
                               const re::GetActionResultRequest *req,
                               re::ActionResult *out) override {
    if (auto st = s.enter(ctx, req->instance_name()); !st.ok())
      return st;
    std::lock_guard lock(s.mu);
    auto it = s.actions.find(req->action_digest().hash());
    if (it == s.actions.end())
      return {grpc::StatusCode::NOT_FOUND, "no action"};
    *out = it->second;
    return grpc::Status::OK;
  }
  grpc::Status UpdateActionResult(grpc::ServerContext *ctx,
                                  const re::UpdateActionResultRequest *req,
                                  re::ActionResult *out) override {
    if (auto st = s.enter(ctx, req->instance_name()); !st.ok())
      return st;
    std::lock_guard lock(s.mu);
    s.actions[req->action_digest().hash()] = req->action_result();
    *out = req->action_result();
    return grpc::Status::OK;
  }

private:
  Script &s;
};

class Caps final : public re::Capabilities::Service {
public:
  explicit Caps(Script &s) : s(s) {}
  grpc::Status GetCapabilities(grpc::ServerContext *ctx,
                               const re::GetCapabilitiesRequest *req,
                               re::ServerCapabilities *out) override {
    if (auto st = s.enter(ctx, req->instance_name()); !st.ok())
      return st;
    out->mutable_cache_capabilities()->add_digest_function(
        re::DigestFunction::SHA256);
    out->mutable_cache_capabilities()->set_max_batch_total_size_bytes(64 << 10);
    out->mutable_low_api_version()->set_major(2);
    out->mutable_high_api_version()->set_major(2);
    out->mutable_high_api_version()->set_minor(2);
    return grpc::Status::OK;
  }

private:
  Script &s;
};

class ReapiClientTest : public ::testing::Test {
protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&cas);
    b.RegisterService(&bytestream);
    b.RegisterService(&ac);
    b.RegisterService(&caps);
    server = b.BuildAndStart();
    ASSERT_TRUE(server);
    std::string err;
    auto e = parseEndpoint("grpc://127.0.0.1:" + std::to_string(port) +
                               "/projects/p/instances/default",
                           &err);
    ASSERT_TRUE(e) << err;
    e->headers = {{"x-api-key", "k1"}};
    e->timeout = 3s;
    endpoint = *e;
    client = Client::create(endpoint, &err);
    ASSERT_TRUE(client) << err;
  }
  void TearDown() override {
    script.silent = false;
    server->Shutdown(std::chrono::system_clock::now() + 1s);
  }

  void serve(const std::string &data) {
    std::lock_guard lock(script.mu);
    script.blobs[sha256(data).hex()] = data;
  }

  Script script;
  Cas cas{script};
  ByteStream bytestream{script};
  ActionCache ac{script};
  Caps caps{script};
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  Endpoint endpoint;
  std::unique_ptr<Client> client;
};

// grpcs://: the server's certificate is checked against remote_tls_ca
// (Bazel's worker needs netty's native OpenSSL for TLS, which Debian does
// not ship: the scripted server serves TLS here instead).
TEST(ReapiTls, TheServerIsCheckedAgainstTheConfiguredCa) {
  char dirTemplate[] = "/tmp/linkd-reapi-tls.XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  std::string dir = dirTemplate;
  std::string cmd =
      "cd " + dir +
      " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out "
      "ca.pem -days 1 -subj /CN=test-ca 2>/dev/null && openssl req -newkey "
      "rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost "
      "2>/dev/null && printf 'subjectAltName=IP:127.0.0.1\\n' >san && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out server.pem -days 1 -extfile san 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto pem = [&](const char *name) { return *readFile(dir + "/" + name); };
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({pem("server.key"), pem("server.pem")});
  Script script;
  Caps caps{script};
  Cas cas{script};
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::SslServerCredentials(ssl), &port);
  b.RegisterService(&caps);
  b.RegisterService(&cas);
  auto server = b.BuildAndStart();
  ASSERT_TRUE(server);
  std::string err;
  auto e = parseEndpoint("grpcs://127.0.0.1:" + std::to_string(port), &err);
  ASSERT_TRUE(e) << err;
  e->timeout = 2s;
  e->tlsCa = dir + "/ca.pem";
  auto trusted = Client::create(*e, &err);
  ASSERT_TRUE(trusted) << err;
  std::vector<re::Digest> missing;
  EXPECT_TRUE(trusted->findMissing({digestOf("x")}, missing).ok());
  // The system's roots do not know this CA: no call gets through.
  e->tlsCa.clear();
  auto untrusted = Client::create(*e, &err);
  ASSERT_TRUE(untrusted) << err;
  EXPECT_EQ(untrusted->findMissing({digestOf("x")}, missing).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // A CA file that cannot be read is an error at set-up, not a silent
  // fallback to the system's roots.
  e->tlsCa = dir + "/no-such.pem";
  EXPECT_FALSE(Client::create(*e, &err));
  EXPECT_NE(err.find("no-such.pem"), std::string::npos) << err;
  server->Shutdown(std::chrono::system_clock::now() + 1s);
  std::system(("rm -rf " + dir).c_str());
}

TEST(ReapiEndpoint, UrlsAndTheirInstanceNames) {
  std::string err;
  auto e =
      parseEndpoint("grpc://cache.local:8980/projects/p/instances/x/", &err);
  ASSERT_TRUE(e) << err;
  EXPECT_EQ(e->target, "cache.local:8980");
  EXPECT_EQ(e->instanceName, "projects/p/instances/x");
  EXPECT_FALSE(e->tls);
  e = parseEndpoint("grpcs://remote.buildbuddy.io", &err);
  ASSERT_TRUE(e) << err;
  EXPECT_EQ(e->target, "remote.buildbuddy.io:443");
  EXPECT_TRUE(e->tls);
  e = parseEndpoint("grpcs://[::1]:8980", &err);
  ASSERT_TRUE(e) << err;
  EXPECT_EQ(e->target, "[::1]:8980");
  for (const char *bad : {"grpc://cache.local", "grpc://:80", "http://h:80",
                          "grpc://user:pw@h:80", "grpc://h:80x", "grpc://"})
    EXPECT_FALSE(parseEndpoint(bad, &err)) << bad;
  // The tier's URL parser agrees (lib/store/remote_url.cpp).
  auto tier = parseRemoteUrl("grpcs://cache.example/team?mode=read-only", &err);
  ASSERT_TRUE(tier) << err;
  EXPECT_EQ(tier->port, 443);
  EXPECT_EQ(tier->path, "/team");
  EXPECT_EQ(tier->mode, TierMode::ReadOnly);
  EXPECT_EQ(tier->displayName(), "grpcs://cache.example:443/team");
  for (const char *bad : {"grpc://cache.local", "grpc://u:p@h:1"})
    EXPECT_FALSE(parseRemoteUrl(bad, &err)) << bad;
}

TEST(ReapiEndpoint, HeaderLines) {
  std::vector<std::pair<std::string, std::string>> h;
  std::string err;
  ASSERT_TRUE(parseHeaderLines("# comment\n\nX-BuildBuddy-API-Key=abc=def\n"
                               "authorization: Bearer t0k3n\n",
                               h, &err))
      << err;
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0], (std::pair<std::string, std::string>{"x-buildbuddy-api-key",
                                                       "abc=def"}));
  EXPECT_EQ(h[1], (std::pair<std::string, std::string>{"authorization",
                                                       "Bearer t0k3n"}));
  for (const char *bad :
       {"novalue", "=x", "grpc-timeout=1S", "te: trailers",
        "content-type=text/plain", "x-data-bin=AAAA", "bad name=1"}) {
    h.clear();
    EXPECT_FALSE(parseHeaderLines(bad, h, &err)) << bad;
  }
}

TEST(ReapiEndpoint, EntryActionDigestsAreStableAndPerKey) {
  Digest k1 = sha256("one"), k2 = sha256("two");
  EXPECT_EQ(entryActionDigest(k1).hash(), entryActionDigest(k1).hash());
  EXPECT_NE(entryActionDigest(k1).hash(), entryActionDigest(k2).hash());
  EXPECT_GT(entryActionDigest(k1).size_bytes(), 64);
}

TEST_F(ReapiClientTest, EveryCallCarriesTheInstanceHeadersAndMetadata) {
  Capabilities c;
  ASSERT_TRUE(client->capabilities(c).ok());
  EXPECT_EQ(c.maxBatchBytes, 64u << 10);
  EXPECT_TRUE(c.outputPaths());
  std::vector<re::Digest> missing;
  ASSERT_TRUE(client->findMissing({digestOf("x")}, missing).ok());
  EXPECT_EQ(missing.size(), 1u);
  std::lock_guard lock(script.mu);
  for (const std::string &i : script.instances)
    EXPECT_EQ(i, "projects/p/instances/default");
  auto key = script.headers.find("x-api-key");
  ASSERT_NE(key, script.headers.end());
  EXPECT_EQ(key->second, "k1");
  auto md = script.headers.find(
      "build.bazel.remote.execution.v2.requestmetadata-bin");
  ASSERT_NE(md, script.headers.end());
  re::RequestMetadata parsed;
  ASSERT_TRUE(parsed.ParseFromString(md->second));
  EXPECT_EQ(parsed.tool_details().tool_name(), "linkd");
  EXPECT_EQ(parsed.tool_invocation_id(), client->invocationId());
}

TEST_F(ReapiClientTest, BlobsRoundTripBatchedAndByByteStream) {
  std::string small = "small blob", big(300 << 10, 'b');
  big[12345] = 'x';
  uint64_t sent = 0;
  ASSERT_TRUE(
      client
          ->upload({{digestOf(small), small, {}}, {digestOf(big), big, {}}},
                   &sent)
          .ok());
  EXPECT_GE(sent, big.size());
  std::string out;
  ASSERT_TRUE(client->read(digestOf(small), out).ok());
  EXPECT_EQ(out, small);
  ASSERT_TRUE(client->read(digestOf(big), out).ok());
  EXPECT_EQ(out, big);
  // Not there: NOT_FOUND, nothing returned.
  EXPECT_EQ(client->read(digestOf("absent"), out).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(out.empty());
}

TEST_F(ReapiClientTest, OtherBytesThanTheDigestsAreNeverReturned) {
  std::string data = "the real blob";
  re::Digest d = digestOf(data);
  {
    std::lock_guard lock(script.mu);
    script.blobs[d.hash()] = "the fake blob"; // same size, other bytes
  }
  std::string out;
  EXPECT_EQ(client->read(d, out).error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_TRUE(out.empty());
  // Shorter, and by ByteStream (a server without batch reads).
  script.batchReadUnimplemented = true;
  {
    std::lock_guard lock(script.mu);
    script.blobs[d.hash()] = "the real";
  }
  EXPECT_EQ(client->read(d, out).error_code(), grpc::StatusCode::DATA_LOSS);
  // The right bytes and then more.
  {
    std::lock_guard lock(script.mu);
    script.blobs[d.hash()] = data;
  }
  {
    std::lock_guard lock(script.mu);
    script.extraBytes = "!";
  }
  std::string streamed;
  grpc::Status st = client->stream(d, [&](std::string_view p) {
    streamed.append(p);
    return true;
  });
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_LE(streamed.size(), data.size());
  {
    std::lock_guard lock(script.mu);
    script.extraBytes.clear();
  }
  ASSERT_TRUE(client->read(d, out).ok());
  EXPECT_EQ(out, data);
}

TEST_F(ReapiClientTest, AWrongCommittedSizeIsAFailedUpload) {
  std::string big(200 << 10, 'z');
  script.committedDelta = -1;
  EXPECT_EQ(client->upload({{digestOf(big), big, {}}}).error_code(),
            grpc::StatusCode::DATA_LOSS);
}

TEST_F(ReapiClientTest, BusyAnswersAreRetriedAndSilenceHasADeadline) {
  {
    std::lock_guard lock(script.mu);
    script.unavailableLeft = 2;
  }
  std::vector<re::Digest> missing;
  int before = script.calls;
  EXPECT_TRUE(client->findMissing({digestOf("x")}, missing).ok());
  EXPECT_EQ(script.calls - before, 3);
  script.silent = true;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(client->findMissing({digestOf("x")}, missing).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
}

TEST_F(ReapiClientTest, TheCacheTierStoresEntriesAndRefusesForgedOnes) {
  RemoteTierConfig cfg;
  cfg.url = "grpc://127.0.0.1:" + std::to_string(port) + "/ci";
  cfg.timeout = 3000ms;
  std::string err;
  auto tier = makeCacheBackend(cfg, endpoint, &err);
  ASSERT_TRUE(tier) << err;
  Digest key = sha256("action key");
  std::string value = "manifest bytes", got;
  EXPECT_EQ(tier->getAction(key, got), RemoteStatus::Miss);
  ASSERT_EQ(tier->putAction(key, value), RemoteStatus::Stored);
  ASSERT_EQ(tier->getAction(key, got), RemoteStatus::Hit);
  EXPECT_EQ(got, value);
  // The Action itself is in the CAS, under the digest the entry is keyed by.
  {
    std::lock_guard lock(script.mu);
    EXPECT_TRUE(script.blobs.count(entryActionDigest(key).hash()));
    for (const std::string &i : script.instances)
      EXPECT_EQ(i, "ci"); // the URL's instance wins over the setting's
    // A server that inlines other bytes than the digest it names.
    auto &result = script.actions[entryActionDigest(key).hash()];
    result.mutable_output_files(0)->set_contents("forged manifest");
  }
  EXPECT_EQ(tier->getAction(key, got), RemoteStatus::Error);
  // Blobs: a size the caller does not know cannot be named (a miss).
  Digest d = sha256(value);
  EXPECT_EQ(tier->getBlob(d, kSizeUnknown, got), RemoteStatus::Miss);
  EXPECT_EQ(tier->getBlob(d, value.size(), got), RemoteStatus::Hit);
  EXPECT_EQ(got, value);
  // Other bytes under the digest: handed on as a corrupt hit (the tiers
  // hash it and count it), and the server's "present" is no longer
  // believed, so the next writer uploads it again.
  {
    std::lock_guard lock(script.mu);
    script.blobs[d.hex()] = "manifest bytez";
  }
  EXPECT_EQ(tier->hasBlob(d, value.size()), RemoteStatus::Hit);
  EXPECT_EQ(tier->getBlob(d, value.size(), got), RemoteStatus::Hit);
  EXPECT_NE(sha256(got), d);
  EXPECT_EQ(tier->hasBlob(d, value.size()), RemoteStatus::Miss);
  EXPECT_EQ(tier->putBlob(d, value), RemoteStatus::Stored);
  EXPECT_EQ(tier->hasBlob(d, value.size()), RemoteStatus::Hit);
  EXPECT_EQ(tier->getBlob(d, value.size(), got), RemoteStatus::Hit);
  EXPECT_EQ(got, value);
}

} // namespace
} // namespace linkd::reapi
