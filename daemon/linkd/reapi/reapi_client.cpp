// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/reapi/reapi_client.h"

#include "util/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

namespace linkd::reapi {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kMetadataHeader =
    "build.bazel.remote.execution.v2.requestmetadata-bin";
// ByteStream pieces; also what a batch leaves for its framing.
constexpr size_t kChunkBytes = 1 << 20;
constexpr uint64_t kBatchOverhead = 64 << 10;
// A server that names no batch limit gets gRPC's default message size.
constexpr uint64_t kDefaultBatchBytes = 4 << 20;

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

std::string randomUuid() {
  std::random_device rd;
  unsigned char b[16];
  for (unsigned char &c : b)
    c = static_cast<unsigned char>(rd());
  b[6] = (b[6] & 0x0f) | 0x40; // version 4
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
  static const char *hexDigits = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      s += '-';
    s += hexDigits[b[i] >> 4];
    s += hexDigits[b[i] & 15];
  }
  return s;
}

bool retryable(grpc::StatusCode c) {
  return c == grpc::StatusCode::UNAVAILABLE ||
         c == grpc::StatusCode::RESOURCE_EXHAUSTED ||
         c == grpc::StatusCode::ABORTED;
}

grpc::Status dataLoss(const re::Digest &d, const std::string &what) {
  return {grpc::StatusCode::DATA_LOSS, "blob " + d.hash() + "/" +
                                           std::to_string(d.size_bytes()) +
                                           ": " + what};
}

// Checks bytes as they arrive against the digest asked for.
struct Verifier {
  explicit Verifier(const re::Digest &d) : want(d) {}
  const re::Digest &want;
  Sha256 hash;
  uint64_t got = 0;
  bool add(std::string_view piece) {
    got += piece.size();
    if (got > static_cast<uint64_t>(want.size_bytes()))
      return false;
    hash.update(piece);
    return true;
  }
  grpc::Status finish() {
    if (got != static_cast<uint64_t>(want.size_bytes()))
      return dataLoss(want,
                      "the server sent " + std::to_string(got) + " bytes");
    if (hash.finish().hex() != want.hash())
      return dataLoss(want, "the server sent other bytes (SHA-256 differs)");
    return grpc::Status::OK;
  }
};

} // namespace

std::string codeName(grpc::StatusCode code) {
  static const char *names[] = {"OK",
                                "CANCELLED",
                                "UNKNOWN",
                                "INVALID_ARGUMENT",
                                "DEADLINE_EXCEEDED",
                                "NOT_FOUND",
                                "ALREADY_EXISTS",
                                "PERMISSION_DENIED",
                                "RESOURCE_EXHAUSTED",
                                "FAILED_PRECONDITION",
                                "ABORTED",
                                "OUT_OF_RANGE",
                                "UNIMPLEMENTED",
                                "INTERNAL",
                                "UNAVAILABLE",
                                "DATA_LOSS",
                                "UNAUTHENTICATED"};
  auto i = static_cast<size_t>(code);
  return i < std::size(names) ? names[i] : "status " + std::to_string(i);
}

std::string Endpoint::displayName() const {
  return (tls ? "grpcs://" : "grpc://") + target +
         (instanceName.empty() ? "" : "/" + instanceName);
}

std::optional<Endpoint> parseEndpoint(const std::string &url,
                                      std::string *error) {
  Endpoint e;
  e.url = url;
  std::string rest;
  if (url.starts_with("grpc://")) {
    rest = url.substr(7);
  } else if (url.starts_with("grpcs://")) {
    rest = url.substr(8);
    e.tls = true;
  } else {
    *error = "'" + url + "': expected grpc://host:port or grpcs://host:port";
    return std::nullopt;
  }
  if (size_t q = rest.find('?'); q != std::string::npos)
    rest = rest.substr(0, q); // the tier's own options (remote_url.cpp)
  size_t slash = rest.find('/');
  e.target = rest.substr(0, slash);
  if (slash != std::string::npos) {
    e.instanceName = rest.substr(slash + 1);
    while (!e.instanceName.empty() && e.instanceName.back() == '/')
      e.instanceName.pop_back();
  }
  if (e.target.find('@') != std::string::npos) {
    *error = "'" + url +
             "': credentials go in remote_header or remote_header_file, "
             "not in the URL";
    return std::nullopt;
  }
  bool bracketed = !e.target.empty() && e.target[0] == '[';
  if (e.tls && !e.target.empty() &&
      (bracketed ? e.target.ends_with("]")
                 : e.target.find(':') == std::string::npos))
    e.target += ":443"; // grpcs://remote.buildbuddy.io
  size_t colon = e.target.rfind(':');
  if (e.target.empty() ||
      (bracketed && e.target.find(']') == std::string::npos))
    colon = std::string::npos;
  if (colon == std::string::npos || colon == 0 ||
      (bracketed && colon < e.target.find(']')) ||
      colon + 1 == e.target.size() ||
      !std::all_of(e.target.begin() + static_cast<long>(colon) + 1,
                   e.target.end(), [](char c) { return std::isdigit(c); })) {
    *error = "'" + url + "': expected host:port after the scheme";
    return std::nullopt;
  }
  return e;
}

bool parseHeaderLines(const std::string &text,
                      std::vector<std::pair<std::string, std::string>> &out,
                      std::string *error) {
  size_t pos = 0;
  int lineNo = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = trim(std::string_view(text).substr(
        pos, nl == std::string::npos ? std::string::npos : nl - pos));
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++lineNo;
    if (line.empty() || line[0] == '#')
      continue;
    size_t eq = line.find('='), colon = line.find(':');
    size_t sep = std::min(eq, colon);
    if (sep == std::string::npos || sep == 0) {
      *error = "header line " + std::to_string(lineNo) +
               ": expected NAME=VALUE or name: value";
      return false;
    }
    std::string name = trim(std::string_view(line).substr(0, sep));
    std::string value = trim(std::string_view(line).substr(sep + 1));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    bool nameOk =
        !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                 c == '_' || c == '.';
        });
    if (!nameOk || name.starts_with("grpc-") || name == "content-type" ||
        name == "te" || name == "user-agent") {
      *error = "header line " + std::to_string(lineNo) + ": '" + name +
               "' cannot be sent as a header";
      return false;
    }
    if (name.ends_with("-bin")) {
      *error = "header line " + std::to_string(lineNo) + ": '" + name +
               "' is a binary header; give text headers only";
      return false;
    }
    out.emplace_back(std::move(name), std::move(value));
  }
  return true;
}

bool endpointSettings(const Config &settings, Endpoint &base,
                      std::string *error) {
  base.instanceName = settings.remoteInstanceName;
  base.tlsCa = settings.remoteTlsCa;
  base.tlsCert = settings.remoteTlsCert;
  base.tlsKey = settings.remoteTlsKey;
  base.headers.clear();
  std::string lines;
  for (const std::string &h : settings.remoteHeaders)
    lines += h + "\n";
  std::string why;
  if (!parseHeaderLines(lines, base.headers, &why)) {
    *error = "remote_header: " + why;
    return false;
  }
  if (!settings.remoteHeaderFile.empty()) {
    Result<std::string> text = readFile(settings.remoteHeaderFile, 1 << 20);
    if (!text) {
      *error = "cannot read the remote_header_file " + text.error();
      return false;
    }
    if (!parseHeaderLines(*text, base.headers, &why)) {
      *error = settings.remoteHeaderFile + ": " + why;
      return false;
    }
  }
  return true;
}

re::Digest toProto(const Digest &d, uint64_t size) {
  re::Digest p;
  p.set_hash(d.hex());
  p.set_size_bytes(static_cast<int64_t>(size));
  return p;
}

std::optional<Digest> fromProto(const re::Digest &d) {
  if (d.size_bytes() < 0)
    return std::nullopt;
  return Digest::fromHex(d.hash());
}

re::Digest digestOf(std::string_view data) {
  return toProto(sha256(data), data.size());
}

std::unique_ptr<Client> Client::create(const Endpoint &endpoint,
                                       std::string *error) {
  std::unique_ptr<Client> c(new Client(endpoint));
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (endpoint.tls) {
    grpc::SslCredentialsOptions ssl;
    for (auto [file, field] :
         {std::pair{&endpoint.tlsCa, &ssl.pem_root_certs},
          std::pair{&endpoint.tlsCert, &ssl.pem_cert_chain},
          std::pair{&endpoint.tlsKey, &ssl.pem_private_key}}) {
      if (file->empty())
        continue;
      Result<std::string> pem = readFile(*file, 1 << 20);
      if (!pem) {
        *error = "cannot read " + pem.error();
        return nullptr;
      }
      *field = *pem;
    }
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  // A server that stops answering mid-call is given up within 20 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING,
                 std::string("linkd/") + LINKD_VERSION);
  c->chan = grpc::CreateCustomChannel("dns:///" + endpoint.target, creds, args);
  c->cas = re::ContentAddressableStorage::NewStub(c->chan);
  c->ac = re::ActionCache::NewStub(c->chan);
  c->caps = re::Capabilities::NewStub(c->chan);
  c->bytestream = google::bytestream::ByteStream::NewStub(c->chan);
  c->invocation = randomUuid();
  re::RequestMetadata md;
  md.mutable_tool_details()->set_tool_name("linkd");
  md.mutable_tool_details()->set_tool_version(LINKD_VERSION);
  md.set_tool_invocation_id(c->invocation);
  md.set_action_mnemonic("Link");
  c->metadata = md.SerializeAsString();
  return c;
}

void Client::prepare(grpc::ClientContext &ctx,
                     std::chrono::milliseconds timeout,
                     const std::string &actionId) const {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  for (const auto &[name, value] : ep.headers)
    ctx.AddMetadata(name, value);
  if (actionId.empty()) {
    ctx.AddMetadata(kMetadataHeader, metadata);
  } else {
    re::RequestMetadata md;
    md.ParseFromString(metadata);
    md.set_action_id(actionId);
    ctx.AddMetadata(kMetadataHeader, md.SerializeAsString());
  }
}

grpc::Status Client::withRetries(
    const std::function<grpc::Status(grpc::ClientContext &)> &call,
    const std::string &actionId) const {
  auto end = Clock::now() + ep.timeout;
  std::chrono::milliseconds backoff{100};
  std::mt19937 jitter(std::random_device{}());
  for (int attempt = 0;; ++attempt) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - Clock::now());
    if (left.count() <= 0)
      return {grpc::StatusCode::DEADLINE_EXCEEDED,
              "no answer within " + std::to_string(ep.timeout.count()) + " ms"};
    grpc::ClientContext ctx;
    prepare(ctx, left, actionId);
    grpc::Status st = call(ctx);
    if (st.ok() || !retryable(st.error_code()) || attempt >= 4)
      return st;
    auto pause = backoff / 2 + std::chrono::milliseconds(
                                   jitter() % (backoff.count() / 2 + 1));
    if (Clock::now() + pause >= end)
      return st;
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

grpc::Status Client::capabilities(Capabilities &out) {
  {
    std::lock_guard lock(capsMu);
    if (known) {
      out = *known;
      return grpc::Status::OK;
    }
  }
  re::GetCapabilitiesRequest req;
  req.set_instance_name(ep.instanceName);
  re::ServerCapabilities sc;
  grpc::Status st = withRetries([&](grpc::ClientContext &ctx) {
    return caps->GetCapabilities(&ctx, req, &sc);
  });
  if (!st.ok())
    return st;
  Capabilities c;
  const auto &cache = sc.cache_capabilities();
  c.sha256 =
      std::find(cache.digest_function().begin(), cache.digest_function().end(),
                re::DigestFunction::SHA256) != cache.digest_function().end();
  c.maxBatchBytes = static_cast<uint64_t>(
      std::max<int64_t>(0, cache.max_batch_total_size_bytes()));
  c.actionCacheUpdates =
      cache.action_cache_update_capabilities().update_enabled();
  c.execution = sc.execution_capabilities().exec_enabled() &&
                sc.execution_capabilities().digest_function() ==
                    re::DigestFunction::SHA256;
  if (sc.has_low_api_version()) {
    c.lowMajor = sc.low_api_version().major();
    c.lowMinor = sc.low_api_version().minor();
  }
  if (sc.has_high_api_version()) {
    c.highMajor = sc.high_api_version().major();
    c.highMinor = sc.high_api_version().minor();
  } else if (sc.has_deprecated_api_version()) {
    c.highMajor = c.lowMajor = sc.deprecated_api_version().major();
    c.highMinor = c.lowMinor = sc.deprecated_api_version().minor();
  }
  if (c.lowMajor > 2 || c.highMajor < 2)
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "the server speaks REAPI " + std::to_string(c.lowMajor) + "." +
                std::to_string(c.lowMinor) + " to " +
                std::to_string(c.highMajor) + "." +
                std::to_string(c.highMinor) + ", linkd speaks 2.x"};
  if (!c.sha256)
    return {grpc::StatusCode::FAILED_PRECONDITION,
            "the server's CAS does not take SHA-256 digests"};
  std::lock_guard lock(capsMu);
  known = c;
  out = c;
  return grpc::Status::OK;
}

uint64_t Client::batchLimit() {
  Capabilities c;
  if (!capabilities(c).ok() || c.maxBatchBytes == 0)
    return kDefaultBatchBytes - kBatchOverhead;
  return std::min<uint64_t>(c.maxBatchBytes, 64 << 20) -
         std::min<uint64_t>(c.maxBatchBytes / 2, kBatchOverhead);
}

grpc::Status Client::findMissing(const std::vector<re::Digest> &digests,
                                 std::vector<re::Digest> &missing) {
  missing.clear();
  // Requests of at most 10,000 digests (~1 MB).
  for (size_t at = 0; at < digests.size(); at += 10000) {
    re::FindMissingBlobsRequest req;
    req.set_instance_name(ep.instanceName);
    for (size_t i = at; i < std::min(digests.size(), at + 10000); ++i)
      *req.add_blob_digests() = digests[i];
    re::FindMissingBlobsResponse resp;
    grpc::Status st = withRetries([&](grpc::ClientContext &ctx) {
      return cas->FindMissingBlobs(&ctx, req, &resp);
    });
    if (!st.ok())
      return st;
    missing.insert(missing.end(), resp.missing_blob_digests().begin(),
                   resp.missing_blob_digests().end());
  }
  return grpc::Status::OK;
}

grpc::Status Client::upload(const std::vector<UploadBlob> &blobs,
                            uint64_t *bytesSent) {
  uint64_t limit = batchLimit();
  std::vector<const UploadBlob *> batch;
  uint64_t batchBytes = 0;
  for (const UploadBlob &b : blobs) {
    auto size = static_cast<uint64_t>(b.digest.size_bytes());
    if (size > limit) {
      if (grpc::Status st = byteStreamUpload(b, bytesSent); !st.ok())
        return st;
      continue;
    }
    if (noBatchUpdate) {
      if (grpc::Status st = byteStreamUpload(b, bytesSent); !st.ok())
        return st;
      continue;
    }
    if (batchBytes + size > limit) {
      if (grpc::Status st = batchUpload(batch, bytesSent); !st.ok())
        return st;
      batch.clear();
      batchBytes = 0;
    }
    batch.push_back(&b);
    batchBytes += size;
  }
  return batch.empty() ? grpc::Status::OK : batchUpload(batch, bytesSent);
}

grpc::Status Client::batchUpload(const std::vector<const UploadBlob *> &blobs,
                                 uint64_t *bytesSent) {
  re::BatchUpdateBlobsRequest req;
  req.set_instance_name(ep.instanceName);
  for (const UploadBlob *b : blobs) {
    auto *r = req.add_requests();
    *r->mutable_digest() = b->digest;
    if (b->path.empty()) {
      r->set_data(b->data);
    } else {
      Result<std::string> data =
          readFile(b->path, static_cast<uint64_t>(b->digest.size_bytes()) + 1);
      if (!data ||
          data->size() != static_cast<uint64_t>(b->digest.size_bytes()))
        return {grpc::StatusCode::FAILED_PRECONDITION,
                data ? b->path + " changed while it was uploaded"
                     : "cannot read " + data.error()};
      r->set_data(std::move(*data));
    }
  }
  re::BatchUpdateBlobsResponse resp;
  grpc::Status st = withRetries([&](grpc::ClientContext &ctx) {
    return cas->BatchUpdateBlobs(&ctx, req, &resp);
  });
  if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    noBatchUpdate = true;
    for (const UploadBlob *b : blobs)
      if (grpc::Status one = byteStreamUpload(*b, bytesSent); !one.ok())
        return one;
    return grpc::Status::OK;
  }
  if (!st.ok())
    return st;
  for (const auto &r : resp.responses())
    if (r.status().code() != 0)
      return {static_cast<grpc::StatusCode>(r.status().code()),
              "upload of " + r.digest().hash() + ": " + r.status().message()};
  if (resp.responses_size() != req.requests_size())
    return {grpc::StatusCode::INTERNAL,
            "the server answered " + std::to_string(resp.responses_size()) +
                " of " + std::to_string(req.requests_size()) + " uploads"};
  if (bytesSent)
    *bytesSent += req.ByteSizeLong();
  return grpc::Status::OK;
}

grpc::Status Client::byteStreamUpload(const UploadBlob &b,
                                      uint64_t *bytesSent) {
  UniqueFd fd;
  if (!b.path.empty()) {
    fd = UniqueFd(::open(b.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid())
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "cannot read " + b.path + ": " + std::strerror(errno)};
  }
  std::string resource =
      (ep.instanceName.empty() ? "" : ep.instanceName + "/") + "uploads/" +
      randomUuid() + "/blobs/" + b.digest.hash() + "/" +
      std::to_string(b.digest.size_bytes());
  auto size = static_cast<uint64_t>(b.digest.size_bytes());
  // One attempt streams the whole blob; a retry starts again from 0 (the
  // server's partial upload is per resource name, which is new each time).
  return withRetries([&](grpc::ClientContext &ctx) -> grpc::Status {
    google::bytestream::WriteResponse resp;
    auto writer = bytestream->Write(&ctx, &resp);
    google::bytestream::WriteRequest req;
    std::string buf;
    uint64_t off = 0;
    bool first = true;
    do {
      size_t n =
          static_cast<size_t>(std::min<uint64_t>(kChunkBytes, size - off));
      if (b.path.empty()) {
        req.set_data(b.data.substr(static_cast<size_t>(off), n));
      } else {
        buf.resize(n);
        ssize_t got = pread(fd.get(), buf.data(), n, static_cast<off_t>(off));
        if (got != static_cast<ssize_t>(n)) {
          ctx.TryCancel();
          writer->Finish();
          return {grpc::StatusCode::FAILED_PRECONDITION,
                  b.path + " changed while it was uploaded"};
        }
        req.set_data(buf);
      }
      req.set_resource_name(first ? resource : "");
      req.set_write_offset(static_cast<int64_t>(off));
      off += n;
      req.set_finish_write(off == size);
      first = false;
      if (!writer->Write(req))
        break; // Finish says why (or the blob was already there)
      if (bytesSent)
        *bytesSent += n;
    } while (off < size);
    writer->WritesDone();
    grpc::Status st = writer->Finish();
    if (!st.ok())
      return st;
    // A server that already had the blob may end the stream early with
    // the full size as committed.
    if (resp.committed_size() != static_cast<int64_t>(size))
      return {grpc::StatusCode::DATA_LOSS,
              "the server committed " + std::to_string(resp.committed_size()) +
                  " of " + std::to_string(size) + " bytes of " +
                  b.digest.hash()};
    return grpc::Status::OK;
  });
}

std::string Client::readResource(const re::Digest &d) const {
  return (ep.instanceName.empty() ? "" : ep.instanceName + "/") + "blobs/" +
         d.hash() + "/" + std::to_string(d.size_bytes());
}

grpc::Status Client::read(const re::Digest &d, std::string &out) {
  out.clear();
  if (!noBatchRead && static_cast<uint64_t>(d.size_bytes()) <= batchLimit()) {
    re::BatchReadBlobsRequest req;
    req.set_instance_name(ep.instanceName);
    *req.add_digests() = d;
    re::BatchReadBlobsResponse resp;
    grpc::Status st = withRetries([&](grpc::ClientContext &ctx) {
      return cas->BatchReadBlobs(&ctx, req, &resp);
    });
    if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      noBatchRead = true;
      return read(d, out);
    }
    if (!st.ok())
      return st;
    if (resp.responses_size() != 1 ||
        resp.responses(0).digest().hash() != d.hash())
      return dataLoss(d, "the server answered another read");
    const auto &r = resp.responses(0);
    if (r.status().code() != 0)
      return {static_cast<grpc::StatusCode>(r.status().code()),
              r.status().message()};
    Verifier v(d);
    if (!v.add(r.data()))
      return dataLoss(d, "the server sent more bytes than the blob has");
    if (grpc::Status vs = v.finish(); !vs.ok())
      return vs;
    out = r.data();
    return grpc::Status::OK;
  }
  return stream(d, [&](std::string_view piece) {
    out.append(piece);
    return true;
  });
}

grpc::Status Client::stream(const re::Digest &d,
                            const std::function<bool(std::string_view)> &sink) {
  // No retries: what the sink has taken cannot be taken back.
  grpc::ClientContext ctx;
  prepare(ctx, ep.timeout);
  google::bytestream::ReadRequest req;
  req.set_resource_name(readResource(d));
  auto reader = bytestream->Read(&ctx, req);
  google::bytestream::ReadResponse piece;
  Verifier v(d);
  bool cancelled = false, tooLong = false;
  while (reader->Read(&piece)) {
    if (!v.add(piece.data())) {
      tooLong = true;
      ctx.TryCancel();
      break;
    }
    if (!sink(piece.data())) {
      cancelled = true;
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status st = reader->Finish();
  if (tooLong)
    return dataLoss(d, "the server sent more bytes than the blob has");
  if (cancelled)
    return {grpc::StatusCode::CANCELLED, "the reader stopped"};
  if (!st.ok())
    return st;
  return v.finish();
}

grpc::Status
Client::getActionResult(const re::Digest &action,
                        const std::vector<std::string> &inlineFiles,
                        re::ActionResult &out) {
  re::GetActionResultRequest req;
  req.set_instance_name(ep.instanceName);
  *req.mutable_action_digest() = action;
  req.set_inline_stdout(true);
  req.set_inline_stderr(true);
  for (const std::string &f : inlineFiles)
    req.add_inline_output_files(f);
  return withRetries([&](grpc::ClientContext &ctx) {
    return ac->GetActionResult(&ctx, req, &out);
  });
}

grpc::Status Client::updateActionResult(const re::Digest &action,
                                        const re::ActionResult &result) {
  re::UpdateActionResultRequest req;
  req.set_instance_name(ep.instanceName);
  *req.mutable_action_digest() = action;
  *req.mutable_action_result() = result;
  re::ActionResult stored;
  return withRetries([&](grpc::ClientContext &ctx) {
    return ac->UpdateActionResult(&ctx, req, &stored);
  });
}

} // namespace linkd::reapi
