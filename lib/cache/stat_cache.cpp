// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/stat_cache.h"

#include "cache/file_time.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace linkd {

std::unique_ptr<StatCache> StatCache::open(const std::string &dbPath,
                                           std::string *error,
                                           int64_t racyNanos) {
  std::unique_ptr<SqliteDb> db;
  std::string rebuilt;
  if (!dbPath.empty()) {
    db = SqliteDb::openOrRebuild(
        dbPath,
        "CREATE TABLE IF NOT EXISTS stat_cache("
        "path TEXT PRIMARY KEY, dev INTEGER, ino INTEGER, "
        "size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, "
        "digest BLOB) WITHOUT ROWID",
        error, &rebuilt);
    if (!db)
      return nullptr;
  }
  std::unique_ptr<StatCache> c(new StatCache(std::move(db), racyNanos));
  c->rebuiltWhy = std::move(rebuilt);
  return c;
}

StatCache::~StatCache() { flush(); }

std::optional<StatCache::Entry> StatCache::loadLocked(const std::string &path) {
  if (auto it = entries.find(path); it != entries.end())
    return it->second;
  if (!db)
    return std::nullopt;
  // Prepared once per connection: a first lookup after a restart asks this
  // for every input.
  auto q = db->cached("SELECT dev, ino, size, mtime_ns, ctime_ns, digest "
                      "FROM stat_cache WHERE path = ?");
  q->bindText(1, path);
  if (q->step() != SQLITE_ROW)
    return std::nullopt;
  Entry e;
  e.id.dev = static_cast<uint64_t>(q->columnInt(0));
  e.id.ino = static_cast<uint64_t>(q->columnInt(1));
  e.id.size = static_cast<uint64_t>(q->columnInt(2));
  e.id.mtimeNs = q->columnInt(3);
  e.id.ctimeNs = q->columnInt(4);
  auto d = Digest::fromRaw(q->columnBlob(5));
  if (!d)
    return std::nullopt;
  e.digest = *d;
  entries.emplace(path, e);
  return e;
}

std::optional<FileState> StatCache::lookup(const std::string &path) {
  return lookupAt(AT_FDCWD, path.c_str(), path);
}

std::optional<FileState> StatCache::lookupAt(int dirFd, const char *name,
                                             const std::string &path,
                                             struct stat *seen) {
  struct stat st;
  if (::fstatat(dirFd, name, &st, 0) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return FileState{}; // absent
    return std::nullopt;
  }
  if (seen)
    *seen = st;
  return fromStat(st, path);
}

std::optional<FileState> StatCache::fromStat(const struct stat &st,
                                             const std::string &path) {
  FileState out;
  out.exists = true;
  if (S_ISDIR(st.st_mode)) {
    out.isDirectory = true;
    return out;
  }
  if (!S_ISREG(st.st_mode))
    return std::nullopt; // devices, fifos: not content we can vouch for
  Identity id{
      static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
      static_cast<uint64_t>(st.st_size), nanos(st.st_mtim), nanos(st.st_ctim)};
  out.size = id.size;
  out.changedNs = std::max(id.mtimeNs, id.ctimeNs);
  {
    std::shared_lock lock(mu);
    if (auto it = entries.find(path); it != entries.end()) {
      if (it->second.id == id) {
        out.digest = it->second.digest;
        return out;
      }
    }
  }
  {
    std::lock_guard lock(mu);
    if (auto e = loadLocked(path); e && e->id == id) {
      out.digest = e->digest;
      return out;
    }
  }
  int64_t hashedAt = wallNanosNow();
  auto fd = sha256File(path);
  if (!fd)
    return std::nullopt;
  struct stat after;
  if (::stat(path.c_str(), &after) != 0 ||
      Identity{static_cast<uint64_t>(after.st_dev),
               static_cast<uint64_t>(after.st_ino),
               static_cast<uint64_t>(after.st_size), nanos(after.st_mtim),
               nanos(after.st_ctim)} != id)
    return std::nullopt; // changed while we read it
  out.digest = fd->digest;
  std::lock_guard lock(mu);
  ++hashed;
  hashedBytesTotal += fd->size;
  bool racy = racyAt(id.mtimeNs, id.ctimeNs, hashedAt, racyNanos);
  if (racy) {
    entries.erase(path);
  } else {
    entries[path] = Entry{id, fd->digest};
    dirty.push_back(path);
  }
  return out;
}

void StatCache::flush() {
  std::lock_guard lock(mu);
  if (!db || dirty.empty()) {
    dirty.clear();
    return;
  }
  db->exec("BEGIN");
  SqliteStatement up(db->handle(),
                     "INSERT OR REPLACE INTO stat_cache(path, dev, ino, size, "
                     "mtime_ns, ctime_ns, digest) VALUES(?, ?, ?, ?, ?, ?, ?)");
  for (const std::string &path : dirty) {
    auto it = entries.find(path);
    if (it == entries.end())
      continue;
    const Entry &e = it->second;
    up.bindText(1, path)
        .bind(2, static_cast<int64_t>(e.id.dev))
        .bind(3, static_cast<int64_t>(e.id.ino))
        .bind(4, static_cast<int64_t>(e.id.size))
        .bind(5, e.id.mtimeNs)
        .bind(6, e.id.ctimeNs)
        .bind(7, e.digest.raw())
        .step();
    up.reset();
  }
  db->exec("COMMIT");
  dirty.clear();
}

} // namespace linkd
