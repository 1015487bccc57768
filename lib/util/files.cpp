// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "util/files.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace linkd {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = fd;
}

Result<OpenFile> openRegularFile(const std::string &path, uint64_t maxBytes) {
  auto fail = [&](const std::string &why) {
    return Failure{path + ": " + why};
  };
  OpenFile f;
  f.fd.reset(
      ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!f.fd.valid())
    return fail(std::strerror(errno));
  struct stat st{};
  if (::fstat(f.fd.get(), &st) != 0)
    return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return fail("larger than " + std::to_string(maxBytes) + " bytes");
  f.size = static_cast<uint64_t>(st.st_size);
  return f;
}

Result<std::string> readFile(const std::string &path, uint64_t maxBytes) {
  Result<OpenFile> file = openRegularFile(path, maxBytes);
  if (!file)
    return Failure{file.error()};
  const UniqueFd &fd = file->fd;
  std::string out(file->size, '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(fd.get(), out.data() + got, out.size() - got,
                        static_cast<off_t>(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Failure{path + ": " + std::strerror(errno)};
    if (n == 0)
      break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

int copyFileBytes(int in, int out, uint64_t size) {
  bool byKernel = true;
  std::vector<char> buffer;
  for (uint64_t done = 0; done < size;) {
    auto left = static_cast<size_t>(size - done);
    auto at = static_cast<off_t>(done);
    ssize_t n = -1;
    if (byKernel) {
      off_t from = at, to = at;
      n = copy_file_range(in, &from, out, &to, left, 0);
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP ||
                    errno == ENOSYS)) {
        byKernel = false;
        continue;
      }
    } else {
      buffer.resize(size_t{1} << 20);
      n = pread(in, buffer.data(), std::min(buffer.size(), left), at);
      for (ssize_t w = 0; n > 0 && w < n;) {
        ssize_t m =
            pwrite(out, buffer.data() + w, static_cast<size_t>(n - w), at + w);
        if (m < 0 && errno == EINTR)
          continue;
        if (m <= 0)
          return m < 0 ? errno : EIO;
        w += m;
      }
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? errno : EIO;
    done += static_cast<uint64_t>(n);
  }
  return 0;
}

bool removeTree(const std::string &path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0)
    return errno == ENOENT;
  if (!S_ISDIR(st.st_mode))
    return ::unlink(path.c_str()) == 0;
  // Depth first, symbolic links as themselves (FTW_PHYS), one file system.
  return nftw(
             path.c_str(),
             [](const char *p, const struct stat *, int type, FTW *) {
               int rc = type == FTW_DP ? ::rmdir(p) : ::unlink(p);
               (void)rc; // go on: remove what can be removed
               return 0;
             },
             16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0 &&
         ::lstat(path.c_str(), &st) != 0;
}

} // namespace linkd
