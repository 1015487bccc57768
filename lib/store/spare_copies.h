// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Verified copies of large blobs, kept ready to be renamed into place.
//
// A cache hit has to produce each output file. For a large output that means
// copying the blob and hashing it (every read from the store is verified):
// for the 114 MB archive of a thousand objects, ~80 ms, about what creating
// the archive costs llvm-ar. So for each blob above the store's compression
// limit the daemon keeps one spare: a copy made with
// LocalStore::materializeBlob (verified while copied) after the client has
// its answer. A hit renames the spare over the output (mode and a fresh
// modification time set first, so build tools see a new file) when
//   * the output's directory is on the spare's file system, and
//   * the spare is exactly as it was made: same inode, size, mtime and
//     ctime, one link (any write through the file system changes those);
// then a new spare is made, again after the answer. Otherwise the hit takes
// the ordinary path. A spare is never shared: the output *is* the spare, and
// the next one is a new copy, so a build that edits the output in place
// cannot reach the store.
//
// Spares live in <cache_dir>/spares/<daemon pid>/ (directories of daemons
// that are gone are removed at start), take at most `maxBytes` (least
// recently used go first), and go with `linkd cache clear` and the daemon.
// Thread-safe.
#pragma once

#include "digest/digest.h"
#include "store/local_store.h"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace linkd {

class SpareCopies {
public:
  // Spares for blobs of at least `minBytes`, `maxBytes` in all.
  SpareCopies(LocalStore &store, const std::string &cacheRoot,
              uint64_t minBytes, uint64_t maxBytes);
  ~SpareCopies();
  SpareCopies(const SpareCopies &) = delete;
  SpareCopies &operator=(const SpareCopies &) = delete;

  // Whether a blob of `size` bytes gets spares.
  bool wants(uint64_t size) const { return size >= minBytes; }

  // Puts the spare of `d` at `path` with `mode`. False (nothing changed at
  // `path`) if there is no usable spare.
  bool take(const Digest &d, const std::string &path, mode_t mode);

  // Makes a spare of `d` (size `size`) unless there is one. Slow (a copy of
  // the blob): call it after the client has its answer.
  void prepare(const Digest &d, uint64_t size);

  // Removes every spare.
  void clear();

private:
  struct Spare {
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    struct timespec mtime{};
    struct timespec ctime{};
    uint64_t lastUse = 0;
  };
  void evictLocked(uint64_t needed);
  void dropLocked(std::map<Digest, Spare>::iterator it);

  LocalStore &store;
  std::string dir;
  uint64_t minBytes;
  uint64_t maxBytes;
  std::mutex mu;
  std::map<Digest, Spare> spares;
  uint64_t bytes = 0;
  uint64_t useCounter = 0;
};

} // namespace linkd
