// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_node/farm_blobs.h"

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

FarmBlobStore::FarmBlobStore(std::string root, uint64_t maxBytes)
    : dir(std::move(root)), maxBytes(maxBytes) {}

std::string FarmBlobStore::open() {
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
  return {};
}

std::string FarmBlobStore::pathOf(const Digest &d) const {
  std::string hex = d.hex();
  return dir + "/" + hex.substr(0, 2) + "/" + hex;
}

std::string FarmBlobStore::partialPath(const Digest &d) const {
  return dir + "/partial/" + d.hex();
}

bool FarmBlobStore::has(const Digest &d) {
  std::string p = pathOf(d);
  // Touch on use: eviction goes by modification time.
  return utimensat(AT_FDCWD, p.c_str(), nullptr, 0) == 0;
}

uint64_t FarmBlobStore::partialSize(const Digest &d) const {
  struct stat st{};
  if (stat(partialPath(d).c_str(), &st) != 0)
    return 0;
  return static_cast<uint64_t>(st.st_size);
}

bool FarmBlobStore::append(const Digest &d, uint64_t offset,
                           std::string_view data) {
  std::lock_guard lock(mu);
  std::string p = partialPath(d);
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  // Append-only: a chunk lands at the file's end, or at 0 to start over.
  // A chunk at an offset in between would overwrite bytes that the
  // uploader's streamed digest already covers, and the file would then hold
  // other content than the digest commit() is given (issue 35: a stored
  // libc.so replaced by an upload whose chunks overlapped).
  struct stat st{};
  bool ok = fstat(fd, &st) == 0 &&
            (offset == 0 || offset == static_cast<uint64_t>(st.st_size));
  if (ok && offset == 0 && st.st_size != 0)
    ok = ftruncate(fd, 0) == 0;
  while (ok && !data.empty()) {
    ssize_t n =
        pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    if (ok) {
      data.remove_prefix(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
  }
  close(fd);
  return ok;
}

bool FarmBlobStore::commit(const Digest &d, std::string *error,
                           const std::optional<Digest> &hashed) {
  std::string p = partialPath(d);
  std::string err;
  std::optional<Digest> got = hashed;
  if (!got)
    if (auto h = sha256File(p, &err))
      got = h->digest;
  if (!got || *got != d) {
    unlink(p.c_str());
    *error = got ? "uploaded content does not match its digest " + d.hex()
                 : "cannot read upload: " + err;
    return false;
  }
  std::string final = pathOf(d);
  std::string sub = final.substr(0, final.rfind('/'));
  if (mkdir(sub.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = "cannot create " + sub + ": " + std::strerror(errno);
    return false;
  }
  chmod(p.c_str(), 0444);
  if (std::string e = publish(p, final, d); !e.empty()) {
    *error = e;
    return false;
  }
  std::lock_guard lock(claimsMu);
  claims.erase(d);
  return true;
}

bool FarmBlobStore::claimUpload(const Digest &d, uint64_t owner) {
  std::lock_guard lock(claimsMu);
  auto [it, fresh] = claims.emplace(d, owner);
  return fresh || it->second == owner;
}

void FarmBlobStore::releaseUploads(uint64_t owner) {
  std::lock_guard lock(claimsMu);
  std::erase_if(claims, [&](const auto &c) { return c.second == owner; });
}

std::string FarmBlobStore::storeWhole(const Digest &d, std::string_view data) {
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

std::string FarmBlobStore::publish(const std::string &from,
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

uint64_t FarmBlobStore::bytes() const {
  uint64_t total = 0;
  for (const BlobFile &b : listBlobs(dir))
    total += b.size;
  return total;
}

uint64_t FarmBlobStore::evict() {
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
