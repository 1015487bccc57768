// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A farm node's upload sequence, driven from bytes: uploads begun (waiting
// or alongside another), chunks at any offset with the true content or
// other bytes, commits, releases and whole stores, by three uploaders (two
// of one tenant) of a few digests, applied to a BlobStore with the
// node's own rule for the streamed digest (offload_messages.cpp's
// takeBlob: a chunk at 0 starts a digest of the arriving bytes, every
// accepted chunk extends it, the last one hands it to commit(), the link's
// end releases its uploads and drops its digests). The
// invariant, checked after every step: every blob in the store hashes to
// its name. Used by the unit test (tests/unit/blob_store_test.cpp, random
// sequences for a bounded time) and the libFuzzer target upload_fuzzer.
#pragma once

#include "daemon/linkd/blobs/blob_store.h"
#include "digest/digest.h"

#include <dirent.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace linkd::upload_sequence {

struct Contents {
  std::vector<std::string> blobs; // the true contents, by index
  std::vector<Digest> digests;
};

inline Contents makeContents() {
  Contents c;
  std::string script = "/* GNU ld script\n   Use the shared library, but some "
                       "functions are only in\n   the static library. */\n"
                       "OUTPUT_FORMAT(elf64-x86-64)\nGROUP ( "
                       "/lib/x86_64-linux-gnu/libc.so.6 "
                       "/usr/lib/x86_64-linux-gnu/libc_nonshared.a  AS_NEEDED "
                       "( /lib64/ld-linux-x86-64.so.2 ) )\n";
  std::string big;
  for (int i = 0; i < 3000; ++i)
    big += static_cast<char>('a' + (i * 7) % 26);
  c.blobs = {script, big, std::string("x")};
  for (const std::string &b : c.blobs)
    c.digests.push_back(sha256(b));
  return c;
}

// The name of the first stored blob that does not hash to its name, or "".
inline std::string firstBadBlob(const std::string &root) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 256; ++i) {
    std::string sub = root + "/" + hex[i >> 4] + hex[i & 15];
    DIR *d = opendir(sub.c_str());
    if (!d)
      continue;
    std::string bad;
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() != 64)
        continue;
      std::string err;
      auto got = sha256File(sub + "/" + name, &err);
      if (!got || got->digest.hex() != name) {
        bad = name;
        break;
      }
    }
    closedir(d);
    if (!bad.empty())
      return bad;
  }
  return {};
}

// Runs the sequence `in` describes; "" or what broke the invariant.
inline std::string run(BlobStore &store, const Contents &c,
                       std::string_view in) {
  struct Uploader {
    std::map<size_t, std::string> streamed; // blob index -> bytes since 0
    std::map<size_t, bool> streaming;
  };
  Uploader up[3];
  auto next = [&in]() -> uint8_t {
    if (in.empty())
      return 0;
    uint8_t b = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    return b;
  };
  while (!in.empty()) {
    uint8_t op = next();
    size_t who = next() % 3, blob = next() % c.blobs.size();
    const Digest &d = c.digests[blob];
    const std::string &truth = c.blobs[blob];
    Uploader &u = up[who];
    const std::string tenant = who == 2 ? "bob" : "alice";
    switch (op % 6) {
    case 0:
      (void)store.beginUpload(d, tenant, who + 1, next() % 2);
      break;
    case 1:
    case 2: { // a chunk: where, and which bytes
      uint64_t size = store.partialSize(d, who + 1);
      uint8_t where = next(), from = next(), len = next();
      uint64_t offset = where % 4 == 0   ? 0
                        : where % 4 == 1 ? size
                                         : (size ? where % (size + 1) : 0);
      // Mostly the bytes that continue what this uploader streamed so far
      // (a liar's stream still hashes to the digest), else any slice.
      size_t start = from % 4 ? std::min(u.streamed[blob].size(), truth.size())
                              : from * truth.size() / 256;
      std::string bytes = truth.substr(start, len % 2 ? truth.size() : len);
      if (op % 6 == 2 && !bytes.empty())
        bytes[0] ^= 0x55; // other content
      if (!store.append(d, who + 1, offset, bytes))
        break;
      if (offset == 0) {
        u.streamed[blob].clear();
        u.streaming[blob] = true;
      }
      u.streamed[blob] += bytes;
      break;
    }
    case 3: { // the last chunk arrived: commit with the streamed digest
      std::optional<Digest> hashed;
      if (u.streaming[blob])
        hashed = sha256(u.streamed[blob]);
      u.streaming[blob] = false;
      std::string e;
      (void)store.commit(d, who + 1, &e, hashed);
      break;
    }
    case 4: // the link ended: its uploads go, its digests' streams too
      store.releaseUploads(who + 1);
      u.streaming.clear();
      break;
    default: // the kernel path: whole blobs its caller hashed
      (void)store.storeWhole(d, truth);
      break;
    }
    // Every step names one of c's digests: their files after each step,
    // the whole store at the end.
    for (const Digest &known : c.digests) {
      auto got = sha256File(store.pathOf(known));
      if (got && got->digest != known)
        return "stored blob " + known.hex() + " does not hash to its name";
    }
  }
  if (std::string bad = firstBadBlob(store.root()); !bad.empty())
    return "stored blob " + bad + " does not hash to its name";
  return {};
}

} // namespace linkd::upload_sequence
