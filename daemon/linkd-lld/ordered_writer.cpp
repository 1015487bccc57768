// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/ordered_writer.h"

#include "child/ordered_output.h"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace {

// Process-global by necessity (see the header).
int gChannelFd = -1;
FILE *gOut = nullptr; // stdio's stdout and stderr once they are ours
FILE *gErr = nullptr;

ssize_t rawWrite(int fd, const void *buf, size_t n) {
  return syscall(SYS_write, fd, buf, n);
}

// One record per PIPE_BUF: each a single writev, so atomic on the pipe; safe
// in a signal handler (no lock, no allocation).
ssize_t writeRecords(int stream, const char *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t len = std::min(n - done, linkd::ordered::kPayloadMax);
    unsigned char header[linkd::ordered::kHeader] = {
        static_cast<unsigned char>(stream), 0,
        static_cast<unsigned char>(len & 0xff),
        static_cast<unsigned char>(len >> 8)};
    iovec iov[2] = {{header, sizeof(header)},
                    {const_cast<char *>(p + done), len}};
    ssize_t w = syscall(SYS_writev, gChannelFd, iov, 2);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return done > 0 ? static_cast<ssize_t>(done) : -1;
    done += len;
  }
  return static_cast<ssize_t>(n);
}

bool ordered(int fd) {
  return gChannelFd >= 0 && (fd == STDOUT_FILENO || fd == STDERR_FILENO);
}

ssize_t cookieWrite(void *cookie, const char *buf, size_t n) {
  return writeRecords(static_cast<int>(reinterpret_cast<intptr_t>(cookie)), buf,
                      n);
}

// stdio's stdout and stderr, writing through the channel. Buffering as
// glibc's on a pipe: stderr unbuffered, stdout fully.
FILE *orderedFile(int stream, int mode) {
  cookie_io_functions_t io{};
  io.write = cookieWrite;
  FILE *f = fopencookie(reinterpret_cast<void *>(static_cast<intptr_t>(stream)),
                        "w", io);
  if (f)
    setvbuf(f, nullptr, mode, mode == _IONBF ? 0 : BUFSIZ);
  return f;
}

} // namespace

namespace linkd {

void startOrderedOutput(int channelFd) {
  std::fflush(nullptr);
  gChannelFd = channelFd;
  // A reused worker's streams are these already.
  if (!gOut || stdout != gOut)
    if (FILE *out = orderedFile(STDOUT_FILENO, _IOFBF))
      stdout = gOut = out;
  if (!gErr || stderr != gErr)
    if (FILE *err = orderedFile(STDERR_FILENO, _IONBF))
      stderr = gErr = err;
}

void stopOrderedOutput() {
  std::fflush(nullptr);
  gChannelFd = -1;
}

bool writeOrderedReport(const std::string &payload) {
  if (gChannelFd < 0)
    return false;
  return writeRecords(ordered::kReportStream, payload.data(), payload.size()) ==
         static_cast<ssize_t>(payload.size());
}

} // namespace linkd

extern "C" {

ssize_t write(int fd, const void *buf, size_t n) {
  if (!ordered(fd) || n == 0)
    return rawWrite(fd, buf, n);
  return writeRecords(fd, static_cast<const char *>(buf), n);
}

ssize_t writev(int fd, const iovec *iov, int count) {
  if (!ordered(fd))
    return syscall(SYS_writev, fd, iov, count);
  ssize_t total = 0;
  for (int i = 0; i < count; ++i) {
    if (iov[i].iov_len == 0)
      continue;
    ssize_t w = writeRecords(fd, static_cast<const char *>(iov[i].iov_base),
                             iov[i].iov_len);
    if (w < 0)
      return total > 0 ? total : -1;
    total += w;
  }
  return total;
}

} // extern "C"
