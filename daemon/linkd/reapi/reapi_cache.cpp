// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/reapi/reapi_cache.h"

#include <mutex>
#include <set>

namespace linkd::reapi {

namespace {

constexpr const char *kEntryFile = "linkd-entry";
constexpr const char *kEntrySalt = "linkd action entry v1";

std::string serializedAction(const Digest &key) {
  re::Action a;
  a.mutable_command_digest()->set_hash(key.hex());
  a.mutable_command_digest()->set_size_bytes(0);
  a.set_salt(kEntrySalt);
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    a.SerializeToCodedStream(&coded);
  }
  return out;
}

class CacheBackend : public RemoteBackend {
public:
  explicit CacheBackend(std::unique_ptr<Client> c) : client(std::move(c)) {}

  RemoteStatus getBlob(const Digest &d, uint64_t size,
                       std::string &out) override {
    if (size == kSizeUnknown)
      return unknownSize(d);
    grpc::Status st = client->read(toProto(d, size), out);
    noteRead(d, st);
    if (st.error_code() == grpc::StatusCode::DATA_LOSS) {
      // Other bytes than the digest's: a corrupt blob, which the tiers
      // count and replace (remote_tiers.h).
      noteError(st.error_message());
      out.clear();
      return RemoteStatus::Hit;
    }
    return status(st, RemoteStatus::Hit);
  }

  RemoteStatus
  streamBlob(const Digest &d, uint64_t size,
             const std::function<bool(std::string_view)> &sink) override {
    if (size == kSizeUnknown)
      return unknownSize(d);
    grpc::Status st = client->stream(toProto(d, size), sink);
    noteRead(d, st);
    if (st.error_code() == grpc::StatusCode::DATA_LOSS) {
      noteError(st.error_message());
      return RemoteStatus::Hit; // the tiers' own hash finds it corrupt
    }
    return status(st, RemoteStatus::Hit);
  }

  RemoteStatus hasBlob(const Digest &d, uint64_t size) override {
    if (size == kSizeUnknown)
      return unknownSize(d);
    if (isSuspect(d))
      return RemoteStatus::Miss; // upload it again
    std::vector<re::Digest> missing;
    grpc::Status st = client->findMissing({toProto(d, size)}, missing);
    if (!st.ok())
      return status(st, RemoteStatus::Hit);
    return missing.empty() ? RemoteStatus::Hit : RemoteStatus::Miss;
  }

  RemoteStatus putBlob(const Digest &d, std::string_view data) override {
    UploadBlob b{toProto(d, data.size()), std::string(data), {}};
    grpc::Status st = client->upload({b});
    if (st.ok()) {
      std::lock_guard lock(suspectMu);
      suspect.erase(d);
    }
    return status(st, RemoteStatus::Stored);
  }

  RemoteStatus getAction(const Digest &key, std::string &out) override {
    re::ActionResult result;
    grpc::Status st =
        client->getActionResult(entryActionDigest(key), {kEntryFile}, result);
    if (!st.ok())
      return status(st, RemoteStatus::Hit);
    const re::OutputFile *entry = nullptr;
    for (const re::OutputFile &f : result.output_files())
      if (f.path() == kEntryFile)
        entry = &f;
    if (!entry || !fromProto(entry->digest())) {
      noteError("the action cache's entry for " + key.hex() + " names no " +
                kEntryFile + " blob");
      return RemoteStatus::Miss;
    }
    if (!entry->contents().empty() || entry->digest().size_bytes() == 0) {
      if (digestOf(entry->contents()).hash() != entry->digest().hash()) {
        noteError("the action cache inlined other bytes than " +
                  entry->digest().hash());
        return RemoteStatus::Error;
      }
      out = entry->contents();
      return RemoteStatus::Hit;
    }
    st = client->read(entry->digest(), out);
    // A result whose blob is gone (evicted) is a miss, as with bazel-remote.
    return status(st, RemoteStatus::Hit);
  }

  RemoteStatus putAction(const Digest &key, std::string_view value) override {
    std::string action = serializedAction(key);
    UploadBlob entry{digestOf(value), std::string(value), {}};
    UploadBlob actionBlob{digestOf(action), action, {}};
    grpc::Status st = client->upload({entry, actionBlob});
    if (!st.ok())
      return status(st, RemoteStatus::Stored);
    re::ActionResult result;
    re::OutputFile *f = result.add_output_files();
    f->set_path(kEntryFile);
    *f->mutable_digest() = entry.digest;
    result.set_exit_code(0);
    return status(client->updateActionResult(actionBlob.digest, result),
                  RemoteStatus::Stored);
  }

private:
  // A blob the server listed but could not serve intact: it sent other
  // bytes (DATA_LOSS, ours) or said its copy is bad (INTERNAL: Bazel's
  // worker checks the digest as it reads). Until it is written again, the
  // server's "present" is not believed for it, so the next writer replaces
  // it instead of skipping the upload.
  void noteRead(const Digest &d, const grpc::Status &st) {
    if (st.error_code() != grpc::StatusCode::DATA_LOSS &&
        st.error_code() != grpc::StatusCode::INTERNAL)
      return;
    std::lock_guard lock(suspectMu);
    if (suspect.size() >= 4096)
      suspect.erase(suspect.begin());
    suspect.insert(d);
  }
  bool isSuspect(const Digest &d) {
    std::lock_guard lock(suspectMu);
    return suspect.count(d) > 0;
  }

  RemoteStatus unknownSize(const Digest &d) {
    // An entry written before sizes were kept: not addressable here.
    noteError("blob " + d.hex() + " of unknown size cannot be named in REAPI");
    return RemoteStatus::Miss;
  }

  RemoteStatus status(const grpc::Status &st, RemoteStatus ok) {
    if (st.ok())
      return ok;
    switch (st.error_code()) {
    case grpc::StatusCode::NOT_FOUND:
      return RemoteStatus::Miss;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      noteError(client->endpoint().displayName() + ": " + st.error_message());
      return RemoteStatus::Timeout;
    default:
      noteError(codeName(st.error_code()) + ": " + st.error_message());
      return RemoteStatus::Error;
    }
  }

  std::unique_ptr<Client> client;
  std::mutex suspectMu;
  std::set<Digest> suspect;
};

} // namespace

re::Digest entryActionDigest(const Digest &key) {
  return digestOf(serializedAction(key));
}

std::unique_ptr<RemoteBackend> makeCacheBackend(const RemoteTierConfig &cfg,
                                                const Endpoint &base,
                                                std::string *error) {
  auto parsed = parseEndpoint(cfg.url, error);
  if (!parsed)
    return nullptr;
  Endpoint e = base;
  e.url = parsed->url;
  e.target = parsed->target;
  e.tls = parsed->tls;
  if (!parsed->instanceName.empty())
    e.instanceName = parsed->instanceName;
  e.connectTimeout = cfg.connectTimeout;
  e.timeout = cfg.timeout;
  auto client = Client::create(e, error);
  if (!client)
    return nullptr;
  return std::make_unique<CacheBackend>(std::move(client));
}

} // namespace linkd::reapi
