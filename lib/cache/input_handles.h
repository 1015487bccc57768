// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Descriptors held on recently validated inputs, so that checking a large
// link's inputs again costs one path walk per directory instead of one per
// file.
//
// Checking an input means knowing that its path still names the same inode
// and that the inode is unchanged. The second half is an fstat of a held
// O_PATH descriptor (about half the cost of a stat by path on this kernel:
// no path walk); the digest seen when the file was held answers for it as
// long as its size, mtime and ctime are the same and were not racy then
// (the stat cache's rule, cache/file_time.h), so no stat cache lookup either.
// The first half comes from the directory: creating, removing or renaming an
// entry changes the directory's mtime and ctime, so a directory whose (dev,
// ino, mtime, ctime) is what it was when the descriptors were opened still maps
// every name to the same inode. That holds only if the recorded times were not
// "racy": a directory changed within the timestamp granularity of the recording
// could change again without a visible difference, so directories whose times
// are within the racy window when recorded are not recorded (their files take
// the slow path: a stat per file, exactly what the check did before).
//
// What this does not trust: symlinks (the entry is held only if it is a
// regular file itself, since a link's target lives in another directory),
// and descriptors of unlinked inodes (nlink 0: the sweep closes them, so a
// deleted input does not pin its disk space). The number of descriptors is
// bounded; the least recently used directories are let go first.
//
// Held files on local file systems are also watched (input_watch.h): a file
// no event was queued for since it was last seen with its held identity is
// answered from memory, without the fstat. What remains per lookup is one
// stat per directory (which also covers renames of any ancestor).
#pragma once

#include "cache/input_watch.h"
#include "digest/digest.h"

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace linkd {

class InputHandles {
public:
  // `maxFds`: descriptors held at most. `racyNanos` as in the stat cache.
  // `watchFiles`: watch held files for changes (input_watch.h).
  InputHandles(size_t maxFds, int64_t racyNanos, bool watchFiles = true);
  ~InputHandles();
  InputHandles(const InputHandles &) = delete;
  InputHandles &operator=(const InputHandles &) = delete;

  struct DirEntry;
  // Readers hold this while they use a DirEntry (two threads check one
  // link's inputs at once; writers are the slow path and the sweep).
  std::shared_lock<std::shared_mutex> readLock() {
    return std::shared_lock(mu);
  }
  // The recorded state of `dir` if it is still `dirSt` (just stat'ed by
  // path), else null. Under readLock().
  const DirEntry *find(const std::string &dir, const struct stat &dirSt);
  // The state of the held file `name` in `d`; false when it is not held or
  // its file was unlinked (stat it by path instead). `*digest` is set when
  // the file still has the identity (size, mtime, ctime) it had when it was
  // held with a non-racy digest: then no stat cache lookup is needed. If its
  // watch saw no event since it last had that identity, that is known
  // without a system call and `st` is left alone; otherwise `st` is the
  // fstat of the held descriptor. Under readLock(), after refresh().
  bool stat(const DirEntry *d, std::string_view name, struct stat *st,
            const Digest **digest) const;

  // After files of `dir` were checked by path: records the directory (if its
  // times are not racy) and holds `name`, opened relative to `dirFd`, if it
  // is still the regular file `st` describes, with its content `digest`
  // (kept only if the file's own times are not racy either).
  void hold(const std::string &dir, const struct stat &dirSt, int dirFd,
            const char *name, const struct stat &st, const Digest &digest);

  // Applies the change events queued since the last call. Once per lookup,
  // before the first stat().
  void refresh();

  // Closes descriptors of unlinked files and of least recently used
  // directories above the cap. From the maintenance thread.
  void sweep();
  size_t heldCount() const { return held.load(); }
  size_t watchedCount() const { return watch.marks(); }
  bool watching() const { return watch.enabled(); }

private:
  size_t maxFds;
  int64_t racyNanos;
  std::shared_mutex mu;
  std::unordered_map<std::string, std::unique_ptr<DirEntry>> dirs;
  std::atomic<size_t> held{0};
  std::atomic<uint64_t> clock{0};
  InputWatch watch;
};

// A descriptor budget from RLIMIT_NOFILE (raising the soft limit to the hard
// one): a quarter of it, at most 16384.
size_t inputHandleBudget();

} // namespace linkd
