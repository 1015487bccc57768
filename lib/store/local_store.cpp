// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "store/local_store.h"

#include "config/runtime_paths.h"
#include "util/clock.h"
#include "util/files.h"

#define ZSTD_STATIC_LINKING_ONLY // ZSTD_FRAMEHEADERSIZE_MAX
#include <zstd.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

namespace linkd {
namespace {

std::string dirOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string randomSuffix() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(rng()));
  return buf;
}

constexpr std::string_view kRawMagic = "LINKDRAW";
constexpr unsigned long long kSmallBlob = 4ull << 20;

} // namespace

// rename(tmp, path), with the old file's storage freed on a background
// thread: renaming over the last name of a 100 MB output would otherwise free
// its pages inside rename(2), on the link's critical path (LLD defers the
// same work with its own background unlink).
bool replaceFile(const std::string &tmp, const std::string &path) {
  int old =
      ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    if (old >= 0)
      close(old);
    errno = saved;
    return false;
  }
  if (old >= 0) {
    struct stat st;
    if (fstat(old, &st) == 0 && st.st_size > (1 << 20))
      std::thread([old] { close(old); }).detach();
    else
      close(old);
  }
  return true;
}

namespace {

enum class StreamResult { Ok, Corrupt, WriteFailed };

// Copies `size` bytes from `in` at `inOff` to `out` at `outOff`: in the
// kernel where it can (copy_file_range), else through a buffer (another file
// system: EXDEV; old kernels: ENOSYS).
bool copyRange(int in, off_t inOff, int out, off_t outOff, uint64_t size) {
  while (size > 0) {
    ssize_t n = copy_file_range(in, &inOff, out, &outOff, size, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n > 0) {
      size -= static_cast<uint64_t>(n);
      continue;
    }
    if (n == 0 || (errno != EXDEV && errno != ENOSYS && errno != EINVAL &&
                   errno != EOPNOTSUPP))
      return false;
    std::string buf(1 << 20, '\0');
    while (size > 0) {
      ssize_t r =
          pread(in, buf.data(), std::min<uint64_t>(size, buf.size()), inOff);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return false;
      for (ssize_t done = 0; done < r;) {
        ssize_t w = pwrite(out, buf.data() + done,
                           static_cast<size_t>(r - done), outOff);
        if (w < 0 && errno == EINTR)
          continue;
        if (w <= 0)
          return false;
        done += w;
        outOff += w;
      }
      inOff += r;
      size -= static_cast<uint64_t>(r);
    }
  }
  return true;
}

// Reads `size` bytes of `fd` from `off` in 1 MiB pieces with pread (the
// offset of the descriptor is left alone, so a copy can run on it at the
// same time): each piece is hashed into `h` (when given) and handed to
// `sink` (when set) while it is in cache.
bool readRange(int fd, off_t off, uint64_t size, Sha256 *h,
               const LocalStore::ByteSink &sink) {
  std::string buf(1 << 20, '\0');
  while (size > 0) {
    ssize_t n =
        pread(fd, buf.data(), std::min<uint64_t>(size, buf.size()), off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    std::string_view piece(buf.data(), static_cast<size_t>(n));
    if (h)
      h->update(piece);
    if (sink)
      sink(piece);
    off += n;
    size -= static_cast<uint64_t>(n);
  }
  return true;
}

// SHA-256 of `size` bytes of `fd` from `off` (readRange).
std::optional<Digest> hashRange(int fd, off_t off, uint64_t size,
                                const LocalStore::ByteSink &sink = {}) {
  Sha256 h;
  if (!readRange(fd, off, size, &h, sink))
    return std::nullopt;
  return h.finish();
}

// A raw blob: copy to `out` and verify by hashing the source on a second
// thread while the kernel copies.
StreamResult rawVerifyCopy(int in, uint64_t contentSize, int out,
                           const Digest &expected) {
  std::optional<Digest> got;
  std::thread hasher(
      [&] { got = hashRange(in, kRawMagic.size(), contentSize); });
  bool copied = copyRange(in, kRawMagic.size(), out, 0, contentSize);
  hasher.join();
  if (!got || *got != expected)
    return StreamResult::Corrupt;
  return copied ? StreamResult::Ok : StreamResult::WriteFailed;
}

// Format of an open blob file: true and the content size for a raw blob.
bool isRawBlob(int fd, uint64_t &contentSize) {
  char magic[8];
  struct stat st;
  if (pread(fd, magic, sizeof(magic), 0) != sizeof(magic) ||
      std::string_view(magic, sizeof(magic)) != kRawMagic ||
      fstat(fd, &st) != 0)
    return false;
  contentSize = static_cast<uint64_t>(st.st_size) - kRawMagic.size();
  return true;
}

// Decompresses the zstd stream on `in` into `out`, verifying that the content
// hashes to `expected`. Hashing runs one chunk behind on a second thread.
StreamResult decompressVerifyCopy(int in, int out, const Digest &expected) {
  constexpr size_t kChunk = 4 << 20;
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  std::string inBuf(ZSTD_DStreamInSize() * 16, '\0');
  std::string chunk[2] = {std::string(kChunk, '\0'), std::string(kChunk, '\0')};
  Sha256 hash;
  std::thread hasher;
  auto hashAsync = [&](const std::string &buf, size_t n) {
    if (hasher.joinable())
      hasher.join();
    hasher = std::thread([&hash, &buf, n] { hash.update({buf.data(), n}); });
  };
  StreamResult result = StreamResult::Ok;
  ZSTD_inBuffer zin{inBuf.data(), 0, 0};
  bool eof = false, frameDone = false;
  int cur = 0;
  while (result == StreamResult::Ok) {
    ZSTD_outBuffer zout{chunk[cur].data(), kChunk, 0};
    // Fill one output chunk.
    while (zout.pos < zout.size) {
      if (zin.pos == zin.size && !eof) {
        ssize_t n = read(in, inBuf.data(), inBuf.size());
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0)
          eof = true;
        zin =
            ZSTD_inBuffer{inBuf.data(), n > 0 ? static_cast<size_t>(n) : 0, 0};
      }
      size_t before = zout.pos;
      size_t inBefore = zin.pos;
      size_t rc = ZSTD_decompressStream(dctx, &zout, &zin);
      if (ZSTD_isError(rc)) {
        result = StreamResult::Corrupt;
        break;
      }
      // rc == 0: a frame just ended. A call without input or output only
      // reports what the next frame would need; it does not reopen one.
      if (zin.pos != inBefore || zout.pos != before)
        frameDone = rc == 0;
      if (eof && zin.pos == zin.size && zout.pos == before)
        break; // no more input and no progress
    }
    if (result != StreamResult::Ok)
      break;
    if (zout.pos > 0) {
      if (!writeAll(out, {chunk[cur].data(), zout.pos})) {
        result = StreamResult::WriteFailed;
        break;
      }
      hashAsync(chunk[cur], zout.pos);
      cur ^= 1;
    }
    if (zout.pos < zout.size)
      break; // stream finished
  }
  if (hasher.joinable())
    hasher.join();
  ZSTD_freeDCtx(dctx);
  if (result == StreamResult::Ok && (!frameDone || hash.finish() != expected))
    result = StreamResult::Corrupt;
  return result;
}

constexpr const char *kSchema = R"sql(
CREATE TABLE IF NOT EXISTS blobs(
  digest BLOB PRIMARY KEY, size INTEGER NOT NULL, stored INTEGER NOT NULL,
  last_use INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blobs_lru ON blobs(last_use);
CREATE TABLE IF NOT EXISTS actions(
  ns TEXT NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL,
  checksum BLOB NOT NULL, last_use INTEGER NOT NULL,
  PRIMARY KEY(ns, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS actions_lru ON actions(last_use);
)sql";

} // namespace

int createTempBeside(const std::string &path, std::string &tmp,
                     std::string *error, TempJournal *journal) {
  tmp = dirOf(path) + "/." + baseOf(path) + ".linkd-" + randomSuffix();
  if (journal)
    journal->note(tmp);
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && error)
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
  return fd;
}

bool commitTemp(int fd, const std::string &tmp, const std::string &path,
                mode_t mode, std::string *error) {
  if (fchmod(fd, mode) == 0 && replaceFile(tmp, path))
    return true;
  if (error)
    *error = "cannot write " + path + ": " + std::strerror(errno);
  unlink(tmp.c_str());
  return false;
}

bool writeFileAtomically(const std::string &path, std::string_view data,
                         mode_t mode, std::string *error,
                         TempJournal *journal) {
  std::string tmp =
      dirOf(path) + "/." + baseOf(path) + ".linkd-" + randomSuffix();
  if (journal)
    journal->note(tmp);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (error)
      *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  bool ok = writeAll(fd, data) && fchmod(fd, mode) == 0;
  int saved = errno;
  ok = close(fd) == 0 && ok;
  if (ok && replaceFile(tmp, path))
    return true;
  int e = ok ? errno : saved;
  if (error)
    *error = "cannot write " + path + ": " + std::strerror(e);
  unlink(tmp.c_str());
  errno = e; // the caller may tell a full disk (ENOSPC) from the rest
  return false;
}

std::unique_ptr<LocalStore> LocalStore::open(const StoreConfig &config,
                                             std::string *error) {
  for (const std::string &dir : {config.root, config.root + "/blobs"}) {
    if (std::string err = ensureDirectoryTree(dir); !err.empty()) {
      if (error)
        *error = err;
      return nullptr;
    }
  }
  std::string rebuilt;
  auto db = SqliteDb::openOrRebuild(config.root + "/index.sqlite", kSchema,
                                    error, &rebuilt);
  if (!db)
    return nullptr;
  auto readDb = SqliteDb::open(config.root + "/index.sqlite", error);
  if (!readDb)
    return nullptr;
  std::unique_ptr<LocalStore> store(
      new LocalStore(config, std::move(db), std::move(readDb)));
  store->rebuilt = std::move(rebuilt);
  return store;
}

bool LocalStore::markIndexDamaged() const {
  return SqliteDb::markDamaged(cfg.root + "/index.sqlite");
}

LocalStore::~LocalStore() {
  std::lock_guard lock(dbMu);
  flushTouchesLocked();
}

std::string LocalStore::blobPath(const Digest &d) const {
  std::string hex = d.hex();
  return cfg.root + "/blobs/" + hex.substr(0, 2) + "/" + hex;
}

void LocalStore::markUsed(const Digest &d) { touchBlob(d); }

void LocalStore::touchBlob(const Digest &d) {
  std::lock_guard lock(touchMu);
  blobTouches[d] = unixSecondsNow();
}

void LocalStore::touchAction(std::string_view ns, const Digest &key) {
  std::lock_guard lock(touchMu);
  actionTouches[{std::string(ns), key}] = unixSecondsNow();
}

void LocalStore::forgetBlob(const Digest &d) {
  unlink(blobPath(d).c_str());
  std::lock_guard lock(dbMu);
  SqliteStatement(db->handle(), "DELETE FROM blobs WHERE digest = ?")
      .bind(1, d.raw())
      .step();
}

bool LocalStore::hasBlob(const Digest &d) {
  struct stat st;
  return stat(blobPath(d).c_str(), &st) == 0;
}

bool LocalStore::readBlob(const Digest &d, std::string &out, Lookup &why) {
  Result<std::string> read = readFile(blobPath(d));
  if (!read) {
    why = Lookup::Miss;
    return false;
  }
  const std::string &compressed = *read;
  bool ok;
  if (std::string_view(compressed).starts_with(kRawMagic)) {
    out = compressed.substr(kRawMagic.size());
    ok = sha256(out) == d;
  } else {
    unsigned long long size =
        ZSTD_getFrameContentSize(compressed.data(), compressed.size());
    ok = size != ZSTD_CONTENTSIZE_ERROR && size != ZSTD_CONTENTSIZE_UNKNOWN;
    if (ok) {
      out.resize(size);
      size_t n = ZSTD_decompress(out.data(), out.size(), compressed.data(),
                                 compressed.size());
      ok = !ZSTD_isError(n) && n == size && sha256(out) == d;
    }
  }
  if (!ok) {
    out.clear();
    why = corruptBlob(d);
    return false;
  }
  touchBlob(d);
  why = Lookup::Hit;
  return true;
}

Lookup LocalStore::corruptBlob(const Digest &d) {
  ++corrupt;
  forgetBlob(d);
  return Lookup::Corrupt;
}

Lookup LocalStore::getBlob(const Digest &d, std::string &out) {
  Lookup why;
  readBlob(d, out, why);
  return why;
}

Lookup LocalStore::materializeBlob(const Digest &d, const std::string &path,
                                   mode_t mode, std::string *error) {
  // Streams the blob: decompress a chunk, write it to a temp file next to
  // `path`, hash it on a second thread while the next chunk decompresses.
  // Only if the whole content hashes to `d` is the temp file renamed into
  // place, so a corrupt blob never becomes an output.
  int in = ::open(blobPath(d).c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return Lookup::Miss;
  uint64_t rawSize = 0;
  bool raw = isRawBlob(in, rawSize);
  if (!raw) {
    // Small blobs (most outputs): one read, no second thread, no 4 MiB
    // buffers to fault in.
    char head[ZSTD_FRAMEHEADERSIZE_MAX];
    ssize_t n = pread(in, head, sizeof(head), 0);
    unsigned long long size =
        n > 0 ? ZSTD_getFrameContentSize(head, static_cast<size_t>(n))
              : ZSTD_CONTENTSIZE_ERROR;
    if (size != ZSTD_CONTENTSIZE_ERROR && size != ZSTD_CONTENTSIZE_UNKNOWN &&
        size <= kSmallBlob) {
      close(in);
      std::string data;
      Lookup why;
      if (!readBlob(d, data, why))
        return why;
      return writeFileAtomically(path, data, mode, error, journal)
                 ? Lookup::Hit
                 : Lookup::Error;
    }
  }
  std::string tmp =
      dirOf(path) + "/." + baseOf(path) + ".linkd-" + randomSuffix();
  if (journal)
    journal->note(tmp);
  int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    close(in);
    if (error)
      *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return Lookup::Error;
  }
  StreamResult r = raw ? rawVerifyCopy(in, rawSize, out, d)
                       : decompressVerifyCopy(in, out, d);
  close(in);
  bool written = r == StreamResult::Ok && fchmod(out, mode) == 0;
  written = close(out) == 0 && written;
  if (written && replaceFile(tmp, path)) {
    touchBlob(d);
    return Lookup::Hit;
  }
  int savedErrno = errno;
  unlink(tmp.c_str());
  if (r == StreamResult::Corrupt)
    return corruptBlob(d);
  if (error)
    *error = "cannot write " + path + ": " + std::strerror(savedErrno);
  return Lookup::Error;
}

bool LocalStore::putBlob(std::string_view data, Digest *digestOut) {
  Digest d = sha256(data);
  if (digestOut)
    *digestOut = d;
  std::string path = blobPath(d);
  struct stat st;
  uint64_t stored = 0;
  if (stat(path.c_str(), &st) == 0) {
    stored = static_cast<uint64_t>(st.st_size); // content-addressed: same bytes
  } else if (data.size() > cfg.compressLimit) {
    std::string raw(kRawMagic);
    raw += data;
    if (!ensureDirectoryTree(dirOf(path)).empty() || !writeRoomFor(path, raw))
      return false;
    stored = raw.size();
  } else {
    std::string compressed(ZSTD_compressBound(data.size()), '\0');
    // One context per thread, reused: ZSTD_compress() allocates and frees
    // a new one (its tables) on every call.
    thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx *)> cctx(
        ZSTD_createCCtx(), ZSTD_freeCCtx);
    size_t n =
        cctx ? ZSTD_compressCCtx(cctx.get(), compressed.data(),
                                 compressed.size(), data.data(), data.size(),
                                 cfg.compressionLevel)
             : ZSTD_compress(compressed.data(), compressed.size(), data.data(),
                             data.size(), cfg.compressionLevel);
    if (ZSTD_isError(n))
      return false;
    compressed.resize(n);
    if (std::string err = ensureDirectoryTree(dirOf(path)); !err.empty())
      return false;
    if (!writeRoomFor(path, compressed))
      return false;
    stored = n;
  }
  return indexBlob(d, data.size(), stored);
}

bool LocalStore::makeRoom(uint64_t needed) {
  uint64_t used = usage().bytes;
  // Twice what was asked for, or a tenth of the store: one full disk
  // should not cost an eviction per store.
  uint64_t freeing = std::max(2 * needed, used / 10);
  if (used == 0)
    return false;
  uint64_t evicted = evictTo(used > freeing ? used - freeing : 0);
  ++diskFullEvictions;
  if (cfg.warn && !warnedDiskFull.exchange(true))
    cfg.warn("the cache disk of " + cfg.root + " is full (" +
             std::to_string(used) + " bytes in the store, max_size " +
             std::to_string(cfg.maxBytes) + "): evicted " +
             std::to_string(evicted) +
             " least recently used entries to store new ones (said once)");
  return evicted > 0;
}

bool LocalStore::writeRoomFor(const std::string &path, std::string_view data) {
  if (writeFileAtomically(path, data, 0644, nullptr))
    return true;
  if (errno != ENOSPC && errno != EDQUOT)
    return false;
  return makeRoom(data.size()) &&
         writeFileAtomically(path, data, 0644, nullptr);
}

bool LocalStore::withRoomInIndex(uint64_t bytes,
                                 const std::function<int()> &step) {
  int rc = step();
  // The index's journal grows on the same disk as the blobs: a full disk
  // fails an insert as it fails a blob's write, and gets the same remedy.
  if (rc == SQLITE_FULL && makeRoom(bytes))
    rc = step();
  return rc == SQLITE_DONE;
}

bool LocalStore::indexBlob(const Digest &d, uint64_t size, uint64_t stored) {
  written = true;
  return withRoomInIndex(kIndexRowRoom, [&] {
    std::lock_guard lock(dbMu);
    auto q = db->cached("INSERT OR REPLACE INTO blobs(digest, size, stored, "
                        "last_use) VALUES(?, ?, ?, ?)");
    return q->bind(1, d.raw())
        .bind(2, static_cast<int64_t>(size))
        .bind(3, static_cast<int64_t>(stored))
        .bind(4, unixSecondsNow())
        .step();
  });
}

bool LocalStore::putBlobFromFile(int fd, uint64_t size, Digest *digestOut,
                                 const std::optional<Digest> &known,
                                 const ByteSink &sink) {
  if (size <= cfg.compressLimit) {
    std::string data(size, '\0');
    if (pread(fd, data.data(), size, 0) != static_cast<ssize_t>(size))
      return false;
    if (sink)
      sink(data);
    return putBlob(data, digestOut);
  }
  // Raw: copy into a temp file in the store, hash the copy, name it.
  std::string tmp = cfg.root + "/blobs/.incoming.linkd-" + randomSuffix();
  int out = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0)
    return false;
  bool ok = writeAll(out, kRawMagic) &&
            copyRange(fd, 0, out, static_cast<off_t>(kRawMagic.size()), size);
  if (!ok && (errno == ENOSPC || errno == EDQUOT) && ftruncate(out, 0) == 0 &&
      makeRoom(size + kRawMagic.size()))
    ok = lseek(out, 0, SEEK_SET) == 0 && writeAll(out, kRawMagic) &&
         copyRange(fd, 0, out, static_cast<off_t>(kRawMagic.size()), size);
  std::optional<Digest> d = known;
  if (ok && !d)
    d = hashRange(out, kRawMagic.size(), size, sink);
  else if (ok && sink)
    ok = readRange(out, static_cast<off_t>(kRawMagic.size()), size, nullptr,
                   sink);
  // Start writing the copy to disk now, while the store runs (after the
  // answer, at its low priority: daemon/linkd/service/background_work.h),
  // not ~30 s later when the kernel's flusher finds ~100 MB of it dirty in
  // the middle of whatever request runs then.
  if (ok)
    sync_file_range(out, 0, 0, SYNC_FILE_RANGE_WRITE);
  ok = close(out) == 0 && ok && d;
  std::string path = ok ? blobPath(*d) : std::string();
  if (ok)
    ok = ensureDirectoryTree(dirOf(path)).empty() &&
         rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    unlink(tmp.c_str());
    return false;
  }
  if (digestOut)
    *digestOut = *d;
  return indexBlob(*d, size, size + kRawMagic.size());
}

Lookup LocalStore::getAction(std::string_view ns, const Digest &key,
                             std::string &out) {
  std::string checksum;
  {
    std::lock_guard lock(dbMu);
    auto q = db->cached("SELECT value, checksum FROM actions "
                        "WHERE ns = ? AND key = ?");
    q->bindText(1, ns).bind(2, key.raw());
    int rc = q->step();
    if (rc == SQLITE_DONE)
      return Lookup::Miss;
    if (rc != SQLITE_ROW)
      return Lookup::Error;
    out = q->columnBlob(0);
    checksum = q->columnBlob(1);
  }
  if (sha256(out).raw() != checksum) {
    ++corrupt;
    out.clear();
    std::lock_guard lock(dbMu);
    SqliteStatement(db->handle(),
                    "DELETE FROM actions WHERE ns = ? AND key = ?")
        .bindText(1, ns)
        .bind(2, key.raw())
        .step();
    return Lookup::Corrupt;
  }
  touchAction(ns, key);
  return Lookup::Hit;
}

bool LocalStore::putAction(std::string_view ns, const Digest &key,
                           std::string_view value) {
  written = true;
  return withRoomInIndex(kIndexRowRoom + value.size(), [&] {
    std::lock_guard lock(dbMu);
    auto q = db->cached("INSERT OR REPLACE INTO actions(ns, key, value, "
                        "checksum, last_use) VALUES(?, ?, ?, ?, ?)");
    return q->bindText(1, ns)
        .bind(2, key.raw())
        .bind(3, value)
        .bind(4, sha256(value).raw())
        .bind(5, unixSecondsNow())
        .step();
  });
}

StoreUsage LocalStore::usage() {
  // On the maintenance connection: summing 100,000 rows takes ~30 ms, which
  // must not hold up lookups on the main one (WAL readers do not block).
  StoreUsage u;
  std::lock_guard lock(readMu);
  sqlite3 *h = readDb->handle();
  SqliteStatement b(h, "SELECT count(*), coalesce(sum(stored), 0) FROM blobs");
  if (b.step() == SQLITE_ROW) {
    u.blobs = static_cast<uint64_t>(b.columnInt(0));
    u.bytes += static_cast<uint64_t>(b.columnInt(1));
  }
  SqliteStatement a(h, "SELECT count(*), coalesce(sum(length(value)), 0) "
                       "FROM actions");
  if (a.step() == SQLITE_ROW) {
    u.actions = static_cast<uint64_t>(a.columnInt(0));
    u.bytes += static_cast<uint64_t>(a.columnInt(1));
  }
  u.entries = u.blobs + u.actions;
  return u;
}

void LocalStore::flushTouchesLocked() {
  std::map<Digest, int64_t> blobs;
  std::map<std::pair<std::string, Digest>, int64_t> actions;
  {
    std::lock_guard lock(touchMu);
    blobs.swap(blobTouches);
    actions.swap(actionTouches);
  }
  if (blobs.empty() && actions.empty())
    return;
  db->exec("BEGIN");
  SqliteStatement ub(db->handle(),
                     "UPDATE blobs SET last_use = ? WHERE digest = ?");
  for (auto &[d, t] : blobs) {
    ub.bind(1, t).bind(2, d.raw()).step();
    ub.reset();
  }
  SqliteStatement ua(
      db->handle(), "UPDATE actions SET last_use = ? WHERE ns = ? AND key = ?");
  for (auto &[k, t] : actions) {
    ua.bind(1, t).bindText(2, k.first).bind(3, k.second.raw()).step();
    ua.reset();
  }
  db->exec("COMMIT");
}

uint64_t LocalStore::maintain() {
  {
    std::lock_guard lock(dbMu);
    flushTouchesLocked();
  }
  // Recount only after writes (ours; another daemon's show up within a
  // minute), so an idle daemon costs nothing.
  auto now = std::chrono::steady_clock::now();
  if (!written.exchange(false) && now - lastRecount < std::chrono::minutes(1))
    return 0;
  lastRecount = now;
  StoreUsage u = usage();
  if (u.bytes <= cfg.maxBytes)
    return 0;
  return evictTo(cfg.maxBytes / 10 * 9);
}

uint64_t LocalStore::evictTo(uint64_t targetBytes) {
  uint64_t bytes = usage().bytes;
  uint64_t evicted = 0;
  while (bytes > targetBytes) {
    // Oldest first across both tables, a batch at a time so that links
    // waiting on the index lock are never held up for long.
    std::vector<std::pair<std::string, std::string>> batch; // (ns|"", key)
    std::vector<uint64_t> sizes;
    {
      std::lock_guard lock(readMu);
      SqliteStatement q(
          readDb->handle(),
          "SELECT '', digest, stored, last_use FROM blobs UNION ALL "
          "SELECT ns, key, length(value), last_use FROM actions "
          "ORDER BY 4 LIMIT 64");
      while (q.step() == SQLITE_ROW) {
        batch.emplace_back(q.columnBlob(0), q.columnBlob(1));
        sizes.push_back(static_cast<uint64_t>(q.columnInt(2)));
      }
    }
    if (batch.empty())
      break;
    for (size_t i = 0; i < batch.size() && bytes > targetBytes; ++i) {
      const auto &[ns, key] = batch[i];
      if (ns.empty()) {
        if (auto d = Digest::fromRaw(key))
          forgetBlob(*d);
      } else {
        std::lock_guard lock(dbMu);
        SqliteStatement(db->handle(),
                        "DELETE FROM actions WHERE ns = ? AND key = ?")
            .bindText(1, ns)
            .bind(2, key)
            .step();
      }
      bytes -= std::min(bytes, sizes[i]);
      ++evicted;
    }
  }
  evictions += evicted;
  return evicted;
}

bool LocalStore::clear() {
  {
    std::lock_guard lock(touchMu);
    blobTouches.clear();
    actionTouches.clear();
  }
  std::lock_guard lock(dbMu);
  SqliteStatement q(db->handle(), "SELECT digest FROM blobs");
  std::vector<std::string> digests;
  while (q.step() == SQLITE_ROW)
    digests.push_back(q.columnBlob(0));
  for (const std::string &raw : digests)
    if (auto d = Digest::fromRaw(raw))
      unlink(blobPath(*d).c_str());
  return db->exec("DELETE FROM blobs; DELETE FROM actions;");
}

uint64_t LocalStore::trim() {
  uint64_t removed = maintain();
  // Files without rows (a writer died between rename and insert).
  std::string blobsDir = cfg.root + "/blobs";
  if (DIR *top = opendir(blobsDir.c_str())) {
    while (dirent *shard = readdir(top)) {
      if (std::strncmp(shard->d_name, ".incoming.linkd-", 16) == 0) {
        std::string p = blobsDir + "/" + shard->d_name;
        struct stat st;
        if (stat(p.c_str(), &st) == 0 &&
            st.st_mtime < unixSecondsNow() - 3600) {
          unlink(p.c_str());
          ++removed;
        }
        continue;
      }
      if (shard->d_name[0] == '.')
        continue;
      std::string shardDir = blobsDir + "/" + shard->d_name;
      DIR *sd = opendir(shardDir.c_str());
      if (!sd)
        continue;
      while (dirent *e = readdir(sd)) {
        auto d = Digest::fromHex(e->d_name);
        if (!d) {
          // A writer's temp file (".<hex>.linkd-<random>") left by a crash;
          // an hour is far longer than any write takes.
          std::string p = shardDir + "/" + e->d_name;
          struct stat st;
          if (e->d_name[0] == '.' && std::strstr(e->d_name, ".linkd-") &&
              stat(p.c_str(), &st) == 0 &&
              st.st_mtime < unixSecondsNow() - 3600) {
            unlink(p.c_str());
            ++removed;
          }
          continue;
        }
        std::lock_guard lock(dbMu);
        SqliteStatement q(db->handle(), "SELECT 1 FROM blobs WHERE digest = ?");
        if (q.bind(1, d->raw()).step() != SQLITE_ROW) {
          unlink((shardDir + "/" + e->d_name).c_str());
          ++removed;
        }
      }
      closedir(sd);
    }
    closedir(top);
  }
  // Rows without files.
  std::vector<Digest> gone;
  {
    std::lock_guard lock(dbMu);
    SqliteStatement q(db->handle(), "SELECT digest FROM blobs");
    while (q.step() == SQLITE_ROW)
      if (auto d = Digest::fromRaw(q.columnBlob(0)); d && !hasBlob(*d))
        gone.push_back(*d);
  }
  for (const Digest &d : gone)
    forgetBlob(d);
  removed += gone.size();
  return removed;
}

} // namespace linkd
