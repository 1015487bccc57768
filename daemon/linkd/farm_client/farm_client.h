// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The user's daemon as a farm client: sends one link to a farm node
// (daemon/linkd/farm_node/farm_service.h) and writes what comes back.
//
// Facts: every path the node asks about is answered from this machine's file
// system exactly as the local link would see it — stat() following symbolic
// links, absent when ENOENT/ENOTDIR, digests from the stat cache. The request
// carries facts up front for the inputs of the last link with the same action
// key (its manifest), re-checked now, and for the files named on the command
// line, so a repeat link after a one-object change costs one upload round
// instead of a question per file. Blobs are uploaded only when the node asks
// for them, in zstd chunks, resuming where the node's partial copy ends.
//
// Outputs are written as they arrive into temp files beside their
// destinations, verified against their digests, and renamed into place only
// once the node reports the link done; any failure (connection, timeout, a
// node that died mid-link, a link the sandbox cannot run) removes them and
// returns an error, and the caller links locally. The channel balances over
// every address of the target (gRPC round_robin).
#pragma once

#include "cache/stat_cache.h"
#include "store/temp_journal.h"
#include "config/config.h"
#include "linkd/v1/farm.grpc.pb.h"

#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace linkd {

// `linkd stats` counters (farm_offloaded, ...).
struct FarmCounters {
  std::atomic<uint64_t> offloaded{0}, fallbacks{0}, notOffloadable{0};
  std::atomic<uint64_t> bytesUp{0}, bytesDown{0};
  std::atomic<uint64_t> blobsUploaded{0}, blobsSkipped{0};
  std::atomic<uint64_t> remoteLinkMicros{0}, roundTrips{0}, retries{0};
  std::atomic<uint64_t> rejected{0}; // answers with outputs we refused
  std::map<std::string, uint64_t> snapshot() const;
  void zero();
};

class FarmClient;

// Where a cache miss may be linked instead of here: linkd's own farm
// (FarmClient) or a Remote Execution API cluster
// (daemon/linkd/reapi/reapi_executor.h). Choosing, falling back locally and
// caching the result are the link service's (offloadToFarm); only the wire
// differs. Counters are `farm_*` for either.
class OffloadTarget {
public:
  virtual ~OffloadTarget() = default;
  struct Result;
  // The policy's decision for a link whose known inputs total `inputBytes`
  // (farm_policy, farm_min_input).
  virtual bool wantsOffload(uint64_t inputBytes) const = 0;
  virtual Result offload(const v1::LinkRequest &req,
                         const std::vector<std::string> &read,
                         const std::vector<std::string> &probed,
                         const std::vector<std::string> &outputs) = 0;
  virtual FarmCounters &counters() = 0;
  virtual const std::string &target() const = 0;
  // How long the oldest offload under way has been (0 if none): a target
  // that holds links shows here before they end (the metrics' gauge).
  double oldestOffloadSeconds() const;

protected:
  // Counts one offload as under way for its lifetime (offload() holds one).
  class InFlight {
  public:
    explicit InFlight(const OffloadTarget &t);
    ~InFlight();
    InFlight(const InFlight &) = delete;
    InFlight &operator=(const InFlight &) = delete;

  private:
    const OffloadTarget &target;
    std::multiset<std::chrono::steady_clock::time_point>::iterator it;
  };

private:
  mutable std::mutex inflightMu;
  mutable std::multiset<std::chrono::steady_clock::time_point> inflight;
};

// The settings' decision for a link whose known inputs total `inputBytes`.
bool policyWantsOffload(const Config &settings, uint64_t inputBytes);

// Facts for `path` as this machine sees it: stat() following symbolic
// links, absent when ENOENT/ENOTDIR, digests from `statCache` (or hashed).
v1::PathFact describePath(const std::string &path, StatCache *statCache);
// describePath() for each of `paths`, in order, hashed on every core.
std::vector<v1::PathFact> describePaths(const std::vector<std::string> &paths,
                                        StatCache *statCache);
// An output path: a directory as it is, an old output file as absent (never
// hashed nor uploaded; LLD only skips moving it aside before replacing it).
v1::PathFact describeOutputPath(const std::string &path, StatCache *statCache);

struct OffloadTarget::Result {
  bool ok = false;   // outputs are in place; the fields below hold
  std::string error; // why not (the caller links locally)
  bool retryable = false;
  int exitCode = 0;
  int termSignal = 0;
  std::string out, err; // the linker's stdout and stderr
  std::string records;  // access records with client paths
  uint64_t wallMicros = 0, userMicros = 0, sysMicros = 0, maxRssKib = 0;
  // The outputs as written here, with the digest their content was
  // verified against: the local store files them under it without
  // reading them again (while the file still has this identity).
  struct Output {
    std::string path;
    Digest digest;
    struct stat st;
  };
  std::vector<Output> outputs;
};

class FarmClient : public OffloadTarget {
public:
  // HTTP/2 keepalive of the offload channel: a ping after this long, and
  // the node given up if its answer takes longer than the timeout.
  static constexpr int kKeepaliveMs = 10000;
  static constexpr int kKeepaliveTimeoutMs = 10000;

  // nullptr and `error` when the settings cannot work (unreadable CA or
  // token, an empty token file unless `requireToken` is false: Health
  // needs none).
  static std::unique_ptr<FarmClient> create(const Config &settings,
                                            StatCache *statCache,
                                            std::string *error,
                                            bool requireToken = true);

  bool wantsOffload(uint64_t inputBytes) const override {
    return policyWantsOffload(settings, inputBytes);
  }
  // Offloads one link. `read` and `probed` name paths worth describing up
  // front (the node asks for the content of `read` ones at once); `outputs`
  // the output file (described as absent: an old output is never uploaded;
  // LLD then only skips moving it aside before replacing it) and its
  // directory.
  Result offload(const v1::LinkRequest &req,
                 const std::vector<std::string> &read,
                 const std::vector<std::string> &probed,
                 const std::vector<std::string> &outputs) override;

  FarmCounters &counters() override { return stats; }
  // Where output temporaries are written down (store/temp_journal.h).
  void setTempJournal(TempJournal *j) { journal = j; }
  int printHealth(bool json);
  const std::string &target() const override { return settings.farm; }

  // Facts for `path` as this machine sees it (public for the prefetch size
  // estimate).
  v1::PathFact fact(const std::string &path);
  // fact() for each of `paths`, in order, hashed on every core (a client
  // whose stat cache does not know the inputs hashes all of them here).
  std::vector<v1::PathFact> facts(const std::vector<std::string> &paths);

private:
  FarmClient(const Config &settings, StatCache *statCache)
      : settings(settings), statCache(statCache) {}
  // One attempt, as a table of contents; its steps follow in that order.
  struct Attempt;
  Result offloadOnce(const v1::LinkRequest &req,
                     const std::vector<std::string> &read,
                     const std::vector<std::string> &probed,
                     const std::vector<std::string> &outputs);
  bool connect(Attempt &a);
  void sendStart(Attempt &a, const std::vector<std::string> &read,
                 const std::vector<std::string> &probed,
                 const std::vector<std::string> &outputs);
  void describe(Attempt &a, const std::vector<std::string> &paths,
                google::protobuf::RepeatedPtrField<v1::PathFact> *out);
  void onMessage(Attempt &a, v1::OffloadDown &m);
  void answerPaths(Attempt &a, const v1::NeedPaths &need);
  bool sendBlob(Attempt &a, const v1::BlobWant &want);
  void beginOutput(Attempt &a, const v1::FarmOutputFile &f);
  void receiveOutputData(Attempt &a, v1::FileData &data);
  bool endStream(Attempt &a);
  bool commitOutputs(Attempt &a);

  // An output path: a directory as it is, an old output file as absent.
  v1::PathFact outputFact(const std::string &path);

  Config settings;
  StatCache *statCache;
  TempJournal *journal = nullptr;
  std::string token;
  bool loopback = false; // the farm is on this machine: no compression
  std::shared_ptr<grpc::Channel> channel;
  std::shared_ptr<grpc::ChannelCredentials> creds; // for a node's own channel
  grpc::ChannelArguments channelArgs;
  std::unique_ptr<v1::Farm::Stub> stub;
  FarmCounters stats;
  // After a failed connect the farm is skipped for a while (a down farm
  // must not cost every link the connect timeout).
  std::atomic<int64_t> downUntilNanos{0};
};

// `linkd farm-health [--json]`: asks the farm the configuration names for
// its load (every address of the target in turn).
int printFarmHealth(bool json);

} // namespace linkd
