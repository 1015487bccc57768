// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Which tokens may use which blobs of a farm node's store.
//
// Blobs are stored once, by digest, whoever sent them. Without this, a token
// that knew (or guessed) the digest of another tenant's file could link
// against it and read it back through the link's output or diagnostics. So
// a stored blob serves a link only if that link's token uploaded it (and
// the node verified the bytes against the digest): another token is asked
// to upload it too, which proves it holds the content. The sets live in
// memory; after a node restarts, each token uploads a blob once more before
// it uses it again (the store keeps one copy either way). Rejected: one
// store per token (no sharing at all between the links of one token's
// many clients is not the problem; the cost is duplicate copies of the
// system libraries every tenant links), and a proof of possession by
// challenge (a client hashing nonce+content costs it a read of every input
// on every link, which the upload only costs once).
#pragma once

#include "digest/digest.h"

#include <map>
#include <mutex>
#include <set>
#include <string>

namespace linkd {

class BlobOwners {
public:
  bool owns(const std::string &client, const Digest &d) const;
  void add(const std::string &client, const Digest &d);

private:
  mutable std::mutex mu;
  std::map<std::string, std::set<Digest>> byClient;
};

} // namespace linkd
