// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/blobs/blob_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h> // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace linkd {

BlobStore::BlobStore(std::string root, uint64_t maxBytes)
    : dir(std::move(root)), maxBytes(maxBytes) {}

std::string BlobStore::open() {
  std::vector<std::string> dirs = {dir, dir + "/partial"};
  // The 256 fan-out directories now rather than during a link's upload: on
  // ext4 an inode allocation can cost ~1 ms (the allocator skips recently
  // deleted inodes), and a cold W1 upload met ~150 of them.
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 256; ++i)
    dirs.push_back(dir + "/" + hex[i >> 4] + hex[i & 15]);
  for (const std::string &d : dirs) {
    if (mkdir(d.c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create " + d + ": " + std::strerror(errno);
  }
  // Whose they were went with the process that wrote them.
  if (DIR *partial = opendir((dir + "/partial").c_str())) {
    while (dirent *e = readdir(partial))
      if (e->d_name[0] != '.')
        unlinkat(dirfd(partial), e->d_name, 0);
    closedir(partial);
  }
  return {};
}

std::string BlobStore::pathOf(const Digest &d) const {
  std::string hex = d.hex();
  return dir + "/" + hex.substr(0, 2) + "/" + hex;
}

bool BlobStore::has(const Digest &d) {
  std::string p = pathOf(d);
  // Touch on use: eviction goes by modification time.
  return utimensat(AT_FDCWD, p.c_str(), nullptr, 0) == 0;
}

std::optional<uint64_t> BlobStore::beginUpload(const Digest &d,
                                               const std::string &tenant,
                                               uint64_t owner, bool alongside) {
  std::lock_guard lock(mu);
  if (auto u = uploads.find({d, owner}); u != uploads.end())
    return u->second.size;
  Key key{d, tenant};
  auto claim = claims.find(key);
  if (claim != claims.end() && !alongside)
    return std::nullopt;
  Upload u;
  u.tenant = tenant;
  u.path = dir + "/partial/" + d.hex() + ".u" + std::to_string(owner);
  u.progressAt = Clock::now();
  if (auto left = resumable.find(key); left != resumable.end()) {
    struct stat st{};
    if (rename(left->second.path.c_str(), u.path.c_str()) == 0 &&
        lstat(u.path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      u.size = static_cast<uint64_t>(st.st_size);
    else
      unlink(u.path.c_str());
    resumable.erase(left);
  }
  // A file that cannot be made (a full disk) still makes the upload the
  // link's: its first chunk then fails and so does the link, with an error,
  // where "another upload is under way" would have had it wait for nothing
  // until the link timeout.
  if (u.size == 0) {
    int fd =
        ::open(u.path.c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
      close(fd);
  }
  uploads.emplace(std::pair{d, owner}, u);
  if (claim == claims.end())
    claims.emplace(key, owner);
  return u.size;
}

std::optional<BlobStore::Clock::time_point>
BlobStore::uploadProgress(const Digest &d, const std::string &tenant) const {
  std::lock_guard lock(mu);
  auto claim = claims.find({d, tenant});
  if (claim == claims.end())
    return std::nullopt;
  auto u = uploads.find({d, claim->second});
  if (u == uploads.end())
    return std::nullopt;
  return u->second.progressAt;
}

uint64_t BlobStore::partialSize(const Digest &d, uint64_t owner) const {
  std::lock_guard lock(mu);
  auto u = uploads.find({d, owner});
  return u == uploads.end() ? 0 : u->second.size;
}

bool BlobStore::append(const Digest &d, uint64_t owner, uint64_t offset,
                       std::string_view data) {
  std::string path;
  uint64_t size;
  {
    std::lock_guard lock(mu);
    auto u = uploads.find({d, owner});
    if (u == uploads.end())
      return false;
    path = u->second.path;
    size = u->second.size;
  }
  // Append-only: a chunk lands at the file's end, or at 0 to start over.
  // A chunk at an offset in between would overwrite bytes that the
  // uploader's streamed digest already covers, and the file would then hold
  // other content than the digest commit() is given (a stored
  // libc.so replaced by an upload whose chunks overlapped).
  if (offset != 0 && offset != size)
    return false;
  int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool ok = offset != 0 || size == 0 || ftruncate(fd, 0) == 0;
  uint64_t written = 0;
  while (ok && !data.empty()) {
    ssize_t n = pwrite(fd, data.data(), data.size(),
                       static_cast<off_t>(offset + written));
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    if (ok) {
      data.remove_prefix(static_cast<size_t>(n));
      written += static_cast<uint64_t>(n);
    }
  }
  close(fd);
  std::lock_guard lock(mu);
  auto u = uploads.find({d, owner});
  if (u == uploads.end())
    return false;
  u->second.size = offset + written;
  u->second.sinceProgress += written;
  if (u->second.sinceProgress >= kProgressBytes) {
    u->second.sinceProgress = 0;
    u->second.progressAt = Clock::now();
  }
  return ok;
}

void BlobStore::endUpload(const Digest &d, uint64_t owner, const Upload &u) {
  auto claim = claims.find({d, u.tenant});
  if (claim != claims.end() && claim->second == owner)
    claims.erase(claim);
  uploads.erase({d, owner});
}

bool BlobStore::commit(const Digest &d, uint64_t owner, std::string *error,
                       const std::optional<Digest> &hashed,
                       const std::function<void()> &published) {
  Upload u;
  {
    std::lock_guard lock(mu);
    auto it = uploads.find({d, owner});
    if (it == uploads.end()) {
      *error = "no upload of " + d.hex() + " under way";
      return false;
    }
    u = it->second;
  }
  // Whatever happens, the upload ends here; the claim last, so that a link
  // waiting for it finds the blob (and `published`'s effect) when it goes.
  auto end = [&] {
    std::lock_guard lock(mu);
    endUpload(d, owner, u);
  };
  std::string err;
  std::optional<Digest> got = hashed;
  if (!got)
    if (auto h = sha256File(u.path, &err))
      got = h->digest;
  std::string final = pathOf(d);
  std::string sub = final.substr(0, final.rfind('/'));
  std::string e;
  if (!got || *got != d) {
    e = got ? "uploaded content does not match its digest " + d.hex()
            : "cannot read upload: " + err;
  } else if (mkdir(sub.c_str(), 0700) != 0 && errno != EEXIST) {
    e = "cannot create " + sub + ": " + std::strerror(errno);
  } else {
    chmod(u.path.c_str(), 0444);
    e = publish(u.path, final, d);
  }
  if (!e.empty()) {
    unlink(u.path.c_str());
    end();
    *error = e;
    return false;
  }
  if (published)
    published();
  end();
  return true;
}

void BlobStore::releaseUploads(uint64_t owner) {
  std::lock_guard lock(mu);
  Clock::time_point now = Clock::now();
  for (auto it = uploads.begin(); it != uploads.end();) {
    if (it->first.second != owner) {
      ++it;
      continue;
    }
    Digest d = it->first.first;
    Upload u = it->second;
    ++it;
    endUpload(d, owner, u);
    Key key{d, u.tenant};
    auto left = resumable.find(key);
    if (u.size == 0) {
      unlink(u.path.c_str());
      continue;
    }
    // The longest one stays for the tenant's next link.
    if (left != resumable.end()) {
      struct stat st{};
      if (stat(left->second.path.c_str(), &st) == 0 &&
          static_cast<uint64_t>(st.st_size) >= u.size) {
        unlink(u.path.c_str());
        continue;
      }
      unlink(left->second.path.c_str());
    }
    resumable[key] = {u.path, now};
  }
  dropStaleResumable(now);
}

void BlobStore::dropStaleResumable(Clock::time_point now) {
  std::erase_if(resumable, [&](const auto &r) {
    if (now - r.second.at < kResumableFor)
      return false;
    unlink(r.second.path.c_str());
    return true;
  });
  // And the oldest beyond a count: what links leave must not pile up
  // within the hour either.
  while (resumable.size() > kMaxResumable) {
    auto oldest = std::min_element(
        resumable.begin(), resumable.end(),
        [](const auto &a, const auto &b) { return a.second.at < b.second.at; });
    unlink(oldest->second.path.c_str());
    resumable.erase(oldest);
  }
}

std::string BlobStore::storeWhole(const Digest &d, std::string_view data) {
  std::string tmp = dir + "/partial/" + d.hex() + ".w" +
                    std::to_string(getpid()) + "-" + std::to_string(++wholeSeq);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0)
    return "cannot create " + tmp + ": " + std::strerror(errno);
  bool ok = true;
  while (ok && !data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    if (ok)
      data.remove_prefix(static_cast<size_t>(n));
  }
  std::string e = ok ? "" : "cannot write " + tmp + ": " + std::strerror(errno);
  if (close(fd) != 0 && e.empty())
    e = "cannot write " + tmp + ": " + std::strerror(errno);
  if (e.empty())
    e = publish(tmp, pathOf(d), d);
  if (!e.empty())
    unlink(tmp.c_str());
  return e;
}

std::string BlobStore::publish(const std::string &from,
                               const std::string &final, const Digest &d) {
  // A blob in place was verified when it came; links may be reading it.
  // It is never replaced: a second upload of the same digest is dropped.
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, final.c_str(),
                RENAME_NOREPLACE) == 0)
    return {};
  if (errno != EEXIST)
    return "cannot publish blob " + d.hex() + ": " + std::strerror(errno);
  unlink(from.c_str());
  return {};
}

namespace {

struct BlobFile {
  std::string path;
  uint64_t size;
  int64_t mtime;
};

std::vector<BlobFile> listBlobs(const std::string &root) {
  std::vector<BlobFile> out;
  DIR *top = opendir(root.c_str());
  if (!top)
    return out;
  while (dirent *e = readdir(top)) {
    if (std::strlen(e->d_name) != 2)
      continue;
    std::string sub = root + "/" + e->d_name;
    DIR *d = opendir(sub.c_str());
    if (!d)
      continue;
    while (dirent *f = readdir(d)) {
      if (f->d_name[0] == '.')
        continue;
      std::string p = sub + "/" + f->d_name;
      struct stat st{};
      if (stat(p.c_str(), &st) == 0)
        out.push_back({p, static_cast<uint64_t>(st.st_size),
                       st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec});
    }
    closedir(d);
  }
  closedir(top);
  return out;
}

} // namespace

uint64_t BlobStore::bytes() const {
  uint64_t total = 0;
  for (const BlobFile &b : listBlobs(dir))
    total += b.size;
  return total;
}

uint64_t BlobStore::evict() {
  {
    std::lock_guard lock(mu);
    dropStaleResumable(Clock::now());
  }
  std::vector<BlobFile> all = listBlobs(dir);
  uint64_t total = 0;
  for (const BlobFile &b : all)
    total += b.size;
  if (total <= maxBytes)
    return 0;
  std::sort(all.begin(), all.end(), [](const BlobFile &a, const BlobFile &b) {
    return a.mtime < b.mtime;
  });
  uint64_t removed = 0;
  // A link that holds a blob open keeps reading it after the unlink.
  for (const BlobFile &b : all) {
    if (total <= maxBytes / 10 * 9)
      break;
    if (unlink(b.path.c_str()) == 0) {
      total -= b.size;
      ++removed;
    }
  }
  return removed;
}

} // namespace linkd

#include <zstd.h>

namespace linkd {

std::string compressChunk(std::string_view raw, bool *compressed) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 1);
  if (ZSTD_isError(n) || n >= raw.size()) {
    *compressed = false;
    return std::string(raw);
  }
  out.resize(n);
  *compressed = true;
  return out;
}

std::optional<std::string> decompressChunk(std::string_view data,
                                           size_t maxRaw) {
  unsigned long long size = ZSTD_getFrameContentSize(data.data(), data.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
      size > maxRaw)
    return std::nullopt;
  std::string out(static_cast<size_t>(size), '\0');
  size_t n = ZSTD_decompress(out.data(), out.size(), data.data(), data.size());
  if (ZSTD_isError(n) || n != size)
    return std::nullopt;
  return out;
}

} // namespace linkd
