// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/liblinkd/private_dirs.h"

#include "util/files.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string_view>
#include <vector>

namespace linkd::kernel {
namespace {

// Removes what is under `dir` (not `dir`), but the entries named in
// `keep`; false if something could not be removed.
bool emptyDir(const std::string &dir, const char *keep = nullptr) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return false;
  bool ok = true;
  while (dirent *e = readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..") ||
        (keep && !std::strcmp(e->d_name, keep)))
      continue;
    std::string p = dir + "/" + e->d_name;
    struct stat st {};
    if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      ok = emptyDir(p) && rmdir(p.c_str()) == 0 && ok;
    } else {
      ok = unlink(p.c_str()) == 0 && ok;
    }
  }
  closedir(d);
  return ok;
}

// A directory waiting for its next link, and which inode it was: a name
// alone could by then be someone else's (a cleaner of the temporary
// directory removed ours, another user made one of that name with
// `work/k.o` a symbolic link to a file of ours).
struct Held {
  std::string dir;
  dev_t dev = 0;
  ino_t ino = 0;
};

// `path` is a real directory (not a symbolic link) of this user that no
// one else may enter; its identity in `st`.
bool ownPrivateDirectory(const std::string &path, struct stat &st) {
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
         st.st_uid == getuid() && (st.st_mode & 077) == 0;
}

// `h` is still the directory it was when given back, with its layout.
bool stillOurs(const Held &h) {
  struct stat st{}, sub{};
  return ownPrivateDirectory(h.dir, st) && st.st_dev == h.dev &&
         st.st_ino == h.ino && ownPrivateDirectory(h.dir + "/work", sub) &&
         ownPrivateDirectory(h.dir + "/view", sub) &&
         ownPrivateDirectory(h.dir + "/view/empty", sub);
}

struct Pool {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  std::vector<Held> free;        // directories waiting for a link
  bool closed = false;           // exiting: directories given back go
  std::atomic<pid_t> swept{0};   // the process that swept (sweepDeadOwners)
};

// Never destroyed: a thread may still be linking while the process exits
// (Python's daemon threads); the free directories go in removeAtExit.
Pool &pool() {
  static Pool *p = new Pool;
  return *p;
}

// At exit, or when the library is unloaded.
__attribute__((destructor)) void removeAtExit() {
  Pool &p = pool();
  pthread_mutex_lock(&p.mu);
  p.closed = true;
  std::vector<Held> dirs = std::move(p.free);
  p.free.clear();
  pthread_mutex_unlock(&p.mu);
  for (const Held &h : dirs)
    if (stillOurs(h))
      removeTree(h.dir);
}

// The child of a fork (maybe while another thread held the lock) gets an
// unlocked pool without its parent's directories.
void installForkHandlers() {
  pthread_atfork([] { pthread_mutex_lock(&pool().mu); },
                 [] { pthread_mutex_unlock(&pool().mu); },
                 [] {
                   pthread_mutex_unlock(&pool().mu);
                   pool().free.clear();
                   pool().swept = 0;
                 });
}
pthread_once_t gForkHandlers = PTHREAD_ONCE_INIT;

// A directory is left behind by a process that ended without its exit
// handlers (os._exit in a forked worker, a kill): the first link of each
// process removes those under `base` whose process is gone and which no
// link touched for an hour (a process of another PID namespace sharing the
// directory may look gone). Only this user's own directories, and only in
// a `base` where no other user can swap an entry for a symbolic link
// between the check and the removal: sticky, or writable by its owner only.
constexpr time_t kStaleSeconds = 3600;

void sweepDeadOwners(const std::string &base) {
  struct stat b {};
  if (stat(base.c_str(), &b) != 0 ||
      ((b.st_mode & (S_IWGRP | S_IWOTH)) && !(b.st_mode & S_ISVTX)))
    return;
  DIR *d = opendir(base.c_str());
  if (!d)
    return;
  std::vector<std::string> stale;
  time_t now = time(nullptr);
  while (dirent *e = readdir(d)) {
    std::string_view n = e->d_name;
    if (!n.starts_with("linkd-kernel."))
      continue;
    n.remove_prefix(13);
    long pid = std::strtol(std::string(n).c_str(), nullptr, 10);
    if (pid <= 0 || pid == getpid() || n.find('.') == n.npos ||
        kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;
    std::string dir = base + "/" + e->d_name;
    // Every link writes into `work` or `view` (inputs, the names list).
    struct stat st {}, work {}, view {};
    if (lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == getuid() &&
        lstat((dir + "/work").c_str(), &work) == 0 &&
        now - work.st_mtime > kStaleSeconds &&
        (lstat((dir + "/view").c_str(), &view) != 0 ||
         now - view.st_mtime > kStaleSeconds))
      stale.push_back(dir);
  }
  closedir(d);
  for (const std::string &dir : stale)
    removeTree(dir);
}

} // namespace

std::string takePrivateDir(const std::string &base, std::string &error) {
  pthread_once(&gForkHandlers, installForkHandlers);
  Pool &p = pool();
  pid_t self = getpid(), before = p.swept.load();
  if (before != self && p.swept.compare_exchange_strong(before, self))
    sweepDeadOwners(base);
  pthread_mutex_lock(&p.mu);
  std::optional<Held> held;
  std::string prefix =
      base + "/linkd-kernel." + std::to_string(getpid()) + ".";
  for (auto it = p.free.begin(); it != p.free.end(); ++it)
    if (it->dir.starts_with(prefix)) {
      held = std::move(*it);
      p.free.erase(it);
      break;
    }
  pthread_mutex_unlock(&p.mu);
  if (held && stillOurs(*held))
    return held->dir;
  // Gone meanwhile, in part or whole (a cleaner of the temporary
  // directory): a new one. What is at its name now is left alone: it is not
  // ours, or not as we left it.
  std::string templ = prefix + "XXXXXX";
  if (!mkdtemp(templ.data())) {
    error = "cannot create a temporary directory " + templ + ": " +
            std::strerror(errno);
    return {};
  }
  for (const char *sub : {"/work", "/view", "/view/empty"})
    if (mkdir((templ + sub).c_str(), 0700) != 0) {
      error = "cannot create " + templ + sub + ": " + std::strerror(errno);
      removeTree(templ);
      return {};
    }
  return templ;
}

void givePrivateDir(const std::string &dir) {
  struct stat st{};
  if (!ownPrivateDirectory(dir, st))
    return; // not ours (any more): nothing of it is touched
  Held held{dir, st.st_dev, st.st_ino};
  if (!emptyDir(dir + "/work") || !emptyDir(dir + "/view", "empty") ||
      !stillOurs(held)) {
    removeTree(dir);
    return;
  }
  Pool &p = pool();
  pthread_mutex_lock(&p.mu);
  bool keep = !p.closed;
  if (keep)
    p.free.push_back(std::move(held));
  pthread_mutex_unlock(&p.mu);
  if (!keep)
    removeTree(dir);
}

} // namespace linkd::kernel
