// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The store of input blobs a sandboxed link child reads: a farm node's (its
// clients' file contents) and the kernel library's (its callers' inputs,
// service/kernel_link.cpp), by SHA-256, as plain read-only files that the
// child can open and mmap.
//
//   <root>/ab/abcdef...         a complete, verified blob (mode 0444)
//   <root>/partial/abcdef...uN  upload N in progress (one file per upload)
//
// Uploads arrive in chunks, each at its partial file's end (or at 0 to start
// over); commit() checks the digest of the content as it arrived (or hashes
// the file) and moves it into place only if it matches its name, and never
// over a blob already there, so a path handed to a link child always holds
// exactly the content its name says, whatever another tenant uploads.
//
// Every upload writes a file of its own, so no uploader can spoil another's
// bytes. Uploads belong to a tenant (a token's name): a link whose upload
// broke leaves its partial file for the tenant's next link, which resumes
// where it ends; and a second link of the same tenant that needs a digest
// while the first one uploads it waits for that commit instead of sending it
// twice (six clients linking against one new library at once). It waits on
// progress, not on a promise: beginUpload(..., alongside) starts an upload
// of its own once the first one stops moving (uploadProgress). Another
// tenant never waits: it could not use the blob anyway until it sent it
// (blob_owners.h). Blobs are touched on use; evict() removes the least
// recently used ones down to a size cap, and partial files no link resumed
// within an hour or beyond 1024 (run from the daemon's maintenance loop).
// Thread-safe.
// Whole blobs that arrive in one piece (the kernel library's) go through a
// temporary file of their own; a second copy is dropped.
#pragma once

#include "digest/digest.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

class BlobStore {
public:
  BlobStore(std::string root, uint64_t maxBytes);

  using Clock = std::chrono::steady_clock;
  // An upload progresses in steps of this many bytes: a client that
  // trickles a byte at a time makes none.
  static constexpr uint64_t kProgressBytes = 256 << 10;
  // Partial files no link resumed are removed after this long, the oldest
  // first beyond this many.
  static constexpr std::chrono::seconds kResumableFor{3600};
  static constexpr size_t kMaxResumable = 1024;

  // Creates the directories and removes the partial files of an earlier
  // process; "" or why not.
  std::string open();

  const std::string &root() const { return dir; }
  std::string pathOf(const Digest &d) const;
  bool has(const Digest &d);

  // Starts link `owner`'s upload of `d` for `tenant`, or finds it under
  // way: the offset to ask the client from (a partial file an ended link of
  // the same tenant left is taken over and continued), or nothing while
  // another link of the tenant uploads `d` (then wait for its commit, or
  // call again with `alongside` to upload to a file of one's own).
  std::optional<uint64_t> beginUpload(const Digest &d,
                                      const std::string &tenant, uint64_t owner,
                                      bool alongside = false);
  // When the upload of `d` that `tenant`'s other links wait for began or
  // last progressed (kProgressBytes); nothing if there is none.
  std::optional<Clock::time_point>
  uploadProgress(const Digest &d, const std::string &tenant) const;
  // Bytes `owner`'s upload of `d` holds so far.
  uint64_t partialSize(const Digest &d, uint64_t owner) const;
  // Writes raw bytes at `offset` of `owner`'s upload: its size continues
  // it, 0 restarts it. False on I/O error, without a begun upload, or at any
  // other offset (a gap, or bytes already written: those are covered by the
  // uploader's streamed digest).
  bool append(const Digest &d, uint64_t owner, uint64_t offset,
              std::string_view data);
  // Verifies and publishes `owner`'s upload of `d`; false (and the partial
  // file removed) when the content does not hash to `d`. `hashed`: the
  // digest of the content as it arrived (the caller hashed every byte since
  // offset 0), so the file need not be read again. `published` runs once
  // the blob is in place, before links waiting for this upload are let go.
  bool commit(const Digest &d, uint64_t owner, std::string *error,
              const std::optional<Digest> &hashed = std::nullopt,
              const std::function<void()> &published = nullptr);
  // Ends every upload of `owner` (its link ended, whatever the outcome):
  // what it received stays for its tenant's next link to continue.
  void releaseUploads(uint64_t owner);
  // Stores `data` (already hashed to `d` by the caller) through a temporary
  // file of its own; "" or why not.
  std::string storeWhole(const Digest &d, std::string_view data);

  uint64_t bytes() const;
  // Evicts least recently used blobs until at most the cap is used.
  uint64_t evict();

private:
  struct Upload {
    std::string tenant, path;
    uint64_t size = 0;
    uint64_t sinceProgress = 0; // bytes since progressAt
    Clock::time_point progressAt;
  };
  struct Left { // a broken upload's file, for the tenant's next link
    std::string path;
    Clock::time_point at;
  };
  using Key = std::pair<Digest, std::string>; // digest, tenant
  // Moves the verified file `from` to `final` unless a blob is there
  // already (then `from` is removed); "" or why not.
  static std::string publish(const std::string &from, const std::string &final,
                             const Digest &d);
  // Forgets `owner`'s upload of `d` (the caller holds `mu`); the file stays.
  void endUpload(const Digest &d, uint64_t owner, const Upload &u);
  void dropStaleResumable(Clock::time_point now);
  std::string dir;
  uint64_t maxBytes;
  mutable std::mutex mu;
  std::map<std::pair<Digest, uint64_t>, Upload> uploads; // by digest, link
  std::map<Key, uint64_t> claims; // the upload a tenant's other links await
  std::map<Key, Left> resumable;
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
