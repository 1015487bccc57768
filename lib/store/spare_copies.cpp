// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "store/spare_copies.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace linkd {
namespace {

bool sameTime(const timespec &a, const timespec &b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Removes the files in `dir` (spares and temp files; no subdirectories)
// and `dir` itself.
void removeDirectory(const std::string &dir) {
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string_view name = e->d_name;
      if (name != "." && name != "..")
        unlink((dir + "/" + e->d_name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

// Spare directories are named after their daemon's pid; those of daemons
// that are no longer running are left-overs (a crash, SIGKILL).
void removeStaleDirectories(const std::string &parent) {
  DIR *d = opendir(parent.c_str());
  if (!d)
    return;
  std::vector<std::string> stale;
  while (dirent *e = readdir(d)) {
    char *end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || !end || *end != '\0')
      continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      stale.push_back(parent + "/" + e->d_name);
  }
  closedir(d);
  for (const std::string &dir : stale)
    removeDirectory(dir);
}

} // namespace

SpareCopies::SpareCopies(LocalStore &store, const std::string &cacheRoot,
                         uint64_t minBytes, uint64_t maxBytes)
    : store(store), dir(cacheRoot + "/spares/" + std::to_string(getpid())),
      minBytes(minBytes), maxBytes(maxBytes) {
  std::string parent = cacheRoot + "/spares";
  mkdir(parent.c_str(), 0700);
  removeStaleDirectories(parent);
  removeDirectory(dir); // an earlier daemon with our pid
  mkdir(dir.c_str(), 0700);
}

SpareCopies::~SpareCopies() {
  clear();
  rmdir(dir.c_str());
}

bool SpareCopies::take(const Digest &d, const std::string &path, mode_t mode) {
  Spare spare;
  {
    std::lock_guard lock(mu);
    auto it = spares.find(d);
    if (it == spares.end())
      return false;
    struct stat target;
    if (stat(directoryOf(path).c_str(), &target) != 0 ||
        target.st_dev != it->second.dev)
      return false; // rename cannot cross file systems; keep the spare
    spare = it->second;
    bytes -= static_cast<uint64_t>(spare.size);
    spares.erase(it);
  }
  struct stat st;
  bool unchanged = lstat(spare.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                   st.st_dev == spare.dev && st.st_ino == spare.ino &&
                   st.st_size == spare.size && st.st_nlink == 1 &&
                   sameTime(st.st_mtim, spare.mtime) &&
                   sameTime(st.st_ctim, spare.ctime);
  if (unchanged && chmod(spare.path.c_str(), mode) == 0 &&
      utimensat(AT_FDCWD, spare.path.c_str(), nullptr, 0) == 0 &&
      replaceFile(spare.path, path)) {
    store.markUsed(d);
    return true;
  }
  unlink(spare.path.c_str());
  return false;
}

void SpareCopies::prepare(const Digest &d, uint64_t size) {
  if (!wants(size) || size > maxBytes)
    return;
  std::string path;
  {
    std::lock_guard lock(mu);
    if (auto it = spares.find(d); it != spares.end()) {
      it->second.lastUse = ++useCounter;
      return;
    }
    // A unique name: two requests may prepare the same blob at once.
    path = dir + "/" + d.hex() + "-" + std::to_string(++useCounter);
  }
  std::string error;
  struct stat st;
  if (store.materializeBlob(d, path, 0600, &error) != Lookup::Hit ||
      lstat(path.c_str(), &st) != 0) {
    unlink(path.c_str());
    return;
  }
  std::lock_guard lock(mu);
  if (spares.count(d)) {
    unlink(path.c_str()); // the other one won
    return;
  }
  evictLocked(static_cast<uint64_t>(st.st_size));
  Spare spare;
  spare.path = path;
  spare.dev = st.st_dev;
  spare.ino = st.st_ino;
  spare.size = st.st_size;
  spare.mtime = st.st_mtim;
  spare.ctime = st.st_ctim;
  spare.lastUse = ++useCounter;
  spares.emplace(d, std::move(spare));
  bytes += static_cast<uint64_t>(st.st_size);
}

void SpareCopies::clear() {
  std::lock_guard lock(mu);
  while (!spares.empty())
    dropLocked(spares.begin());
}

void SpareCopies::dropLocked(std::map<Digest, Spare>::iterator it) {
  unlink(it->second.path.c_str());
  bytes -= static_cast<uint64_t>(it->second.size);
  spares.erase(it);
}

void SpareCopies::evictLocked(uint64_t needed) {
  while (!spares.empty() && bytes + needed > maxBytes) {
    auto oldest = spares.begin();
    for (auto it = spares.begin(); it != spares.end(); ++it)
      if (it->second.lastUse < oldest->second.lastUse)
        oldest = it;
    dropLocked(oldest);
  }
}

} // namespace linkd
