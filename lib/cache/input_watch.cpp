// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/input_watch.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace linkd {
namespace {

constexpr uint32_t kFileEvents =
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF | IN_DELETE_SELF;

} // namespace

bool watchableFileSystem(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0)
    return false;
  switch (static_cast<uint64_t>(fs.f_type)) {
  case 0xEF53:     // ext2, ext3, ext4
  case 0x58465342: // XFS
  case 0x9123683E: // Btrfs
  case 0xF2F52010: // F2FS
  case 0x01021994: // tmpfs
    return true;
  default: // NFS, CIFS, FUSE, 9p, overlay, ...: changes can bypass inotify
    return false;
  }
}

InputWatch::InputWatch(bool enabled) {
  if (enabled)
    fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
}

InputWatch::~InputWatch() {
  for (auto &[wd, m] : byWd)
    delete m;
  if (fd >= 0)
    ::close(fd);
}

InputWatch::Mark *InputWatch::add(int fileFd) {
  if (fd < 0)
    return nullptr;
  // The magic link resolves to the inode itself, not to a name.
  std::string self = "/proc/self/fd/" + std::to_string(fileFd);
  std::lock_guard lock(mu);
  int wd = ::inotify_add_watch(fd, self.c_str(), kFileEvents);
  if (wd < 0)
    return nullptr; // ENOSPC (max_user_watches), EACCES, ...
  Mark *&m = byWd[wd];
  if (!m || m->dead.load()) { // a dead mark keeps its holders, not its wd
    m = new Mark;
    m->wd = wd;
  }
  ++m->refs;
  return m;
}

void InputWatch::release(Mark *m) {
  if (!m)
    return;
  std::lock_guard lock(mu);
  if (--m->refs > 0)
    return;
  if (auto it = byWd.find(m->wd); it != byWd.end() && it->second == m) {
    if (!m->dead.load())
      ::inotify_rm_watch(fd, m->wd); // queues an IN_IGNORED, dropped by drain()
    byWd.erase(it);
  }
  delete m;
}

void InputWatch::drain() {
  if (fd < 0)
    return;
  alignas(struct inotify_event) char buf[16384];
  std::lock_guard lock(mu);
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; // EAGAIN: the queue is empty
    for (char *p = buf; p < buf + n;) {
      auto *ev = reinterpret_cast<struct inotify_event *>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        for (auto &[wd, m] : byWd) // events were lost: anything may differ
          m->changes.fetch_add(1, std::memory_order_release);
        continue;
      }
      auto it = byWd.find(ev->wd);
      if (it == byWd.end())
        continue; // a watch released earlier
      if (ev->mask & IN_IGNORED)
        it->second->dead.store(true, std::memory_order_release);
      it->second->changes.fetch_add(1, std::memory_order_release);
    }
  }
}

size_t InputWatch::marks() const {
  std::lock_guard lock(mu);
  return byWd.size();
}

} // namespace linkd
