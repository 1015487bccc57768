// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/access_recorder.h"

#include "daemon/linkd-lld/local_view.h"
#include "daemon/linkd-lld/report_sender.h"
#include "daemon/linkd-lld/sandbox_child.h"
#include "store/temp_journal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

// Process-global by necessity (see the header).
int gRecordFd = -1;
// Records wait here and go out in large writes: one write per record woke
// the daemon's pump thread for each (51 for a small C program), a context
// switch apiece. Flushed when full, before the process starts another
// program or forks, and on every way out (exit, _exit, _Exit); a link that
// dies of a signal loses the tail, and such a link is never stored.
std::mutex gBufMu;
char gBuf[1 << 16];
size_t gBufLen = 0;
bool gUnbuffered = false; // after exit() began: atexit handlers write directly
char gCwd[PATH_MAX];
size_t gCwdLen = 0;
int gJournalFd = -1; // the daemon's temporaries journal (startTempJournal)

using RealpathFn = char *(*)(const char *, char *);
using OpendirFn = DIR *(*)(const char *);
using ExecveFn = int (*)(const char *, char *const[], char *const[]);
using ExecvFn = int (*)(const char *, char *const[]);
using ForkFn = pid_t (*)();
using SpawnFn = int (*)(pid_t *, const char *,
                        const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[],
                        char *const[]);
using ChdirFn = int (*)(const char *);
using GetcwdFn = char *(*)(char *, size_t);
using ExitFn = void (*)(int);

RealpathFn realRealpath = nullptr;
OpendirFn realOpendir = nullptr;
ExecveFn realExecve = nullptr;
ExecvFn realExecv = nullptr;
ForkFn realFork = nullptr;
SpawnFn realSpawn = nullptr;
ChdirFn realChdir = nullptr;
GetcwdFn realGetcwd = nullptr;
ExitFn realExit = nullptr;
void (*gExitHook)(int) = nullptr;

void runExitHook(int status) {
  if (auto *hook = gExitHook) {
    gExitHook = nullptr;
    hook(status);
  }
}

template <typename Fn> Fn next(Fn &slot, const char *name) {
  if (!slot)
    slot = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  return slot;
}

bool recording() { return gRecordFd >= 0; }

// Whether this thread holds gBufMu. A signal handler that runs on it
// meanwhile (LLVM's, which stats and removes files on SIGTERM and exits on
// SIGPIPE, the very signal a write to a dead daemon's pipe raises inside
// writeRecords) records nothing rather than wait for itself forever.
thread_local bool tHoldsBuf = false;
struct BufLock {
  std::lock_guard<std::mutex> lock{gBufMu};
  BufLock() { tHoldsBuf = true; }
  ~BufLock() { tHoldsBuf = false; }
};

void writeRecords(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(gRecordFd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return; // the daemon went away; the link is not stored then
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// ignoreAccessesUnder's directory with a '/' after it; empty: none.
char gIgnored[PATH_MAX + 1];
size_t gIgnoredLen = 0;

// Whether the absolute path at `p` (NUL-terminated) is under gIgnored.
bool ignored(const char *p) {
  return gIgnoredLen && std::strncmp(p, gIgnored, gIgnoredLen) == 0;
}

// keepMissingProbes: the paths probed and not found, kept in the process
// too (under gBufMu), NUL after each, in a buffer of their own: record()
// runs in signal handlers too, where nothing may allocate. More than it
// holds: none kept (takeMissingProbes answers nullopt).
bool gKeepMissing = false;
bool gMissingOverflow = false;
char gMissing[256 << 10];
size_t gMissingLen = 0;

// kind, absolute path(s), NUL after each path; into the buffer whole.
void record(char kind, const char *path, const char *path2 = nullptr) {
  char buf[4096];
  size_t n = 0;
  auto put = [&](const char *p) {
    if (!p)
      return true;
    size_t len = std::strlen(p);
    bool relative = p[0] != '/';
    size_t need = (relative ? gCwdLen + 1 : 0) + len + 1;
    if (n + need > sizeof(buf))
      return false;
    if (relative) {
      std::memcpy(buf + n, gCwd, gCwdLen);
      n += gCwdLen;
      buf[n++] = '/';
    }
    std::memcpy(buf + n, p, len);
    n += len;
    buf[n++] = '\0';
    return true;
  };
  if (tHoldsBuf)
    return;
  buf[n++] = kind;
  if (!put(path) || !put(path2)) {
    buf[0] = 'E';
    n = 1;
    buf[n++] = '\0';
  } else if (ignored(buf + 1) &&
             (!path2 || ignored(buf + 1 + std::strlen(buf + 1) + 1))) {
    return;
  }
  int saved = errno;
  {
    BufLock lock;
    if (gKeepMissing && kind == 'M') {
      if (gMissingLen + (n - 1) <= sizeof(gMissing)) {
        std::memcpy(gMissing + gMissingLen, buf + 1, n - 1);
        gMissingLen += n - 1;
      } else {
        gMissingOverflow = true;
      }
    }
    if (gUnbuffered) {
      writeRecords(buf, n);
    } else {
      if (gBufLen + n > sizeof(gBuf)) {
        writeRecords(gBuf, gBufLen);
        gBufLen = 0;
      }
      std::memcpy(gBuf + gBufLen, buf, n);
      gBufLen += n;
    }
  }
  errno = saved;
}

// Writes out what record() collected. `direct`: later records are written
// one by one (the process is on its way out).
void flushRecords(bool direct = false) {
  if (!recording() || tHoldsBuf)
    return;
  int saved = errno;
  BufLock lock;
  writeRecords(gBuf, gBufLen);
  gBufLen = 0;
  gUnbuffered = gUnbuffered || direct;
  errno = saved;
}

void recordExistence(const char *path, long rc) {
  if (rc == 0)
    record('S', path);
  else if (errno == ENOENT || errno == ENOTDIR)
    record('M', path);
  else
    record('E', path);
}

using namespace linkd::sandbox;
using linkd::local_view::viewed;

long doStat(const char *path, struct stat *st, int flags) {
  // In the sandbox symbolic links were followed by the client's kernel.
  if (sandboxActive())
    return sbStat(path, st);
  if (!(path = viewed(path, false)))
    return -1;
  return syscall(SYS_newfstatat, AT_FDCWD, path, st, flags);
}

// Link-time rewriting: reads of these files open the rewritten copy.
struct Redirect {
  dev_t dev;
  ino_t ino;
  std::string target;
};
std::vector<Redirect> gRedirects;

const char *redirected(const char *path, int flags) {
  if (gRedirects.empty() || (flags & O_ACCMODE) != O_RDONLY ||
      (flags & (O_CREAT | O_TRUNC)))
    return path;
  struct stat st;
  int saved = errno;
  bool found = doStat(path, &st, 0) == 0;
  errno = saved;
  if (found)
    for (const Redirect &r : gRedirects)
      if (r.dev == st.st_dev && r.ino == st.st_ino)
        return r.target.c_str();
  return path;
}

// `path` made absolute into `buf` (against the link's cwd); its length, or
// 0 if it does not fit.
size_t absoluteInto(const char *path, char *buf, size_t size) {
  size_t len = std::strlen(path), n = 0;
  bool relative = path[0] != '/';
  if ((relative ? gCwdLen + 1 : 0) + len + 2 > size)
    return 0;
  if (relative) {
    std::memcpy(buf, gCwd, gCwdLen);
    n = gCwdLen;
    buf[n++] = '/';
  }
  std::memcpy(buf + n, path, len);
  return n + len;
}

// Before an O_CREAT open: if it is about to create one of LLD's temporaries
// (`<out>.tmpXXXXXXX`, store/temp_journal.h: so named, and not there yet),
// says so first, to the journal and as a 'W' record sent at once. A signal
// that arrives while the file is created is delivered when the system call
// returns, before any code after it, and LLVM registers the file for
// removal on a signal only later: whatever kills the link from here on,
// the daemon, or the next one, knows the name. True if announced.
bool announceTemporary(const char *path, int flags) {
  if (!(flags & O_CREAT) || sandboxActive() || (gJournalFd < 0 && !recording()))
    return false;
  char line[PATH_MAX + 2];
  size_t n = absoluteInto(path, line, sizeof(line));
  std::string_view name(line, n);
  struct stat st;
  int saved = errno;
  bool announce =
      n > 0 && linkd::isLldTemporary(name) && name.find('\n') == name.npos &&
      syscall(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0;
  if (announce && gJournalFd >= 0) {
    line[n] = '\n';
    while (::write(gJournalFd, line, n + 1) < 0 && errno == EINTR) {
    }
  }
  errno = saved;
  if (announce && recording()) {
    record('W', path);
    flushRecords();
  }
  return announce;
}

int doOpen(const char *path, int flags, mode_t mode) {
  bool writes =
      (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
  // The library's local view and the recorder are never on together.
  if (!(path = viewed(path, writes)))
    return -1;
  bool announced = announceTemporary(path, flags);
  // Never both: the farm does not take link-time rewriting.
  int fd =
      sandboxActive()
          ? sbOpen(path, flags, mode)
          : static_cast<int>(syscall(SYS_openat, AT_FDCWD,
                                     redirected(path, flags), flags, mode));
  if (!recording())
    return fd;
  if (announced) {
    if (fd < 0) { // announced, never created
      record('U', path);
      record('E', path);
    }
  } else if (fd >= 0) {
    record(writes ? 'W' : 'R', path);
    // Sent at once: if the child is killed before it renames the file, the
    // daemon removes it by this record (lib/cache/link_litter.h). A link
    // writes few files.
    if (writes)
      flushRecords();
  } else if (!writes && (errno == ENOENT || errno == ENOTDIR))
    record('M', path);
  else
    record('E', path);
  return fd;
}

mode_t modeArg(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? static_cast<mode_t>(va_arg(ap, int))
                                         : 0;
}

} // namespace

namespace linkd {

void prepareAccessRecording() {
  next(realRealpath, "realpath");
  next(realOpendir, "opendir");
  next(realExecve, "execve");
  next(realExecv, "execv");
  next(realFork, "fork");
  next(realSpawn, "posix_spawn");
  next(realChdir, "chdir");
  next(realGetcwd, "getcwd");
  next(realExit, "exit");
}

std::string redirectReads(const std::string &original,
                          const std::string &target) {
  struct stat st;
  if (doStat(original.c_str(), &st, 0) != 0)
    return original + ": " + std::strerror(errno);
  gRedirects.push_back({st.st_dev, st.st_ino, target});
  return {};
}

namespace {

void setCwd(const std::string &cwd) {
  gCwdLen = std::min(cwd.size(), sizeof(gCwd) - 1);
  std::memcpy(gCwd, cwd.data(), gCwdLen);
  gCwd[gCwdLen] = '\0';
}

} // namespace

void startAccessRecording(int fd, const std::string &cwd) {
  prepareAccessRecording();
  setCwd(cwd);
  gRecordFd = fd;
}

void startTempJournal(int fd, const std::string &cwd) {
  setCwd(cwd);
  gJournalFd = fd;
}

void setExitHook(void (*hook)(int status)) { gExitHook = hook; }

void endLinkRecording(int status) {
  runExitHook(status);
  flushRecords();
  std::lock_guard lock(gBufMu);
  gRecordFd = -1;
  gJournalFd = -1;
  gBufLen = 0;
  gUnbuffered = false;
}

bool readsRedirected() { return !gRedirects.empty(); }

void ignoreAccessesUnder(const std::string &dir) {
  if (dir.empty() || dir[0] != '/' || dir.size() + 1 >= sizeof(gIgnored))
    return;
  std::memcpy(gIgnored, dir.data(), dir.size());
  gIgnored[dir.size()] = '/';
  gIgnored[dir.size() + 1] = '\0';
  gIgnoredLen = dir.size() + 1;
}

void keepMissingProbes() {
  BufLock lock;
  gKeepMissing = true;
}

std::optional<std::vector<std::string>> takeMissingProbes() {
  if (!recording())
    return std::nullopt;
  BufLock lock;
  std::optional<std::vector<std::string>> paths;
  if (!gMissingOverflow) {
    paths.emplace();
    for (size_t at = 0; at < gMissingLen;) {
      size_t len = std::strlen(gMissing + at);
      paths->emplace_back(gMissing + at, len);
      at += len + 1;
    }
  }
  gMissingLen = 0;
  gMissingOverflow = false;
  return paths;
}

void recordText(char kind, std::string_view text) {
  if (!recording() || tHoldsBuf)
    return;
  flushRecords();
  BufLock lock;
  std::string rec(1, kind);
  rec.append(text);
  rec.push_back('\0');
  writeRecords(rec.data(), rec.size());
}

} // namespace linkd

// The interposed libc entry points. `extern "C"` definitions in the
// executable take precedence over libc's for every shared library.
extern "C" {

int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return doOpen(path, flags, mode);
}

int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return doOpen(path, flags, mode);
}

int __open_2(const char *path, int flags) { return doOpen(path, flags, 0); }
int __open64_2(const char *path, int flags) { return doOpen(path, flags, 0); }

int stat(const char *path, struct stat *st) {
  long rc = doStat(path, st, 0);
  if (recording())
    recordExistence(path, rc);
  return static_cast<int>(rc);
}

int stat64(const char *path, struct stat64 *st) {
  return stat(path, reinterpret_cast<struct stat *>(st));
}

int lstat(const char *path, struct stat *st) {
  long rc = doStat(path, st, AT_SYMLINK_NOFOLLOW);
  if (recording())
    recordExistence(path, rc);
  return static_cast<int>(rc);
}

int lstat64(const char *path, struct stat64 *st) {
  return lstat(path, reinterpret_cast<struct stat *>(st));
}

int access(const char *path, int mode) {
  if (!(path = viewed(path, false)))
    return -1;
  long rc = sandboxActive() ? sbAccess(path, mode)
                            : syscall(SYS_faccessat, AT_FDCWD, path, mode);
  if (recording()) {
    if (rc == 0 || errno == ENOENT || errno == ENOTDIR)
      recordExistence(path, rc);
    else
      record('S', path); // exists, but not with that access: an input fact
  }
  return static_cast<int>(rc);
}

char *realpath(const char *path, char *resolved) {
  if (char *placed; linkd::local_view::viewedRealpath(path, resolved, placed))
    return placed;
  char *r = sandboxActive() ? sbRealpath(path, resolved)
                            : next(realRealpath, "realpath")(path, resolved);
  if (recording())
    recordExistence(path, r ? 0 : -1);
  return r;
}

ssize_t readlink(const char *path, char *buf, size_t size) {
  if (!(path = viewed(path, false)))
    return -1;
  long rc = sandboxActive()
                ? sbReadlink(path, buf, size)
                : syscall(SYS_readlinkat, AT_FDCWD, path, buf, size);
  if (recording())
    recordExistence(path, rc >= 0 || errno == EINVAL ? 0 : -1);
  return rc;
}

DIR *opendir(const char *path) {
  if (!(path = viewed(path, false)))
    return nullptr;
  DIR *d = nullptr;
  if (sandboxActive())
    sbRefuse(EACCES); // no listing of the client's directories
  else
    d = next(realOpendir, "opendir")(path);
  if (recording())
    record('L', path);
  return d;
}

int rename(const char *from, const char *to) {
  if (!viewed(from, true) || !viewed(to, true))
    return -1;
  long rc = sandboxActive()
                ? sbRename(from, to)
                : syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0);
  if (rc == 0)
    linkd::child_report::noteOutput(to);
  if (recording() && rc == 0)
    record('N', from, to);
  return static_cast<int>(rc);
}

int unlink(const char *path) {
  if (!viewed(path, true))
    return -1;
  long rc = sandboxActive() ? sbUnlink(path)
                            : syscall(SYS_unlinkat, AT_FDCWD, path, 0);
  if (recording() && rc == 0)
    record('U', path);
  return static_cast<int>(rc);
}

int remove(const char *path) {
  if (!viewed(path, true))
    return -1;
  long rc = sandboxActive() ? sbUnlink(path)
                            : syscall(SYS_unlinkat, AT_FDCWD, path, 0);
  if (rc != 0 && !sandboxActive() && (errno == EISDIR || errno == EPERM))
    rc = syscall(SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR);
  if (recording() && rc == 0)
    record('U', path);
  return static_cast<int>(rc);
}

int mkdir(const char *path, mode_t mode) {
  if (!viewed(path, true))
    return -1;
  long rc = sandboxActive() ? sbRefuse(EROFS)
                            : syscall(SYS_mkdirat, AT_FDCWD, path, mode);
  if (recording() && (rc == 0 || sandboxActive()))
    record('D', path);
  return static_cast<int>(rc);
}

int link(const char *from, const char *to) {
  if (!viewed(from, true) || !viewed(to, true))
    return -1;
  long rc = sandboxActive()
                ? sbRefuse(EROFS)
                : syscall(SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0);
  if (recording() && (rc == 0 || sandboxActive()))
    record('X', to); // a hard link is an output we cannot replay
  return static_cast<int>(rc);
}

int symlink(const char *target, const char *path) {
  if (!viewed(path, true))
    return -1;
  long rc = sandboxActive() ? sbRefuse(EROFS)
                            : syscall(SYS_symlinkat, target, AT_FDCWD, path);
  if (recording() && (rc == 0 || sandboxActive()))
    record('X', path);
  return static_cast<int>(rc);
}

int chdir(const char *path) {
  if (!(path = viewed(path, false)))
    return -1;
  if (recording())
    record('C', path);
  if (sandboxActive())
    return sbRefuse(EACCES);
  return next(realChdir, "chdir")(path);
}

int execve(const char *path, char *const argv[], char *const envp[]) {
  if (recording())
    record('X', path);
  flushRecords();
  if (sandboxActive())
    return sbRefuse(EPERM);
  return next(realExecve, "execve")(path, argv, envp);
}

int execv(const char *path, char *const argv[]) {
  if (recording())
    record('X', path);
  flushRecords();
  if (sandboxActive())
    return sbRefuse(EPERM);
  return next(realExecv, "execv")(path, argv);
}

pid_t fork() {
  if (recording())
    record('X', "fork");
  flushRecords(); // or the child would write the parent's records again
  if (sandboxActive())
    return sbRefuse(EPERM);
  return next(realFork, "fork")();
}

int posix_spawn(pid_t *pid, const char *path,
                const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[],
                char *const envp[]) {
  if (recording())
    record('X', path);
  flushRecords();
  if (sandboxActive())
    return EPERM;
  return next(realSpawn, "posix_spawn")(pid, path, actions, attr, argv, envp);
}

// Only the sandbox changes these three; elsewhere they are libc's.
char *getcwd(char *buf, size_t size) {
  if (sandboxActive())
    return sbGetcwd(buf, size);
  return next(realGetcwd, "getcwd")(buf, size);
}

int chmod(const char *path, mode_t mode) {
  if (!viewed(path, true))
    return -1;
  if (sandboxActive())
    return sbChmod(path, mode);
  return static_cast<int>(syscall(SYS_fchmodat, AT_FDCWD, path, mode));
}

int statfs(const char *path, struct statfs *buf) {
  if (!(path = viewed(path, false)))
    return -1;
  if (sandboxActive())
    return sbStatfs(path, buf);
  return static_cast<int>(syscall(SYS_statfs, path, buf));
}

// Every way out writes the collected records first. LLD leaves through
// _Exit (sys::Process::Exit with NoCleanup), linkd's own code through _exit,
// report_fatal_error and the archivers' errors through exit.
void exit(int status) {
  runExitHook(status);
  flushRecords(/*direct=*/true); // atexit handlers may still record
  next(realExit, "exit")(status);
  __builtin_unreachable();
}

void _exit(int status) {
  runExitHook(status);
  flushRecords();
  // After the records: the daemon may answer as soon as this arrives.
  if (linkd::child_report::sendOnExit(status))
    linkd::child_report::yieldTheExit();
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

void _Exit(int status) { _exit(status); }

} // extern "C"
