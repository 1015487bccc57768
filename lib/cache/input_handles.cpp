// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/input_handles.h"

#include "cache/file_time.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <vector>

namespace linkd {
namespace {

struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>()(s);
  }
};

} // namespace

struct InputHandles::DirEntry {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t mtimeNs = 0, ctimeNs = 0;
  mutable std::atomic<uint64_t> lastUse{0};
  int watchableFs = -1; // the directory's file system: -1 not asked yet
  struct Held {
    int fd;
    ino_t ino;
    off_t size;
    int64_t mtimeNs, ctimeNs;
    bool known; // digest valid for that identity
    Digest digest;
    InputWatch::Mark *mark = nullptr; // null: not watched
    // mark->changes when the file last had that identity by fstat. Readers
    // (shared lock) store it through atomic_ref after such a check.
    mutable uint64_t seen = 0;

    bool sameIdentity(const struct stat &st) const {
      return st.st_ino == ino && st.st_size == size &&
             nanos(st.st_mtim) == mtimeNs && nanos(st.st_ctim) == ctimeNs;
    }
  };
  std::unordered_map<std::string, Held, NameHash, std::equal_to<>> files;

  bool same(const struct stat &st) const {
    return st.st_dev == dev && st.st_ino == ino &&
           nanos(st.st_mtim) == mtimeNs && nanos(st.st_ctim) == ctimeNs;
  }
  size_t closeAll(InputWatch &watch) {
    for (auto &[name, h] : files) {
      watch.release(h.mark);
      ::close(h.fd);
    }
    size_t n = files.size();
    files.clear();
    return n;
  }
};

namespace {

// Starts counting `h`'s events from now; the digest answers for the count
// only if the file still has the identity the digest was taken for (`h`'s,
// recorded from the caller's stat), checked after the count was read.
void armMark(InputHandles::DirEntry::Held &h) {
  if (!h.mark)
    return;
  h.seen = h.mark->changes.load(std::memory_order_acquire);
  struct stat now_st;
  if (!h.known || ::fstat(h.fd, &now_st) != 0 || !h.sameIdentity(now_st))
    h.seen = ~uint64_t(0); // never quiet: checked by fstat until re-armed
}

} // namespace

InputHandles::InputHandles(size_t maxFds, int64_t racyNanos, bool watchFiles)
    : maxFds(maxFds), racyNanos(racyNanos), watch(watchFiles && maxFds > 0) {}

InputHandles::~InputHandles() {
  for (auto &[dir, d] : dirs)
    d->closeAll(watch);
}

const InputHandles::DirEntry *InputHandles::find(const std::string &dir,
                                                 const struct stat &dirSt) {
  auto it = dirs.find(dir);
  if (it == dirs.end() || !it->second->same(dirSt))
    return nullptr;
  it->second->lastUse.store(++clock, std::memory_order_relaxed);
  return it->second.get();
}

bool InputHandles::stat(const DirEntry *d, std::string_view name,
                        struct stat *st, const Digest **digest) const {
  auto it = d->files.find(name);
  if (it == d->files.end())
    return false;
  const DirEntry::Held &h = it->second;
  std::atomic_ref<uint64_t> seen(h.seen);
  uint64_t changes = 0;
  if (h.mark) {
    changes = h.mark->changes.load(std::memory_order_acquire);
    if (h.known && !h.mark->dead.load(std::memory_order_acquire) &&
        changes == seen.load(std::memory_order_relaxed)) {
      *digest = &h.digest; // nothing touched the inode: no system call
      return true;
    }
  }
  if (::fstat(h.fd, st) != 0 || st->st_nlink == 0 || st->st_ino != h.ino)
    return false;
  *digest = h.known && h.sameIdentity(*st) ? &h.digest : nullptr;
  // The events counted so far are explained: the file still has the
  // identity its digest was taken for (read before the fstat, so a change
  // after it is counted later).
  if (*digest && h.mark)
    seen.store(changes, std::memory_order_relaxed);
  return true;
}

void InputHandles::hold(const std::string &dir, const struct stat &dirSt,
                        int dirFd, const char *name, const struct stat &st,
                        const Digest &digest) {
  if (!S_ISREG(st.st_mode) || maxFds == 0)
    return;
  int64_t now = wallNanosNow();
  bool racy = racyAt(dirSt, now, racyNanos);
  std::unique_lock lock(mu);
  auto it = dirs.find(dir);
  if (racy) {
    if (it != dirs.end()) {
      held -= it->second->closeAll(watch);
      dirs.erase(it);
    }
    return;
  }
  if (it == dirs.end())
    it = dirs.emplace(dir, std::make_unique<DirEntry>()).first;
  DirEntry &d = *it->second;
  if (!d.same(dirSt)) {
    held -= d.closeAll(watch);
    d.dev = dirSt.st_dev;
    d.ino = dirSt.st_ino;
    d.mtimeNs = nanos(dirSt.st_mtim);
    d.ctimeNs = nanos(dirSt.st_ctim);
    d.watchableFs = -1; // maybe another directory under the same name
  }
  d.lastUse.store(++clock, std::memory_order_relaxed);
  // The digest stands for this identity only if a change within the
  // timestamp granularity can be ruled out (the stat cache's rule).
  bool fileRacy = racyAt(st, now, racyNanos);
  DirEntry::Held entry{
      -1,        st.st_ino, st.st_size, nanos(st.st_mtim), nanos(st.st_ctim),
      !fileRacy, digest};
  if (auto f = d.files.find(std::string_view(name)); f != d.files.end()) {
    if (f->second.ino == st.st_ino) {
      // The same file, maybe with new content: keep its descriptor and mark.
      entry.fd = f->second.fd;
      entry.mark = f->second.mark;
      f->second = entry;
      armMark(f->second);
      return;
    }
    watch.release(f->second.mark);
    ::close(f->second.fd);
    d.files.erase(f);
    --held;
  }
  if (held >= maxFds)
    return; // the sweep makes room by letting old directories go
  // O_PATH: no read access needed, no atime, and a symlink is opened as
  // itself (O_NOFOLLOW), so it fails the regular-file check below.
  int fd = ::openat(dirFd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat now_st;
  if (::fstat(fd, &now_st) != 0 || !S_ISREG(now_st.st_mode) ||
      now_st.st_ino != st.st_ino || now_st.st_dev != st.st_dev) {
    ::close(fd);
    return;
  }
  entry.fd = fd;
  // Files on the directory's own file system (same device) take its answer,
  // asked once; a file mounted over from elsewhere is asked itself.
  bool watchable;
  if (now_st.st_dev == dirSt.st_dev) {
    if (d.watchableFs < 0)
      d.watchableFs = watchableFileSystem(dirFd);
    watchable = d.watchableFs == 1;
  } else {
    watchable = watchableFileSystem(fd);
  }
  if (watchable && watch.enabled())
    entry.mark = watch.add(fd); // armMark() checks the identity after this
  auto added = d.files.emplace(name, entry).first;
  ++held;
  armMark(added->second);
}

void InputHandles::refresh() { watch.drain(); }

void InputHandles::sweep() {
  watch.drain(); // keeps the queue short while no link looks
  std::unique_lock lock(mu);
  struct stat st;
  for (auto &[dir, d] : dirs) {
    for (auto f = d->files.begin(); f != d->files.end();) {
      if (::fstat(f->second.fd, &st) != 0 || st.st_nlink == 0) {
        watch.release(f->second.mark);
        ::close(f->second.fd);
        f = d->files.erase(f);
        --held;
      } else {
        ++f;
      }
    }
  }
  std::erase_if(dirs, [](const auto &kv) { return kv.second->files.empty(); });
  if (held <= maxFds - maxFds / 8)
    return;
  std::vector<std::pair<uint64_t, std::string>> byAge;
  for (auto &[dir, d] : dirs)
    byAge.emplace_back(d->lastUse.load(), dir);
  std::sort(byAge.begin(), byAge.end());
  for (auto &[age, dir] : byAge) {
    if (held <= maxFds / 2)
      break;
    auto it = dirs.find(dir);
    held -= it->second->closeAll(watch);
    dirs.erase(it);
  }
}

size_t inputHandleBudget() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    struct rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
      rl = raised;
  }
  if (rl.rlim_cur == RLIM_INFINITY)
    return 16384;
  return std::min<size_t>(rl.rlim_cur / 4, 16384);
}

} // namespace linkd
