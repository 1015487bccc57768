// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a farm node does with the messages of one offloaded link, without
// the transport: the client's OffloadUp messages (the start, facts it was
// asked for, blob chunks) and the sandboxed link child's questions.
//
// Every byte here comes from the other side: the client is a token holder,
// and the child runs LLD on the client's inputs. OffloadSession
// (farm_service.cpp) reads the gRPC stream and the child's socket and hands
// each message here; what the node sends the client goes out through
// `send`, a reply for the child comes back as bytes. Split out so that a
// fuzzer (tests/fuzz/farm_node_fuzzer.cpp) drives the same code with no
// server, no zygote and no child. Used by one thread (the link's handler).
#pragma once

#include "daemon/linkd/blobs/blob_store.h"
#include "daemon/linkd/farm_node/blob_owners.h"
#include "digest/sha256_thread.h"
#include "linkd/v1/farm.pb.h"
#include "view/sandbox_view.h"

#include <grpcpp/support/status.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace linkd {

class OffloadMessages {
public:
  using Send = std::function<bool(const v1::OffloadDown &)>;
  // `id`, `client`: the link's number and token name, for the log.
  OffloadMessages(BlobStore &blobs, BlobOwners &owners, uint64_t id,
                  std::string client, std::string scratchDir,
                  uint64_t maxRequestBytes, Send send);
  ~OffloadMessages();
  OffloadMessages(const OffloadMessages &) = delete;
  OffloadMessages &operator=(const OffloadMessages &) = delete;

  // The first message: an OffloadStart whose request a node may run
  // (offload_request.h), its facts within the node's limit; then the
  // scratch directory is made and the blobs it lacks are asked for.
  grpc::Status start(const v1::OffloadUp &first);
  // A later message: facts the node asked for, or a chunk of a blob it
  // asked for (its data is taken). Anything else is INVALID_ARGUMENT.
  grpc::Status take(v1::OffloadUp &m);
  // A question from the link child. The reply to send it, if the view can
  // answer now (a malformed question is answered EINVAL); else nothing yet
  // and the client is asked for what is missing (once).
  std::optional<std::string> ask(std::string_view question);
  // The reply to the open question once what it waited for came (after
  // take); nothing while it still waits.
  std::optional<std::string> answerPending();

  // A question or an upload the node waits for from this client (not a
  // blob another link is uploading: the client owes nothing for that).
  bool waiting() const {
    return (pending.has_value() && awaitedBlobs.empty()) || !askedBlobs.empty();
  }
  // Blobs another link of the same client is uploading that this one waits
  // for; the caller calls answerPending() now and then while there are any.
  // The wait is bounded: once that upload stops progressing for
  // kAwaitWithoutProgress, or after kAwaitAtMost, this link asks its own
  // client for the blob (to a partial file of its own).
  bool awaitingOtherUploads() const { return !awaitedBlobs.empty(); }
  bool questionOpen() const { return pending.has_value(); }
  // When the client last made progress on what the node waits for: an
  // answer, or a blob's bytes in steps of BlobStore::kProgressBytes.
  std::chrono::steady_clock::time_point lastProgress() const {
    return progressAt;
  }
  static constexpr std::chrono::seconds kAwaitWithoutProgress{3};
  static constexpr std::chrono::seconds kAwaitAtMost{30};
  // False once a message to the client could not be sent.
  bool clientReachable() const { return reachable; }

  v1::LinkRequest &link() { return request; }
  const SandboxView &view() const { return files; }
  uint64_t blobsUploaded() const { return uploadedCount; }
  size_t blobsPresent() const { return present.size(); }
  // Blobs this link waited for while another link uploaded them.
  uint64_t blobsAwaited() const { return awaitedCount; }
  uint64_t roundTrips() const { return trips; }
  uint64_t resumedBytes() const { return resumed; }
  // When the last blob asked for arrived (the epoch if none was).
  std::chrono::steady_clock::time_point blobsIn() const { return lastBlob; }
  // How the node ends this call: a warning naming the link and the client,
  // and the status to return (the session's own failures use it too).
  grpc::Status fail(grpc::StatusCode code, const std::string &msg) const;

private:
  // Adds a client fact; false when the claimed bytes pass the node's limit.
  bool addFact(const v1::PathFact &f);
  grpc::Status takeBlob(v1::BlobChunk &chunk);
  // `alongside`: also those another link uploads (a wait that ended).
  void askForBlobs(const std::vector<Digest> &digests, bool alongside = false);
  // Blobs waited for whose upload ended: stored and ours to use, or asked
  // of this client after all (the other upload failed, or another token
  // sent it).
  void settleAwaitedBlobs();
  std::optional<std::string> tryAnswer();
  void toClient(const v1::OffloadDown &m) { reachable = reachable && send(m); }

  BlobStore &blobs;
  BlobOwners &owners;
  uint64_t id;
  std::string client;
  uint64_t maxRequestBytes;
  Send send;
  SandboxView files;
  v1::LinkRequest request;
  bool reachable = true;
  uint64_t claimedBytes = 0;
  uint64_t receivedBytes = 0;
  std::optional<SandboxView::Question> pending;
  std::set<std::string> askedPaths;
  std::set<Digest> askedBlobs;
  // Being uploaded by another link, since when this one waits.
  std::map<Digest, std::chrono::steady_clock::time_point> awaitedBlobs;
  std::set<Digest> uploaded, present; // blobs this link sent / found stored
  // Uploads received from offset 0, hashed as they arrive, each on a helper
  // thread: the handler writes, answers the link's questions, and was the
  // bottleneck of a cold upload.
  std::map<Digest, std::unique_ptr<Sha256Thread>> arriving;
  uint64_t uploadedCount = 0, trips = 0, awaitedCount = 0;
  uint64_t resumed = 0; // partial uploads asked to continue, not redone
  std::chrono::steady_clock::time_point lastBlob;
  std::chrono::steady_clock::time_point progressAt;
  uint64_t bytesSinceProgress = 0;
};

} // namespace linkd
