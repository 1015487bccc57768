// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "incremental/ready_spare.h"

#include "util/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace linkd::incremental {
namespace {

constexpr std::string_view kPrefix = "spare.ready";

int64_t nanos(const struct timespec &t) {
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

bool sameFile(const struct stat &a, const struct stat &b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev &&
         a.st_size == b.st_size && nanos(a.st_mtim) == nanos(b.st_mtim) &&
         nanos(a.st_ctim) == nanos(b.st_ctim);
}

} // namespace

std::string readySpareName(uint64_t ino, uint64_t size, int64_t mtimeNs,
                           int64_t ctimeNs) {
  return std::string(kPrefix) + "-" + std::to_string(ino) + "-" +
         std::to_string(size) + "-" + std::to_string(mtimeNs) + "-" +
         std::to_string(ctimeNs);
}

std::string readySpareName(const struct stat &st) {
  return readySpareName(st.st_ino, static_cast<uint64_t>(st.st_size),
                        nanos(st.st_mtim), nanos(st.st_ctim));
}

std::string makeReadySpare(const std::string &stateDir, bool &outdated) {
  outdated = false;
  std::string output = stateDir + "/output";
  int in = open(output.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat before{};
  if (in < 0 || fstat(in, &before) != 0 || !S_ISREG(before.st_mode)) {
    std::string e =
        output + ": " + (in < 0 ? std::strerror(errno) : "not a regular file");
    if (in >= 0)
      close(in);
    return e;
  }
  std::string tmp = stateDir + "/" + std::string(kPrefix) + ".tmp-XXXXXX";
  int out = mkostemp(tmp.data(), O_CLOEXEC);
  if (out < 0) {
    std::string e = tmp + ": " + std::strerror(errno);
    close(in);
    return e;
  }
  // The mode LLD gave the output: the spare becomes the output.
  int err = copyFileBytes(in, out, static_cast<uint64_t>(before.st_size));
  if (err == 0 && fchmod(out, before.st_mode & 07777) != 0)
    err = errno;
  // Durable before it has its name: a spare is taken on its name alone.
  if (err == 0 && fdatasync(out) != 0)
    err = errno;
  // The output too, now: it becomes the spare after the first patch, and
  // a rename over a file with dirty pages (the output, when the second
  // patch renames it) makes ext4 start their writeback at once
  // (auto_da_alloc), 10 ms for 22 MB LLD wrote a second before.
  if (err == 0)
    (void)fdatasync(in);
  struct stat after{};
  if (err == 0 && fstat(in, &after) == 0 && !sameFile(before, after))
    err = EAGAIN; // written while it was copied
  if (close(out) != 0 && err == 0)
    err = errno;
  close(in);
  std::string name = stateDir + "/" + readySpareName(before);
  if (err == 0 && rename(tmp.c_str(), name.c_str()) != 0)
    err = errno;
  if (err != 0) {
    unlink(tmp.c_str());
    outdated = err == EAGAIN;
    return output + ": " +
           (err == EAGAIN ? "written while it was copied" : std::strerror(err));
  }
  // A full link or a patch that came meanwhile replaced the output: this
  // copy is of no use to it.
  struct stat now{};
  if (stat(output.c_str(), &now) != 0 || !sameFile(before, now)) {
    unlink(name.c_str());
    outdated = true;
    return output + ": replaced while it was copied";
  }
  return "";
}

void removeReadySpares(const std::string &stateDir) {
  DIR *d = opendir(stateDir.c_str());
  if (!d)
    return;
  std::vector<std::string> names;
  while (const dirent *e = readdir(d))
    if (std::string_view(e->d_name).starts_with(kPrefix))
      names.emplace_back(e->d_name);
  closedir(d);
  for (const std::string &n : names)
    unlink((stateDir + "/" + n).c_str());
}

} // namespace linkd::incremental
