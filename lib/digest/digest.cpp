// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "digest/digest.h"

#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd {

std::string Digest::hex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(64, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    s[2 * i] = kHex[bytes[i] >> 4];
    s[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return s;
}

std::optional<Digest> Digest::fromHex(std::string_view hex) {
  if (hex.size() != 64)
    return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  Digest d;
  for (size_t i = 0; i < 32; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    d.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return d;
}

std::optional<Digest> Digest::fromRaw(std::string_view raw) {
  if (raw.size() != 32)
    return std::nullopt;
  Digest d;
  std::memcpy(d.bytes.data(), raw.data(), 32);
  return d;
}

Sha256::Sha256() : ctx(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX *>(ctx), EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX *>(ctx)); }

Sha256 &Sha256::update(std::string_view data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX *>(ctx), data.data(), data.size());
  return *this;
}

Sha256 &Sha256::field(std::string_view data) {
  uint64_t n = data.size();
  update({reinterpret_cast<const char *>(&n), sizeof(n)});
  return update(data);
}

Digest Sha256::finish() {
  Digest d;
  unsigned len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX *>(ctx), d.bytes.data(), &len);
  return d;
}

Digest sha256(std::string_view data) { return Sha256().update(data).finish(); }

std::optional<FileDigest> sha256File(const std::string &path,
                                     std::string *error) {
  // read(2), not mmap: a file truncated under us by a concurrent build must be
  // an error, not a SIGBUS in the daemon.
  // Non-blocking, and regular files only: a FIFO or a device named as an
  // input must not hold (or fill) the daemon.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (error)
      *error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (error)
      *error = path + " is not a regular file";
    close(fd);
    return std::nullopt;
  }
  FileDigest out;
  Sha256 h;
  std::string buf(1 << 20, '\0');
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      if (error)
        *error = "cannot read " + path + ": " + std::strerror(errno);
      close(fd);
      return std::nullopt;
    }
    if (n == 0)
      break;
    h.update({buf.data(), static_cast<size_t>(n)});
    out.size += static_cast<uint64_t>(n);
  }
  close(fd);
  out.digest = h.finish();
  return out;
}

std::optional<FileDigest> sha256Fd(int fd) {
  FileDigest out;
  Sha256 h;
  std::string buf(1 << 20, '\0');
  for (off_t off = 0;;) {
    ssize_t n = pread(fd, buf.data(), buf.size(), off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return std::nullopt;
    if (n == 0)
      break;
    h.update({buf.data(), static_cast<size_t>(n)});
    off += n;
    out.size += static_cast<uint64_t>(n);
  }
  out.digest = h.finish();
  return out;
}

} // namespace linkd
