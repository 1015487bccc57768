// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_node/offload_messages.h"

#include "daemon/linkd/farm_node/offload_request.h"
#include "log/log_format.h"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace linkd {
namespace {

std::string replyBytes(const SandboxView::Answer &a) {
  std::string msg(sizeof(a.reply) + a.real.size(), '\0');
  std::memcpy(msg.data(), &a.reply, sizeof(a.reply));
  std::memcpy(msg.data() + sizeof(a.reply), a.real.data(), a.real.size());
  return msg;
}

} // namespace

OffloadMessages::OffloadMessages(BlobStore &blobs, BlobOwners &owners,
                                 uint64_t id, std::string client,
                                 std::string scratchDir,
                                 uint64_t maxRequestBytes, Send send)
    : blobs(blobs), owners(owners), id(id), client(std::move(client)),
      maxRequestBytes(maxRequestBytes), send(std::move(send)),
      files(
          BlobFiles{[this](const Digest &d) {
                      // Stored, and this client's to use (blob_owners.h).
                      return this->blobs.has(d) &&
                             this->owners.owns(this->client, d);
                    },
                    [this](const Digest &d) { return this->blobs.pathOf(d); }},
          std::move(scratchDir)) {}

OffloadMessages::~OffloadMessages() { blobs.releaseUploads(id); }

grpc::Status OffloadMessages::fail(grpc::StatusCode code,
                                   const std::string &msg) const {
  spdlog::warn("farm link id={} client={} {}: {}", id, client,
               code == grpc::StatusCode::RESOURCE_EXHAUSTED
                   ? "RESOURCE_EXHAUSTED"
                   : "failed",
               msg);
  return grpc::Status(code, msg);
}

bool OffloadMessages::addFact(const v1::PathFact &f) {
  if (f.kind() == v1::PathFact::FILE && !files.knows(f.path())) {
    claimedBytes += f.size();
    if (claimedBytes > maxRequestBytes)
      return false;
  }
  files.addFact(f);
  return true;
}

void OffloadMessages::askForBlobs(const std::vector<Digest> &digests,
                                  bool alongside) {
  v1::OffloadDown m;
  for (const Digest &d : digests) {
    if (askedBlobs.count(d) || (!alongside && awaitedBlobs.count(d)))
      continue;
    std::optional<uint64_t> offset =
        blobs.beginUpload(d, client, id, alongside);
    if (!offset) {
      awaitedBlobs.emplace(d, std::chrono::steady_clock::now());
      ++awaitedCount;
      spdlog::debug("farm link id={} waits for another link's upload of {}", id,
                    d.hex());
      continue;
    }
    awaitedBlobs.erase(d);
    askedBlobs.insert(d);
    auto *w = m.mutable_need_blobs()->add_blobs();
    w->set_digest(std::string(d.raw()));
    w->set_offset(*offset);
    resumed += w->offset();
    spdlog::debug("farm link id={} needs blob {} from {}", id, d.hex(),
                  w->offset());
  }
  if (m.has_need_blobs()) {
    ++trips;
    toClient(m);
  }
}

grpc::Status OffloadMessages::start(const v1::OffloadUp &first) {
  if (!first.has_start())
    return fail(grpc::StatusCode::INVALID_ARGUMENT,
                "the first message must be OffloadStart");
  request = first.start().link();
  if (std::string e = validateOffloadedLink(request); !e.empty())
    return fail(grpc::StatusCode::INVALID_ARGUMENT, e);
  for (const v1::PathFact &f : first.start().facts())
    if (!addFact(f))
      return fail(grpc::StatusCode::RESOURCE_EXHAUSTED,
                  "the link's inputs (" + std::to_string(claimedBytes) +
                      " bytes claimed) exceed the node's limit of " +
                      std::to_string(maxRequestBytes) + " bytes");
  if (std::string e = files.open(); !e.empty())
    return fail(grpc::StatusCode::INTERNAL, e);
  // Missing blobs are asked for in the client's order (the command line's,
  // roughly the order the link reads them), so the link can start on the
  // first while the rest arrive.
  std::vector<Digest> missing = files.missingBlobs();
  std::set<Digest> missingSet(missing.begin(), missing.end()), queued;
  std::vector<Digest> ordered;
  for (const v1::PathFact &f : first.start().facts()) {
    auto d = f.kind() == v1::PathFact::FILE && f.likely_read()
                 ? Digest::fromRaw(f.digest())
                 : std::nullopt;
    if (!d)
      continue;
    if (!missingSet.count(*d))
      present.insert(*d);
    else if (queued.insert(*d).second)
      ordered.push_back(*d);
  }
  askForBlobs(ordered);
  return grpc::Status::OK;
}

grpc::Status OffloadMessages::take(v1::OffloadUp &m) {
  if (m.has_facts()) {
    for (const v1::PathFact &f : m.facts().facts()) {
      if (!askedPaths.erase(f.path()))
        continue; // only answers to our questions
      progressAt = std::chrono::steady_clock::now();
      if (!addFact(f))
        return fail(grpc::StatusCode::RESOURCE_EXHAUSTED,
                    "the link's inputs exceed the node's limit of " +
                        std::to_string(maxRequestBytes) + " bytes");
    }
    return grpc::Status::OK;
  }
  if (m.has_blob())
    return takeBlob(*m.mutable_blob());
  return fail(grpc::StatusCode::INVALID_ARGUMENT,
              "unexpected message from the client");
}

grpc::Status OffloadMessages::takeBlob(v1::BlobChunk &chunk) {
  auto d = Digest::fromRaw(chunk.digest());
  if (!d || !askedBlobs.count(*d))
    return fail(grpc::StatusCode::INVALID_ARGUMENT,
                "a blob chunk the node did not ask for");
  std::optional<std::string> raw;
  if (chunk.compressed())
    raw = decompressChunk(chunk.data());
  else if (chunk.data().size() <= 4 * kFarmChunkBytes)
    raw = std::move(*chunk.mutable_data());
  if (!raw)
    return fail(grpc::StatusCode::INVALID_ARGUMENT,
                "a malformed blob chunk for " + d->hex());
  receivedBytes += raw->size();
  if (receivedBytes > maxRequestBytes)
    return fail(grpc::StatusCode::RESOURCE_EXHAUSTED,
                "uploads exceed the node's limit of " +
                    std::to_string(maxRequestBytes) + " bytes");
  if (!blobs.append(*d, id, chunk.offset(), *raw))
    return fail(grpc::StatusCode::INVALID_ARGUMENT,
                "blob " + d->hex() + ": chunk at offset " +
                    std::to_string(chunk.offset()) + " does not continue it");
  if ((bytesSinceProgress += raw->size()) >= BlobStore::kProgressBytes ||
      chunk.last()) {
    bytesSinceProgress = 0;
    progressAt = std::chrono::steady_clock::now();
  }
  if (chunk.offset() == 0)
    arriving[*d] = std::make_unique<Sha256Thread>();
  auto hashing = arriving.find(*d);
  if (hashing != arriving.end())
    hashing->second->update(std::move(*raw));
  if (chunk.last()) {
    std::string e;
    std::optional<Digest> hashed;
    if (hashing != arriving.end()) {
      hashed = hashing->second->finish();
      arriving.erase(hashing);
    }
    if (!blobs.commit(*d, id, &e, hashed, [&] { owners.add(client, *d); }))
      return fail(grpc::StatusCode::INVALID_ARGUMENT, e);
    askedBlobs.erase(*d);
    if (askedBlobs.empty())
      lastBlob = std::chrono::steady_clock::now();
    uploaded.insert(*d);
    ++uploadedCount;
  }
  return grpc::Status::OK;
}

std::optional<std::string> OffloadMessages::ask(std::string_view question) {
  pending = SandboxView::parse(question);
  if (!pending) {
    sandbox::SandboxReply bad;
    bad.kind = sandbox::KindError;
    bad.err = EINVAL;
    return std::string(reinterpret_cast<const char *>(&bad), sizeof(bad));
  }
  return tryAnswer();
}

void OffloadMessages::settleAwaitedBlobs() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point now = Clock::now();
  std::vector<Digest> ask, alongside;
  for (auto it = awaitedBlobs.begin(); it != awaitedBlobs.end();) {
    const Digest &d = it->first;
    if (blobs.has(d) && owners.owns(client, d)) {
      present.insert(d);
      it = awaitedBlobs.erase(it);
      continue;
    }
    // The other upload ended without a blob (it failed, or its link went),
    // or stopped moving, or takes too long: this link sends it itself.
    std::optional<Clock::time_point> moved = blobs.uploadProgress(d, client);
    if (!moved) {
      ask.push_back(d);
      it = awaitedBlobs.erase(it);
      continue;
    }
    if (now - std::max(*moved, it->second) > kAwaitWithoutProgress ||
        now - it->second > kAwaitAtMost)
      alongside.push_back(d);
    ++it;
  }
  askForBlobs(ask);
  if (!alongside.empty()) {
    spdlog::info("farm link id={} client={} stops waiting for {} blob{} "
                 "another of its links uploads and sends {} itself",
                 id, client, alongside.size(), alongside.size() == 1 ? "" : "s",
                 alongside.size() == 1 ? "it" : "them");
    askForBlobs(alongside, true);
  }
}

std::optional<std::string> OffloadMessages::answerPending() {
  settleAwaitedBlobs();
  return tryAnswer();
}

std::optional<std::string> OffloadMessages::tryAnswer() {
  if (!pending)
    return std::nullopt;
  SandboxView::Answer a = files.answer(*pending);
  if (!a.ready) {
    if (!a.needPath.empty() && askedPaths.insert(a.needPath).second) {
      v1::OffloadDown m;
      m.mutable_need_paths()->add_paths(a.needPath);
      ++trips;
      spdlog::debug("farm link id={} needs path {}", id, logText(a.needPath));
      toClient(m);
      return std::nullopt;
    }
    if (a.needBlob)
      askForBlobs({*a.needBlob});
    return std::nullopt;
  }
  if (a.blob && !uploaded.count(*a.blob))
    present.insert(*a.blob);
  pending.reset();
  return replyBytes(a);
}

} // namespace linkd
