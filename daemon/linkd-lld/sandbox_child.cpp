// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/sandbox_child.h"

#include "child/sandbox_protocol.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

// Debian 12's kernel headers stop at Landlock ABI 2; the running kernel may
// know more, and rights it knows must be handled to be denied.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

namespace linkd::sandbox {
namespace {

// Process-global by necessity (see the header).
int gFd = -1;
char gCwd[PATH_MAX];
char gLastWritten[PATH_MAX]; // the real file of the last write (sbOpen)
// The directories this process was confined to ("" if never), and how that
// went: Landlock cannot be undone, so a worker confines once.
std::string gConfinedTo, gConfineError;
size_t gCwdLen = 0;
pthread_mutex_t gMu = PTHREAD_MUTEX_INITIALIZER;

// The node's own pseudo-files LLVM may read; everything else is the
// client's.
bool passThrough(std::string_view p) {
  return p == "/dev/null" || p == "/dev/urandom" || p == "/dev/random" ||
         p == "/proc/cpuinfo" ||
         (p.starts_with("/sys/devices/system/cpu/") &&
          p.find("/..") == std::string_view::npos);
}

// `path` made absolute with the client's cwd. False if too long.
bool absolute(const char *path, char *out, size_t outSize) {
  size_t len = std::strlen(path);
  if (path[0] == '/') {
    if (len + 1 > outSize)
      return false;
    std::memcpy(out, path, len + 1);
    return true;
  }
  if (gCwdLen + 1 + len + 1 > outSize)
    return false;
  std::memcpy(out, gCwd, gCwdLen);
  out[gCwdLen] = '/';
  std::memcpy(out + gCwdLen + 1, path, len + 1);
  return true;
}

// One question, one answer. `real` gets the node path (NUL-terminated).
bool ask(char op, const char *path, const char *path2, SandboxReply &reply,
         char *real, size_t realSize) {
  char msg[2 * PATH_MAX + 8];
  char abs1[PATH_MAX], abs2[PATH_MAX];
  if (!absolute(path, abs1, sizeof(abs1)) ||
      (path2 && op != OpChmod && !absolute(path2, abs2, sizeof(abs2)))) {
    reply.kind = KindError;
    reply.err = ENAMETOOLONG;
    return false;
  }
  size_t n = 0;
  msg[n++] = op;
  size_t l1 = std::strlen(abs1) + 1;
  std::memcpy(msg + n, abs1, l1);
  n += l1;
  if (path2) {
    const char *p2 = op == OpChmod ? path2 : abs2;
    size_t l2 = std::strlen(p2) + 1;
    std::memcpy(msg + n, p2, l2);
    n += l2;
  }
  char in[sizeof(SandboxReply) + PATH_MAX];
  int saved = errno;
  pthread_mutex_lock(&gMu);
  ssize_t sent = ::send(gFd, msg, n, MSG_NOSIGNAL);
  ssize_t got = -1;
  if (sent == static_cast<ssize_t>(n)) {
    do
      got = ::recv(gFd, in, sizeof(in), 0);
    while (got < 0 && errno == EINTR);
  }
  pthread_mutex_unlock(&gMu);
  errno = saved;
  if (got < static_cast<ssize_t>(sizeof(SandboxReply))) {
    // The daemon is gone: nothing sensible can follow.
    reply.kind = KindError;
    reply.err = EIO;
    return false;
  }
  std::memcpy(&reply, in, sizeof(SandboxReply));
  size_t realLen = static_cast<size_t>(got) - sizeof(SandboxReply);
  if (real) {
    if (realLen + 1 > realSize)
      realLen = 0;
    std::memcpy(real, in + sizeof(SandboxReply), realLen);
    real[realLen] = '\0';
  }
  return true;
}

int fail(const SandboxReply &r) {
  errno = r.err ? r.err : EIO;
  return -1;
}

bool exists(const SandboxReply &r) {
  return r.kind == KindFile || r.kind == KindDir;
}

// "/a/./b/../c" -> "/a/c"; only for realpath's answer (the client has
// already said the path exists; its kernel resolved it).
void normalise(const char *abs, char *out) {
  size_t n = 0;
  const char *p = abs;
  while (*p) {
    while (*p == '/')
      ++p;
    const char *e = p;
    while (*e && *e != '/')
      ++e;
    size_t len = static_cast<size_t>(e - p);
    if (len == 0 || (len == 1 && p[0] == '.')) {
    } else if (len == 2 && p[0] == '.' && p[1] == '.') {
      while (n > 0 && out[n - 1] != '/')
        --n;
      if (n > 0)
        --n;
    } else {
      out[n++] = '/';
      std::memcpy(out + n, p, len);
      n += len;
    }
    p = e;
  }
  if (n == 0)
    out[n++] = '/';
  out[n] = '\0';
}

} // namespace

void startSandbox(int fd, const std::string &cwd) {
  gCwdLen = std::min(cwd.size(), sizeof(gCwd) - 1);
  std::memcpy(gCwd, cwd.data(), gCwdLen);
  gCwd[gCwdLen] = '\0';
  gLastWritten[0] = '\0';
  gFd = fd;
}

void stopSandbox() { gFd = -1; }

bool sandboxActive() { return gFd >= 0; }

const char *lastWrittenFile() { return gLastWritten; }

namespace {

// Adds "beneath `path`, allow `access`"; false if the path cannot be opened.
bool allow(int ruleset, const char *path, uint64_t access) {
  int fd = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC, 0));
  if (fd < 0)
    return false;
  landlock_path_beneath_attr rule{};
  rule.allowed_access = access;
  rule.parent_fd = fd;
  long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
                    &rule, 0);
  close(fd);
  return rc == 0;
}

std::string confine(const std::string &readDir, const std::string &writeDir) {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0,
                     LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1)
    return std::string("Landlock unavailable: ") + std::strerror(errno);
  // Every right this kernel knows is handled (denied unless allowed below).
  uint64_t handled = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
  uint64_t truncate = 0, refer = 0;
  if (abi >= 2)
    handled |= refer = LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    handled |= truncate = LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5)
    handled |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled;
  int ruleset = static_cast<int>(
      syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));
  if (ruleset < 0)
    return std::string("Landlock ruleset: ") + std::strerror(errno);
  const uint64_t readFile = LANDLOCK_ACCESS_FS_READ_FILE;
  const uint64_t readTree = readFile | LANDLOCK_ACCESS_FS_READ_DIR;
  const uint64_t writeTree = readTree | LANDLOCK_ACCESS_FS_WRITE_FILE |
                             LANDLOCK_ACCESS_FS_MAKE_REG |
                             LANDLOCK_ACCESS_FS_REMOVE_FILE | truncate | refer;
  bool ok = allow(ruleset, readDir.c_str(), readTree) &&
            allow(ruleset, writeDir.c_str(), writeTree) &&
            allow(ruleset, "/dev/null",
                  readFile | LANDLOCK_ACCESS_FS_WRITE_FILE | truncate);
  for (const char *p : {"/dev/urandom", "/dev/random", "/proc/cpuinfo"})
    allow(ruleset, p, readFile); // optional: absent in some containers
  allow(ruleset, "/sys/devices/system/cpu", readTree);
  // Its own threads, descriptors, memory and code mappings, which a
  // reusable worker checks between links (link_worker.h); nothing else of
  // /proc (its net/, mountinfo, environ).
  allow(ruleset, "/proc/self/task", readTree);
  allow(ruleset, "/proc/self/fd", readTree);
  allow(ruleset, "/proc/self/statm", readFile);
  allow(ruleset, "/proc/self/maps", readFile);
  std::string err;
  if (!ok)
    err = "Landlock rules: cannot open the store or scratch directory";
  else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
           syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
    err = std::string("Landlock restrict: ") + std::strerror(errno);
  close(ruleset);
  return err;
}

} // namespace

std::string confineSandbox(const std::string &readDir,
                           const std::string &writeDir) {
  std::string to = readDir + '\0' + writeDir;
  if (!gConfinedTo.empty())
    return gConfinedTo == to ? gConfineError
                             : "already confined to other directories";
  gConfinedTo = to;
  gConfineError = confine(readDir, writeDir);
  return gConfineError;
}

int sbOpen(const char *path, int flags, mode_t mode) {
  bool writes =
      (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
  if (passThrough(path)) {
    if (writes && std::strcmp(path, "/dev/null") != 0)
      return sbRefuse(EACCES);
    return static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
  }
  if (flags & O_TMPFILE)
    return sbRefuse(EOPNOTSUPP);
  SandboxReply r;
  char real[PATH_MAX];
  if (!ask(writes ? OpWrite : OpRead, path, nullptr, r, real, sizeof(real)))
    return fail(r);
  if (!exists(r) || real[0] == '\0')
    return fail(r);
  if (!writes)
    flags &= ~(O_CREAT | O_EXCL | O_TRUNC);
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, real, flags, mode));
  if (fd >= 0 && writes) {
    pthread_mutex_lock(&gMu);
    std::memcpy(gLastWritten, real, std::strlen(real) + 1);
    pthread_mutex_unlock(&gMu);
  }
  return fd;
}

int sbStat(const char *path, struct stat *st) {
  if (passThrough(path))
    return static_cast<int>(syscall(SYS_newfstatat, AT_FDCWD, path, st, 0));
  SandboxReply r;
  if (!ask(OpStat, path, nullptr, r, nullptr, 0) || !exists(r))
    return fail(r);
  std::memset(st, 0, sizeof(*st));
  st->st_mode = r.mode;
  st->st_size = static_cast<off_t>(r.size);
  st->st_dev = r.dev;
  st->st_ino = r.ino;
  st->st_nlink = 1;
  st->st_uid = getuid();
  st->st_gid = getgid();
  st->st_blksize = 4096;
  st->st_blocks = static_cast<blkcnt_t>((r.size + 511) / 512);
  st->st_mtim.tv_sec = r.mtimeNs / 1000000000;
  st->st_mtim.tv_nsec = r.mtimeNs % 1000000000;
  st->st_ctim = st->st_mtim;
  st->st_atim = st->st_mtim;
  return 0;
}

int sbAccess(const char *path, int mode) {
  if (passThrough(path))
    return static_cast<int>(syscall(SYS_faccessat, AT_FDCWD, path, mode));
  SandboxReply r;
  if (!ask(OpStat, path, nullptr, r, nullptr, 0) || !exists(r))
    return fail(r);
  return 0;
}

char *sbRealpath(const char *path, char *resolved) {
  SandboxReply r;
  char abs[PATH_MAX];
  if (!absolute(path, abs, sizeof(abs))) {
    errno = ENAMETOOLONG;
    return nullptr;
  }
  if (!ask(OpStat, path, nullptr, r, nullptr, 0) || !exists(r)) {
    fail(r);
    return nullptr;
  }
  char norm[PATH_MAX];
  normalise(abs, norm);
  if (!resolved)
    return strdup(norm);
  std::strcpy(resolved, norm);
  return resolved;
}

ssize_t sbReadlink(const char *path, char *, size_t) {
  SandboxReply r;
  if (!ask(OpStat, path, nullptr, r, nullptr, 0) || !exists(r))
    return fail(r);
  // The client's kernel follows links for us; nothing here is a link.
  errno = EINVAL;
  return -1;
}

int sbRename(const char *from, const char *to) {
  SandboxReply r;
  if (!ask(OpRename, from, to, r, nullptr, 0) || r.kind != KindOk)
    return fail(r);
  return 0;
}

int sbUnlink(const char *path) {
  SandboxReply r;
  if (!ask(OpUnlink, path, nullptr, r, nullptr, 0) || r.kind != KindOk)
    return fail(r);
  return 0;
}

int sbChmod(const char *path, mode_t mode) {
  SandboxReply r;
  std::string m = std::to_string(mode);
  if (!ask(OpChmod, path, m.c_str(), r, nullptr, 0) || r.kind != KindOk)
    return fail(r);
  return 0;
}

int sbStatfs(const char *, struct statfs *buf) {
  // Only the file system type matters to LLVM (is it local?): answer for
  // the node's root, which reveals nothing of the client's tree.
  return static_cast<int>(syscall(SYS_statfs, "/", buf));
}

char *sbGetcwd(char *buf, size_t size) {
  if (!buf) {
    return strdup(gCwd);
  }
  if (size < gCwdLen + 1) {
    errno = ERANGE;
    return nullptr;
  }
  std::memcpy(buf, gCwd, gCwdLen + 1);
  return buf;
}

int sbRefuse(int err) {
  errno = err;
  return -1;
}

} // namespace linkd::sandbox
