// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A farm node's store of input blobs: the client's file contents, by SHA-256,
// as plain read-only files that a sandboxed link child can open and mmap.
//
//   <root>/ab/abcdef...       a complete, verified blob (mode 0444)
//   <root>/partial/abcdef...  an upload in progress; a broken upload resumes
//                             where this file ends
//
// Uploads arrive in chunks, each at the partial file's end (or at 0 to start
// over); commit() checks the digest of the content as it arrived (or hashes
// the file) and moves it into place only if it matches its name, and never
// over a blob already there, so a path handed to a link child always holds
// exactly the content its name says, whatever another tenant uploads. Blobs are
// touched on use; evict() removes the least recently used ones down to a size
// cap (run from the daemon's maintenance loop). Thread-safe. One partial file
// per digest means one upload at a time: an offloaded link claims a digest
// before it asks its client for it, and a second link that needs it meanwhile
// waits for the first one's commit instead of writing over its chunks (six
// clients linking against one new library at once were refused "does not
// continue it" and linked locally). Whole blobs that arrive in one piece (the
// kernel library's) go through a temporary file of their own; a second copy's
// rename replaces identical content.
#pragma once

#include "digest/digest.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

class FarmBlobStore {
public:
  FarmBlobStore(std::string root, uint64_t maxBytes);

  // Creates the directories; "" or why not.
  std::string open();

  const std::string &root() const { return dir; }
  std::string pathOf(const Digest &d) const;
  bool has(const Digest &d);
  // Bytes already received of an unfinished upload.
  uint64_t partialSize(const Digest &d) const;
  // Writes raw bytes at `offset`: the partial size continues the upload, 0
  // restarts it. False on I/O error or any other offset (a gap, or bytes
  // already written: those are covered by the uploader's streamed digest).
  bool append(const Digest &d, uint64_t offset, std::string_view data);
  // Verifies and publishes the upload; false (and the partial file removed)
  // when the content does not hash to `d`. `hashed`: the digest of the
  // content as it arrived (the caller hashed every byte since offset 0), so
  // the file need not be read again.
  bool commit(const Digest &d, std::string *error,
              const std::optional<Digest> &hashed = std::nullopt);

  // Takes the upload of `d` for `owner` (a link's number): true if it is
  // now (or already was) `owner`'s to upload, false while another owner's
  // upload of it is under way.
  bool claimUpload(const Digest &d, uint64_t owner);
  // Gives back every claim of `owner` (its link ended, whatever the
  // outcome); a partial upload stays for the next one to resume.
  void releaseUploads(uint64_t owner);
  // Stores `data` (already hashed to `d` by the caller) through a temporary
  // file of its own; "" or why not.
  std::string storeWhole(const Digest &d, std::string_view data);

  uint64_t bytes() const;
  // Evicts least recently used blobs until at most the cap is used.
  uint64_t evict();

private:
  std::string partialPath(const Digest &d) const;
  // Moves the verified file `from` to `final` unless a blob is there
  // already (then `from` is removed); "" or why not.
  static std::string publish(const std::string &from, const std::string &final,
                             const Digest &d);
  std::string dir;
  uint64_t maxBytes;
  mutable std::mutex mu; // serialises appends to one partial file
  std::mutex claimsMu;
  std::map<Digest, uint64_t> claims; // digest -> the link uploading it
  std::atomic<uint64_t> wholeSeq{0}; // temporary names of storeWhole
};

} // namespace linkd

namespace linkd {

// Blob transfer chunks: zstd level 1 when that saves space, else raw.
// `compressed` says which. Decompression refuses frames that would expand
// beyond `maxRaw` (a hostile peer cannot make us allocate gigabytes).
constexpr size_t kFarmChunkBytes = 1 << 20;
std::string compressChunk(std::string_view raw, bool *compressed);
std::optional<std::string> decompressChunk(std::string_view data,
                                           size_t maxRaw = 4 * kFarmChunkBytes);

} // namespace linkd
