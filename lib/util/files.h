// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Files, descriptors and trees, the way every process of linkd handles them:
// a regular file is read whole without blocking on a FIFO or touching a
// device, a write finishes or fails, a descriptor closes with its owner, a
// tree goes without following a symbolic link out of it.
#pragma once

#include "util/result.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

// A descriptor closed by its owner's end.
class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd &&o) noexcept : fd_(o.release()) {}
  UniqueFd &operator=(UniqueFd &&o) noexcept {
    reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);

private:
  int fd_ = -1;
};

constexpr uint64_t kAnySize = std::numeric_limits<uint64_t>::max();

// A regular file open for reading, and its size.
struct OpenFile {
  UniqueFd fd;
  uint64_t size = 0;
};

// `path` opened for reading if it is a regular file of at most `maxBytes`
// (O_NONBLOCK: a FIFO nobody writes is refused at once, a device is never
// read); "PATH: why" otherwise.
Result<OpenFile> openRegularFile(const std::string &path, uint64_t maxBytes);

// The content of the regular file `path` (openRegularFile's rules), or
// "PATH: why" not. A file that shrinks while it is read gives what it held.
Result<std::string> readFile(const std::string &path,
                             uint64_t maxBytes = kAnySize);

// Writes all of `data` (partial writes and EINTR continued); false on an
// error, with errno set.
bool writeAll(int fd, std::string_view data);

// Copies the first `size` bytes of `in` to the same offsets of `out`
// (the kernel copies, sharing blocks where the file system can; read and
// write across file systems). 0, or an errno (EIO: `in` was shorter).
int copyFileBytes(int in, int out, uint64_t size);

// Removes `path` and, if it is a directory, everything under it, never
// following a symbolic link; false if something could not be removed.
bool removeTree(const std::string &path);

} // namespace linkd
