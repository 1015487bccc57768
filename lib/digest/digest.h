// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// SHA-256 content digests, the identity of everything linkd stores.
//
// SHA-256 because the remote tiers speak REAPI/bazel-remote, whose CAS is
// keyed by SHA-256, and because collisions must be out of the question for a
// cache whose hits replace a link. OpenSSL's implementation uses the CPU's
// SHA extensions where present (~1.8 GB/s on the CI machine).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

struct Digest {
  std::array<uint8_t, 32> bytes{};

  std::string hex() const;
  static std::optional<Digest> fromHex(std::string_view hex);
  std::string_view raw() const {
    return {reinterpret_cast<const char *>(bytes.data()), bytes.size()};
  }
  static std::optional<Digest> fromRaw(std::string_view raw);
  friend bool operator==(const Digest &, const Digest &) = default;
  friend auto operator<=>(const Digest &, const Digest &) = default;
};

// Incremental hashing.
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;

  Sha256 &update(std::string_view data);
  // Length-prefixed, so that ("ab","c") and ("a","bc") hash differently.
  Sha256 &field(std::string_view data);
  Digest finish();

private:
  void *ctx; // EVP_MD_CTX
};

Digest sha256(std::string_view data);

struct FileDigest {
  Digest digest;
  uint64_t size = 0;
};
// Hashes a file's content. Returns nullopt and sets `error` on failure.
std::optional<FileDigest> sha256File(const std::string &path,
                                     std::string *error = nullptr);
// The same through an open descriptor, from offset 0 (pread).
std::optional<FileDigest> sha256Fd(int fd);

} // namespace linkd
