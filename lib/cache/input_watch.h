// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Change notification for held inputs (inotify), so that checking a held
// file nothing has touched costs no system call at all.
//
// A mark watches one inode (through /proc/self/fd of its held descriptor, so
// the inode is the one that was checked, whatever its name now binds). Each
// event queued for it adds one to its `changes`; a holder remembers the count
// it saw when it last checked the file by fstat, and a file whose count has
// not moved since was not changed by anything inotify reports:
//   write(2) and its relatives, truncate, fallocate, copy_file_range, splice
//   and io_uring writes (IN_MODIFY); times, mode, owner and link count
//   (IN_ATTRIB); a close after opening for writing (IN_CLOSE_WRITE); the
//   inode renamed or deleted (IN_MOVE_SELF, IN_DELETE_SELF, IN_IGNORED).
// Events are queued by the kernel before the writing call returns, so a
// change made before a link request was sent is in the queue when the
// request's lookup drains it. A queue overflow counts as a change of every
// mark.
//
// What inotify does not report (inotify(7)): stores through a shared
// writable mapping — until the mapping goes away: IN_CLOSE_WRITE comes from
// the last reference to the open file, the writer's munmap or exit — and
// changes made behind the kernel's back (another host on a network file
// system, an overlay's lower layer, FUSE). Only files on local disk file
// systems (ext2/3/4, XFS, Btrfs, F2FS, tmpfs) are watched; others, and
// every file when `watch_inputs = false`, are checked by fstat as before.
// What this trusts that an fstat would catch: an input written through a
// shared mapping by a process that still holds the mapping when a link
// starts (docs/design.md, "Watching held inputs").
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace linkd {

class InputWatch {
public:
  struct Mark {
    int wd = -1;
    int refs = 0;                     // holders (hard links share a mark)
    std::atomic<uint64_t> changes{0}; // events seen for the inode
    std::atomic<bool> dead{false};    // the kernel dropped the watch
  };

  // `enabled` false: add() always returns null.
  explicit InputWatch(bool enabled);
  ~InputWatch();
  InputWatch(const InputWatch &) = delete;
  InputWatch &operator=(const InputWatch &) = delete;

  bool enabled() const { return fd >= 0; }

  // A mark on the inode open as `fileFd` (O_PATH will do), or null when it
  // cannot be watched (out of watches, off). The caller has checked its
  // file system with watchableFileSystem().
  // Read `changes` only after this returns, then verify the file by fstat:
  // a change between the caller's check and the mark is seen only there.
  Mark *add(int fileFd);
  // The holder is done with `m` (its last one removes the watch). The caller
  // guarantees nobody reads `m` any more.
  void release(Mark *m);

  // Applies every queued event to its mark. Call before checking files.
  void drain();

  // True if nothing reported a change of `m`'s inode since `seen` was read
  // from it.
  static bool quiet(const Mark &m, uint64_t seen) {
    return !m.dead.load(std::memory_order_acquire) &&
           m.changes.load(std::memory_order_acquire) == seen;
  }

  size_t marks() const;

private:
  int fd = -1;
  mutable std::mutex mu;
  std::unordered_map<int, Mark *> byWd;
};

// Whether the file system of `fd` reports every change through inotify.
bool watchableFileSystem(int fd);

} // namespace linkd
