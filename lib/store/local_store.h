// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The local content-addressed store: blobs on disk, an SQLite index.
//
//   <root>/blobs/ab/abcdef...   one blob, named by the SHA-256 of its content:
//                               a zstd frame, or for blobs above the
//                               compression limit "LINKDRAW" + the raw bytes
//                               (written as .<hex>.linkd-<random>, renamed)
//   <root>/index.sqlite         blobs(size, stored size, last use) and
//                               actions(namespace, key -> value, checksum)
//
// "Actions" are small values under a caller-chosen key: link manifests and
// results, rewritten-object entries, anything keyed by a digest of a request.
// Every read re-verifies: a blob whose content does not hash to its name, or
// an action whose checksum does not match, is deleted and reported Corrupt —
// callers treat that as a miss, never as data. Blob files are written to a
// temp name and renamed, index rows are written after the file exists, and
// SQLite runs in WAL mode with a busy timeout, so two daemons (or one that was
// killed mid-write) can share a store: the worst case is an orphan file,
// which `trim` removes, or a row whose file is gone, which reads as a miss.
//
// Last-use times are batched in memory and written by maintain(), which the
// daemon calls from a background thread, together with LRU eviction down to
// the size cap, so lookups never wait for bookkeeping.
#pragma once

#include "store/temp_journal.h"

#include "digest/digest.h"
#include "store/sqlite_db.h"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace linkd {

enum class Lookup { Hit, Miss, Corrupt, Error };

struct StoreConfig {
  std::string root;
  uint64_t maxBytes = 10ull << 30;
  int compressionLevel = 1; // zstd; 1 is ~500 MB/s, the link is the cost
  // Larger blobs are stored uncompressed: a hit is then a kernel copy
  // (copy_file_range) verified by hashing on a second thread, instead of a
  // decompression the size of the output (W1: 130 MB in ~120 ms vs ~80 ms).
  uint64_t compressLimit = 16ull << 20;
  // Told once when the disk is full and entries are evicted for room.
  std::function<void(const std::string &)> warn = nullptr;
};

struct StoreUsage {
  uint64_t bytes = 0;   // on disk: compressed blobs + action values
  uint64_t entries = 0; // blobs + actions
  uint64_t blobs = 0;
  uint64_t actions = 0;
};

// Writes `data` to `path` through a temp file in the same directory and a
// rename, with `mode`; the destination never holds a partial file.
// `journal`: where the temporary's name is written down first
// (store/temp_journal.h).
bool writeFileAtomically(const std::string &path, std::string_view data,
                         mode_t mode, std::string *error,
                         TempJournal *journal = nullptr);

// A temp file beside `path` (same directory, so a rename can replace
// `path`): its name in `tmp`, an fd open for reading and writing, or -1.
// rename(tmp, path); the replaced file's storage is freed on a background
// thread when it is large.
bool replaceFile(const std::string &tmp, const std::string &path);
int createTempBeside(const std::string &path, std::string &tmp,
                     std::string *error, TempJournal *journal = nullptr);
// Sets `mode` on the temp file and renames it over `path` (the old file is
// freed off the critical path). The fd stays open.
bool commitTemp(int fd, const std::string &tmp, const std::string &path,
                mode_t mode, std::string *error);

class LocalStore {
public:
  static std::unique_ptr<LocalStore> open(const StoreConfig &config,
                                          std::string *error);
  ~LocalStore();

  const StoreConfig &config() const { return cfg; }
  // Temporaries beside outputs are journaled there (store/temp_journal.h).
  void setTempJournal(TempJournal *j) { journal = j; }
  TempJournal *tempJournal() const { return journal; }
  // Non-empty: index.sqlite was damaged at open and rebuilt empty (why).
  const std::string &indexRebuilt() const { return rebuilt; }
  // Marks the index for rebuilding at the next open (a clear that failed).
  bool markIndexDamaged() const;

  bool hasBlob(const Digest &d);
  Lookup getBlob(const Digest &d, std::string &out);
  // Stores `data` under its digest (computed here). False on I/O failure.
  bool putBlob(std::string_view data, Digest *digest = nullptr);
  // Stores the `size` bytes of the file open at `fd` (read from offset 0),
  // without holding them in memory when they are above the compression
  // limit. `known`: the content's digest, verified by the caller; a large
  // blob is then copied without hashing it again (reads verify anyway).
  // `sink` (when set) is handed every byte stored, in order, in pieces, as
  // the store reads them (the copy, for a large blob): a caller that must
  // also search the content does it while the bytes are in cache, without
  // reading them again (lib/cache/name_check.h). With `known`, a large blob
  // is read for the sink alone.
  using ByteSink = std::function<void(std::string_view)>;
  bool putBlobFromFile(int fd, uint64_t size, Digest *digest,
                       const std::optional<Digest> &known = std::nullopt,
                       const ByteSink &sink = {});
  // Writes the blob's content to `path` atomically with `mode`, after
  // verifying it. Error (with `error` set) when the destination is unwritable.
  Lookup materializeBlob(const Digest &d, const std::string &path, mode_t mode,
                         std::string *error);
  // Counts a use of the blob for eviction (a hit served without reading it).
  void markUsed(const Digest &d);

  Lookup getAction(std::string_view ns, const Digest &key, std::string &out);
  bool putAction(std::string_view ns, const Digest &key,
                 std::string_view value);

  StoreUsage usage();
  // Persists batched last-use times, then evicts least recently used entries
  // until the store is at most `cap` bytes (default: 90% of maxBytes once it
  // exceeds maxBytes). Returns the number of entries evicted.
  uint64_t maintain();
  uint64_t evictTo(uint64_t targetBytes);
  // Removes everything.
  bool clear();
  // maintain() plus removal of files the index does not know (left by a
  // crash) and rows whose files are gone. Returns entries removed.
  uint64_t trim();

  uint64_t corruptCount() const { return corrupt.load(); }
  uint64_t evictionCount() const { return evictions.load(); }
  // Times a write met a full disk and entries were evicted to make room.
  uint64_t diskFullEvictionCount() const { return diskFullEvictions.load(); }

private:
  std::string rebuilt;
  TempJournal *journal = nullptr;
  LocalStore(StoreConfig cfg, std::unique_ptr<SqliteDb> db,
             std::unique_ptr<SqliteDb> readDb)
      : cfg(std::move(cfg)), db(std::move(db)), readDb(std::move(readDb)) {}
  std::string blobPath(const Digest &d) const;
  void touchBlob(const Digest &d);
  void touchAction(std::string_view ns, const Digest &key);
  void forgetBlob(const Digest &d);
  bool readBlob(const Digest &d, std::string &out, Lookup &why);
  bool indexBlob(const Digest &d, uint64_t size, uint64_t stored);
  // Runs an index write (`step` gives SQLite's result code), once more
  // after makeRoom(`bytes`) if the disk was full; whether it was done.
  bool withRoomInIndex(uint64_t bytes, const std::function<int()> &step);
  // What an index row may need on disk beyond its value (pages, journal).
  static constexpr uint64_t kIndexRowRoom = 64 << 10;
  Lookup corruptBlob(const Digest &d);
  void flushTouchesLocked();

  StoreConfig cfg;
  std::mutex dbMu; // the main connection, used under this lock
  std::unique_ptr<SqliteDb> db;
  std::mutex readMu; // a second connection for maintenance reads
  std::unique_ptr<SqliteDb> readDb;
  std::atomic<bool> written{true}; // since the last recount
  std::chrono::steady_clock::time_point lastRecount{};
  std::mutex touchMu;
  std::map<Digest, int64_t> blobTouches;
  std::map<std::pair<std::string, Digest>, int64_t> actionTouches;
  std::atomic<uint64_t> corrupt{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> diskFullEvictions{0};
  std::atomic<bool> warnedDiskFull{false};
  // A write that met ENOSPC (or EDQUOT): evicts least recently used
  // entries (twice `needed`, or a tenth of the store) whatever max_size
  // says; false if nothing could go.
  bool makeRoom(uint64_t needed);
  // writeFileAtomically, once more after makeRoom on a full disk.
  bool writeRoomFor(const std::string &path, std::string_view data);
};

} // namespace linkd
