// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/local_view.h"

#include "kernel/view_names.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace linkd::local_view {
namespace {

// Process-global by necessity (see the header); read-only once started.
bool gActive = false;
std::map<std::string, std::string> gPlaced; // name -> its copy
std::set<std::string> gDirs;             // directories above placed names
std::string gEmpty;                      // the stand-in for those
std::string gWork; // the working directory, resolved: where writes may go

// Whether a relative `path`'s ".." parts take it above the working
// directory, at any point (the private directory holds no symbolic links:
// lexical is what its kernel does).
bool climbs(std::string_view path) {
  size_t depth = 0;
  while (!path.empty()) {
    std::string_view part = kernel::nextPathPart(path);
    if (part == "..") {
      if (depth == 0)
        return true;
      --depth;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
  }
  return false;
}

bool isRealDirectory(const std::string &path) {
  struct stat st;
  int saved = errno;
  bool dir = syscall(SYS_newfstatat, AT_FDCWD, path.c_str(), &st, 0) == 0 &&
             S_ISDIR(st.st_mode);
  errno = saved;
  return dir;
}

bool readNames(const std::string &file, std::vector<std::string> &names) {
  int fd = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, file.c_str(), O_RDONLY | O_CLOEXEC, 0));
  if (fd < 0)
    return false;
  std::string data;
  char buf[1 << 14];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ::close(fd);
      return false;
    }
    if (n == 0)
      break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  for (size_t at = 0; at < data.size();) {
    size_t end = data.find('\0', at);
    if (end == std::string::npos)
      return false; // every name ends with NUL
    names.push_back(data.substr(at, end - at));
    at = end + 1;
  }
  return true;
}

} // namespace

std::string startLocalView(const std::string &dir) {
  std::vector<std::string> names;
  if (!readNames(dir + "/names", names))
    return "cannot read " + dir + "/names";
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty() || names[i][0] != '/')
      return "placed name '" + names[i] + "' is not absolute";
    std::string name = kernel::viewLookupName(names[i]);
    gPlaced[name] = dir + "/" + std::to_string(i);
    for (size_t slash = name.rfind('/'); slash != 0 && slash != name.npos;
         slash = name.rfind('/', slash - 1))
      gDirs.insert(name.substr(0, slash));
  }
  gEmpty = dir + "/empty";
  char cwd[PATH_MAX];
  if (!::realpath(".", cwd))
    return "cannot resolve the working directory";
  gWork = kernel::viewLookupName(cwd);
  gActive = true;
  return {};
}

namespace {

// What the view makes of a path.
struct Seen {
  enum Kind { Own, Absent, Placed } kind = Own; // Own: the file system's
  std::string name;          // Placed: the name looked up
  const char *real = nullptr; // Placed: the copy, or the stand-in directory
};

// An absolute name outside the working directory, which the link may read
// but never write: an output named by a response file or a linker script
// (`OUTPUT(/tmp/x)`) that no check of the arguments sees.
// A ".." part counts as outside: only the file system can say where it
// leads (`<work>/../../home/u/.bashrc`).
bool outsideWork(const std::string &name) {
  if (name != gWork && !name.starts_with(gWork + "/"))
    return true;
  for (size_t at = name.find("/.."); at != std::string::npos;
       at = name.find("/..", at + 1))
    if (at + 3 == name.size() || name[at + 3] == '/')
      return true;
  return false;
}

Seen see(const char *path) {
  if (!gActive || !path || !*path)
    return {};
  if (path[0] != '/')
    return climbs(path) ? Seen{Seen::Absent, {}, nullptr} : Seen{};
  std::string name = kernel::viewLookupName(path);
  if (auto it = gPlaced.find(name); it != gPlaced.end())
    return {Seen::Placed, std::move(name), it->second.c_str()};
  if (gDirs.count(name) && !isRealDirectory(name))
    return {Seen::Placed, std::move(name), gEmpty.c_str()};
  return {};
}

} // namespace

const char *viewed(const char *path, bool writes) {
  Seen seen = see(path);
  if (seen.kind == Seen::Own && writes && gActive && path[0] == '/' &&
      outsideWork(kernel::viewLookupName(path))) {
    errno = EACCES;
    return nullptr;
  }
  if (seen.kind == Seen::Own)
    return path;
  if (seen.kind == Seen::Placed && !writes)
    return seen.real;
  // Absent as the daemon's view answers, read or write; nothing is ever
  // written at a placed name.
  errno = seen.kind == Seen::Absent ? ENOENT : EACCES;
  return nullptr;
}

bool viewedRealpath(const char *path, char *resolved, char *&result) {
  Seen seen = see(path);
  if (seen.kind == Seen::Own)
    return false;
  result = nullptr;
  if (seen.kind == Seen::Absent) {
    errno = ENOENT;
    return true;
  }
  if (seen.name.size() + 1 > PATH_MAX) {
    errno = ENAMETOOLONG;
    return true;
  }
  if (!resolved && !(resolved = static_cast<char *>(std::malloc(PATH_MAX)))) {
    errno = ENOMEM;
    return true;
  }
  std::memcpy(resolved, seen.name.c_str(), seen.name.size() + 1);
  result = resolved;
  return true;
}

} // namespace linkd::local_view
