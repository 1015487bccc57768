// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "config/runtime_paths.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace linkd {
namespace {

std::string envOr(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Why `dir` (which exists) is not this user's private directory, or "".
std::string notPrivate(const std::string &dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0)
    return {};
  if (!S_ISDIR(st.st_mode))
    return dir + " is not a directory";
  if (st.st_uid != getuid())
    return dir + " is owned by uid " + std::to_string(st.st_uid);
  if (st.st_mode & 077)
    return dir + " is open to other users";
  return {};
}

// The home field of `uid`'s line in /etc/passwd, or "". Read directly
// first: the thin client is linked statically, and glibc's NSS would load
// the host's shared modules into it; a user only a directory service knows
// is asked through NSS after this.
std::string passwdFileHome(uid_t uid) {
  std::ifstream in("/etc/passwd");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t c; (c = line.find(':', start)) != std::string::npos;
         start = c + 1)
      f.push_back(line.substr(start, c - start));
    f.push_back(line.substr(start));
    if (f.size() >= 6 && f[2] == std::to_string(uid))
      return f[5];
  }
  return {};
}

std::string passwdHome(uid_t uid) {
  if (std::string home = passwdFileHome(uid); !home.empty())
    return home;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd *found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found ||
      !found->pw_dir)
    return {};
  return found->pw_dir;
}

} // namespace

std::string homeDirectory() {
  if (const char *h = std::getenv("HOME"); h && *h)
    return h;
  return passwdHome(getuid());
}

std::string userRuntimeDirectory() {
  if (const char *xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg)
    return xdg;
  // Only a directory that exists: creating /run/user/$UID is logind's job,
  // and one that is not ours and private is not the user's session's.
  std::string run = "/run/user/" + std::to_string(getuid());
  struct stat st {};
  if (lstat(run.c_str(), &st) == 0 && notPrivate(run).empty())
    return run;
  return {};
}

RuntimePaths resolveRuntimePaths() {
  RuntimePaths p;
  std::string uid = std::to_string(getuid());
  std::string defaultDir = "/tmp/linkd-" + uid;
  std::string home = homeDirectory();
  if (std::string runtime = userRuntimeDirectory(); !runtime.empty()) {
    defaultDir = runtime + "/linkd";
  } else if (!std::getenv("LINKD_SOCKET") || !*std::getenv("LINKD_SOCKET")) {
    // Anyone can make /tmp/linkd-$UID first; then it is not ours to use.
    if (std::string why = notPrivate(defaultDir);
        !why.empty() && !home.empty()) {
      p.squatted = why;
      defaultDir = home + "/.cache/linkd/run";
    }
  }
  p.socketPath = envOr("LINKD_SOCKET", defaultDir + "/linkd.sock");
  p.runtimeDir = dirName(p.socketPath);
  std::string base = p.socketPath;
  p.autostartLock = base + ".autostart.lock";
  p.daemonLock = base + ".daemon.lock";
  p.fallbackMark = base + ".fallback-warned";

  std::string state;
  if (const char *s = std::getenv("LINKD_STATE_DIR"); s && *s)
    state = s;
  else if (const char *x = std::getenv("XDG_STATE_HOME"); x && *x)
    state = std::string(x) + "/linkd";
  else if (!home.empty())
    state = home + "/.local/state/linkd";
  else
    state = p.runtimeDir;
  p.stateDir = state;
  p.logPath = state + "/linkd.log";
  return p;
}

std::string ensurePrivateDirectory(const std::string &dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (errno == ENOENT) {
      if (std::string err = ensureDirectoryTree(dirName(dir)); !err.empty())
        return err;
      if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return "cannot create " + dir + ": " + std::strerror(errno);
    } else {
      return "cannot create " + dir + ": " + std::strerror(errno);
    }
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0)
    return "cannot stat " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode))
    return dir + " is not a directory";
  if (st.st_uid != getuid())
    return dir + " is owned by uid " + std::to_string(st.st_uid) +
           ", not by this user";
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return dir + " is accessible by other users (mode " + mode +
           "); expected 0700";
  }
  return {};
}

std::string untrustedCacheDirectory(const std::string &dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0)
    return "cannot stat " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode))
    return dir + " is not a directory";
  if (st.st_uid != geteuid())
    return dir + " is owned by uid " + std::to_string(st.st_uid) +
           ", not by this user";
  if (st.st_mode & 022) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return dir + " is writable by other users (mode " + mode + ")";
  }
  return {};
}

std::string resolveCacheDirectory(const std::string &dir,
                                  std::string &resolved) {
  // Every symbolic link on the way, from the root down.
  std::string walked;
  size_t pos = 0;
  while (pos < dir.size()) {
    size_t next = dir.find('/', pos + 1);
    walked = dir.substr(0, next == std::string::npos ? dir.size() : next);
    pos = next == std::string::npos ? dir.size() : next;
    struct stat st{};
    if (walked.empty() || lstat(walked.c_str(), &st) != 0 ||
        !S_ISLNK(st.st_mode))
      continue;
    if (st.st_uid != geteuid() && st.st_uid != 0)
      return walked + " is a symbolic link of uid " +
             std::to_string(st.st_uid) +
             ", who could point it elsewhere; not a cache directory";
  }
  char buf[PATH_MAX];
  if (!realpath(dir.c_str(), buf))
    return "cannot resolve " + dir + ": " + std::strerror(errno);
  resolved = buf;
  return untrustedCacheDirectory(resolved);
}

std::string ensureDirectoryTree(const std::string &dir) {
  if (dir.empty() || dir == "/" || dir == ".")
    return {};
  struct stat st;
  if (stat(dir.c_str(), &st) == 0)
    return S_ISDIR(st.st_mode) ? std::string() : dir + " is not a directory";
  if (std::string err = ensureDirectoryTree(dirName(dir)); !err.empty())
    return err;
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return "cannot create " + dir + ": " + std::strerror(errno);
  return {};
}

std::string executableDirectory() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return ".";
  buf[n] = '\0';
  return dirName(buf);
}

} // namespace linkd
