// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Content digests of files, remembered by their stat identity.
//
// A lookup stats the file; if (device, inode, size, mtime, ctime) match what
// was seen when it was last hashed, the remembered digest is returned without
// reading the file. So an unchanged tree costs a few stats per link, and a
// file that was touched but not changed is re-hashed once and still matches
// by content. Entries survive daemon restarts (an SQLite table next to the
// store index), with an in-memory map in front.
//
// Racy entries: a file whose mtime or ctime is within two seconds of the time
// it was hashed could be rewritten within the file system's timestamp
// granularity without a visible change; such digests are used once but not
// remembered (the approach git takes for its index).
#pragma once

#include "digest/digest.h"
#include "store/sqlite_db.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <sys/stat.h>
#include <unordered_map>
#include <vector>

namespace linkd {

struct FileState {
  bool exists = false;
  bool isDirectory = false;
  uint64_t size = 0;
  int64_t changedNs = 0; // max(mtime, ctime)
  Digest digest;         // regular files only
};

class StatCache {
public:
  // `dbPath` empty: memory only. `racyNanos`: how recent a change must be
  // for the digest not to be remembered (tests use 0).
  static std::unique_ptr<StatCache> open(const std::string &dbPath,
                                         std::string *error,
                                         int64_t racyNanos = 2'000'000'000);
  ~StatCache();
  // Non-empty: the file was damaged at open and rebuilt empty (why).
  const std::string &rebuilt() const { return rebuiltWhy; }

  // Stats `path`; for a regular file returns its digest (hashing only when
  // its identity changed). nullopt when it cannot be read (not ENOENT:
  // absence is FileState{exists=false}).
  std::optional<FileState> lookup(const std::string &path);
  // The same for `path`, stat'ed as `name` relative to the open directory
  // `dirFd` (cheaper than walking the whole path again for each file of a
  // directory with hundreds of inputs).
  // `seen` (optional) gets the stat result.
  std::optional<FileState> lookupAt(int dirFd, const char *name,
                                    const std::string &path,
                                    struct stat *seen = nullptr);
  // The same for `path` whose stat (following symlinks) is already known:
  // `st` from an fstat of a descriptor held on it.
  std::optional<FileState> fromStat(const struct stat &st,
                                    const std::string &path);

  // Writes remembered entries to disk. Called from the maintenance thread.
  void flush();

  uint64_t hashedFiles() const { return hashed; }
  int64_t racyWindow() const { return racyNanos; }
  uint64_t hashedBytes() const { return hashedBytesTotal; }

private:
  std::string rebuiltWhy;
  struct Identity {
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtimeNs = 0, ctimeNs = 0;
    bool operator==(const Identity &) const = default;
  };
  struct Entry {
    Identity id;
    Digest digest;
  };
  StatCache(std::unique_ptr<SqliteDb> db, int64_t racyNanos)
      : db(std::move(db)), racyNanos(racyNanos) {}
  std::optional<Entry> loadLocked(const std::string &path);

  // Lookups of remembered entries share the lock (a large link validates its
  // inputs on two threads); loading from disk and updates take it alone.
  std::shared_mutex mu;
  std::unique_ptr<SqliteDb> db;
  int64_t racyNanos;
  std::unordered_map<std::string, Entry> entries;
  std::vector<std::string> dirty;
  uint64_t hashed = 0;
  uint64_t hashedBytesTotal = 0;
};

} // namespace linkd
