// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A Remote Execution API cluster as the offload target
// (`remote_executor = grpc://host:port`, docs/farm.md "REAPI clusters"): a
// cache miss the farm policy sends away runs as an REAPI action on a worker
// of the user's cluster, and its outputs come back byte for byte.
//
// The action runs `linkd-lld remote-link in out` (remote_link.h): the
// linker the workers' image has (`remote_linker`), or, without one, this
// daemon's own linkd-lld sent as inputs with every shared object its zygote
// has mapped and their dynamic loader (`tool/`, run as `tool/ld-linux...
// --library-path tool tool/linkd-lld`), so any x86-64 Linux worker runs it
// whatever its image (uploaded once: the CAS keeps it). Its input root
// holds exactly
// what the link may read: `in/request` (the link and the facts of every
// path this machine describes: files with digests, directories, absent
// paths) and `in/blobs/<sha256>` (each file's content, uploaded once: the
// CAS keeps it). The worker's own file system is never seen by the link,
// so a worker image cannot change its bytes. A path the link asks about
// that had no fact is answered as absent there and listed in the result;
// if it exists here, the result is void and the next round describes it
// (a cold link: the libraries a linker script names), up to kMaxRounds.
//
// Nothing it returns is trusted: every blob is verified against its
// digest; outputs must be the files the link's request may write
// (output_policy.h), with the digests the runner reported; anything else
// — refused, timed out, a worker without the linker, a wrong blob — is an
// error, and the link runs here. The build never fails or changes because
// the cluster is down.
#pragma once

#include "cache/stat_cache.h"
#include "config/config.h"
#include "daemon/linkd/farm_client/farm_client.h"
#include "daemon/linkd/reapi/reapi_client.h"
#include "store/temp_journal.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace linkd::reapi {

class Executor : public OffloadTarget {
public:
  static constexpr int kMaxRounds = 6;

  // Null and `error` when the settings cannot work (a bad URL, an
  // unreadable header file, a relative remote_linker). `toolFiles`: this
  // machine's linkd-lld first, then the shared objects it runs with
  // (loadedFiles of the zygote), shipped when remote_linker is empty.
  // `lldVersion`: this machine's (the zygote's); a worker whose linkd-lld
  // links with another LLD is not used (its bytes could differ).
  static std::unique_ptr<Executor> create(const Config &settings,
                                          StatCache *statCache,
                                          std::vector<std::string> toolFiles,
                                          std::string lldVersion,
                                          std::string *error);

  bool wantsOffload(uint64_t inputBytes) const override {
    return policyWantsOffload(settings, inputBytes);
  }
  Result offload(const v1::LinkRequest &req,
                 const std::vector<std::string> &read,
                 const std::vector<std::string> &probed,
                 const std::vector<std::string> &outputs) override;
  FarmCounters &counters() override { return stats; }
  const std::string &target() const override { return settings.remoteExecutor; }
  void setTempJournal(TempJournal *j) { journal = j; }

private:
  Executor(const Config &settings, StatCache *statCache)
      : settings(settings), statCache(statCache) {}
  struct Attempt;
  // One round: the action for `facts`, run; false with `a.error` when it
  // cannot be used, true with `a.unknown` set when it must run again.
  bool runRound(Attempt &a);
  // Execute (WaitExecution after a dropped stream): `a.action` or false
  // with `a.out.error`.
  bool execute(Attempt &a, const re::Digest &actionDigest);
  bool fetchOutputs(Attempt &a);
  // Counts and logs an answer this daemon refuses; false.
  bool reject(Attempt &a, const std::string &why);

  // The shipped linker's files as inputs (hashed once, on first use).
  struct ToolFile {
    std::string name, path;
    re::Digest digest;
    bool loader = false;
  };
  bool toolReady(std::string *error);

  Config settings;
  StatCache *statCache;
  std::vector<std::string> toolFiles;
  std::string lldVersion;
  std::mutex toolMu;
  std::vector<ToolFile> tool;
  TempJournal *journal = nullptr;
  std::unique_ptr<Client> client;
  std::unique_ptr<re::Execution::Stub> execution;
  FarmCounters stats;
  std::atomic<int64_t> downUntilNanos{0};
};

// The files process `pid` has mapped from the file system: its executable
// first, then every shared object (the dynamic loader among them).
std::vector<std::string> loadedFiles(int64_t pid);

} // namespace linkd::reapi
