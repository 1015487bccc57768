// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link cache: manifests of input sets per action key, results as blobs.
//
//   action key --(store action "link-manifest")--> Manifest
//       Manifest: the 16 newest input sets seen for the key, each with every
//       file read (content digest), every path only checked for existence,
//       every path probed and missing, and the digest of its LinkResult blob.
//   LinkResult blob: outputs (path, digest, mode), stdout, stderr, exit code.
//
// A lookup walks the sets newest first and takes the first whose every entry
// still holds (stat cache: a few stats for an unchanged tree). A hit writes
// each output atomically and replays the captured stdout/stderr. Storing
// happens after the client has its answer: outputs are read back from disk
// only if their stat identity is still the one seen when the link exited, so
// a file changed in between (a post-link strip) is never stored as the link's
// output, and an input changed after the link started is never stored as
// what the link read.
#pragma once

#include "cache/access_log.h"
#include "cache/input_handles.h"
#include "cache/link_key.h"
#include "cache/link_output.h"
#include "cache/stat_cache.h"
#include "linkd/cache/v1/cache.pb.h"
#include "store/local_store.h"
#include "store/remote_tiers.h"
#include "store/spare_copies.h"

#include <sys/stat.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace linkd {

// An output as the link left it: opened (and stat'ed) right after the link
// exited, before the client is answered. Storing reads through this
// descriptor, so a build step that renames or replaces the output meanwhile
// (mv, strip) cannot change what is stored; one that modifies the file in
// place changes its identity, and the result is not stored.
class OutputSnapshot {
public:
  OutputSnapshot(std::string path);
  ~OutputSnapshot();
  OutputSnapshot(OutputSnapshot &&other) noexcept;
  OutputSnapshot &operator=(OutputSnapshot &&) = delete;

  std::string path; // absolute
  int fd = -1;      // -1: it was not a regular file we could open
  struct stat st{};
  // The content's digest when whoever wrote the file knows it (a farm
  // result, verified as it arrived): stored without hashing it again.
  std::optional<Digest> digest;
};

std::vector<OutputSnapshot> snapshotOutputs(const AccessLog &log);

// The audit's link record (docs/audit.md) of outputs the cache does not keep
// (uncacheable links, the cache off): stored under each output's digest and
// build-id, as LinkCache::store does for the ones it keeps. False if an
// output changed before it was hashed (that one gets no record).
bool storeStateRecord(LocalStore &store, const std::string &record,
                      const std::vector<OutputSnapshot> &outputs);

// A second thread kept for splitting one piece of work in two (the input
// check of a large link), without paying for a thread per lookup.
class HelperThread {
public:
  HelperThread();
  ~HelperThread();
  // Runs `there` on the helper and `here` on the caller, returns when both
  // are done. False (nothing run) if another caller is using the helper.
  bool tryRun(const std::function<void()> &there,
              const std::function<void()> &here);

private:
  void loop();
  std::mutex use; // one user at a time
  std::mutex mu;
  std::condition_variable cv;
  const std::function<void()> *task = nullptr;
  bool done = false;
  bool stop = false;
  std::thread worker;
};

class LinkCache {
public:
  // `remote` (optional): tiers consulted after a local miss and written in
  // the background after a local store; remote finds are copied into the
  // local store (backfill). `spares` (optional): ready copies of large
  // outputs that a hit renames into place (store/spare_copies.h).
  // `maxHeldInputs`: descriptors kept on validated inputs
  // (input_handles.h); `watchInputs`: watch them for changes.
  LinkCache(LocalStore &store, StatCache &stats, RemoteTiers *remote = nullptr,
            SpareCopies *spares = nullptr, size_t maxHeldInputs = 0,
            bool watchInputs = true)
      : blobs(store), stats(stats), remote(remote), spares(spares),
        handles(maxHeldInputs, stats.racyWindow(), watchInputs) {}

  // Lets go of descriptors held on deleted inputs and on least recently
  // used directories. From the maintenance thread.
  void sweepHeldInputs() { handles.sweep(); }
  // Holds (input_handles.h) the files the last lookups checked by path;
  // after answering, off the hit's critical path. Any thread.
  void holdChecked();
  size_t heldInputs() const { return handles.heldCount(); }
  size_t watchedInputs() const { return handles.watchedCount(); }

  // A stored result whose inputs all still match, or nullopt. `why` gets a
  // one-line explanation of a miss (for LINKD_LOG=debug).
  std::optional<cache::v1::LinkResult> lookup(const LinkAnalysis &link,
                                              std::string *why);

  // Why a link whose key has no manifest missed: what differs from the most
  // recent key stored for the same output (an argument by index with both
  // values, an environment variable, the working directory, the base dir),
  // or why nothing can be said. `kind` gets "argv", "env", "cwd",
  // "base_dir", "other" or "new_output" (for the counters).
  // "argv" an option, "outside_base_dir" a path the key holds as given,
  // "pwd" a PWD that names the working directory by another spelling.
  // (miss_explanation.cpp, with rememberKey.)
  std::string explainMiss(const LinkAnalysis &link, std::string *kind);

  // An output fetched from a remote tier, to be copied into the local
  // store once the client has its answer (off the hit's critical path).
  struct Backfill {
    int fd = -1; // the written output, still open
    Digest digest;
    uint64_t size = 0;
  };

  // Writes a hit's outputs (temp + rename, stored mode bits). Anything but
  // Hit (a blob evicted or corrupt, an output that cannot be written): the
  // caller runs the link. Outputs that came from a remote tier are appended to
  // `later`; pass them to backfill() after answering.
  Lookup materialize(const cache::v1::LinkResult &result,
                     const LinkAnalysis &link, std::string *error,
                     std::vector<Backfill> *later);
  void backfill(std::vector<Backfill> &later);
  // Every path of the newest input set stored for the link's key (read,
  // existing and missing), in local spelling; empty without a manifest. The
  // farm client describes them up front (a repeat link needs no questions).
  // `read` gets the files the link read, `probed` the rest.
  void lastInputPaths(const LinkAnalysis &link, std::vector<std::string> &read,
                      std::vector<std::string> &probed);
  // Makes spare copies of the result's large outputs (after answering a
  // local hit).
  void prepareSpares(const cache::v1::LinkResult &result);
  // Drops the in-memory manifests and results and the spare copies (after
  // `linkd cache clear`).
  void forgetRecent();

  struct StoreOutcome {
    bool stored = false;
    std::string notStoredReason;
    uint64_t bytesWritten = 0;
    // The verification of the names the key left out (name_check.h).
    uint64_t nameCheckMicros = 0;
    uint64_t nameCheckCpuMicros = 0;
    uint64_t nameCheckBytes = 0;
    size_t requiredNames = 0;
    std::string requiredWhy;
  };
  // Before a link whose result may be stored: the digest of each input
  // changed in the current tick of the file clock (the object a compiler
  // wrote a moment ago), into link.digestsBeforeLink. The inputs: the
  // link's named ones and those the last link of its key read. One stat
  // each; only the recent files are read.
  void hashRecentInputs(LinkAnalysis &link);
  // `linkStartNs`: fileClockNowNs() before the link could read anything.
  // An input changed in that tick or later is stored only with the bytes
  // it had before the link (link.digestsBeforeLink); anything else may
  // have changed after LLD read it.
  StoreOutcome store(const LinkAnalysis &link, const AccessLog &log,
                     const std::vector<OutputSnapshot> &outputs,
                     const LinkOutput &output, int exitCode,
                     uint64_t linkMicros, int64_t linkStartNs);

  // Files checked by path, to be held by holdChecked(), with their open
  // directory.
  class PendingHolds {
  public:
    struct File {
      std::string name;
      struct stat st;
      Digest digest;
    };
    struct Dir {
      std::string path;
      struct stat st; // of fd
      int fd;         // owned
      std::vector<File> files;
    };
    ~PendingHolds();
    void add(Dir d);
    std::vector<Dir> take();

  private:
    std::mutex mu;
    std::vector<Dir> dirs;
  };

private:
  bool inputsMatch(const cache::v1::InputSet &set, const PathMapper &paths,
                   std::string *why);
  std::string checkFiles(const cache::v1::InputSet &set,
                         const PathMapper &paths, int begin, int end);
  // The first input set of `manifest` whose inputs all hold.
  const cache::v1::InputSet *matchingSet(const cache::v1::Manifest &manifest,
                                         const PathMapper &paths,
                                         std::string *why);
  // A blob from the local store, else from the remote tiers (backfilled).
  std::optional<std::string> fetchBlob(const Digest &d, uint64_t size);
  // Records the link's key for its primary output (explainMiss).
  void rememberKey(const LinkAnalysis &link);
  void pushToRemote(const LinkAnalysis &link, const cache::v1::InputSet &set,
                    const cache::v1::LinkResult &result,
                    const Digest &resultDigest);

  // Recently used manifests, parsed. Safe to be stale: a set is used only
  // after every input is checked, and a missing result is a miss.
  std::shared_ptr<const cache::v1::Manifest> recentManifest(const Digest &key);
  std::shared_ptr<const cache::v1::Manifest>
  rememberManifest(const Digest &key, cache::v1::Manifest &&m);

  LocalStore &blobs;
  StatCache &stats;
  RemoteTiers *remote;
  SpareCopies *spares;
  InputHandles handles;
  PendingHolds pendingHolds;
  HelperThread helper;
  std::mutex recentMu;
  std::map<Digest, std::shared_ptr<const cache::v1::Manifest>> recent;
  std::map<Digest, std::shared_ptr<const cache::v1::LinkResult>> results;
};

// The kind of a miss whose key has a manifest, from lookup()'s `why`:
// "embedded_name" (every stored result names another checkout, working
// directory or input name), "required_name" (it requires another input name
// for what the inputs are: a linker script with SECTIONS, bitcode) or
// "input" (an input's content, a probed path).
std::string manifestMissKind(const std::string &why);

// The union of `fresh`'s first set and `old`'s sets, newest first, without
// duplicate input sets, at most 16.
cache::v1::Manifest mergeManifest(const cache::v1::InputSet &newest,
                                  const cache::v1::Manifest &old);

} // namespace linkd
