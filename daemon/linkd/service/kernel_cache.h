// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The kernel library's cache: a kernel link's result by the content of its
// request (docs/kernels.md, "Caching").
//
// Key = SHA-256 of: key format, linkd and LLD versions, flavor, argv (argv[0]
// included: LLD names itself in its diagnostics), the forwarded environment,
// and each input's caller-given name with the SHA-256 of its bytes, in the
// caller's order. Names are part of the request (the argv refers to them,
// diagnostics print them), so the same names with the same bytes are an
// exact hit, from any process, on any day; only digests travel before the
// hit is known. A link that read anything but its blobs (a system library
// through -L, a linker script on the daemon's disk) is not stored: the key
// cannot vouch for files it does not name.
//
// Value: the encoded Result message (kernel_wire.h) as a store blob, under
// the action namespace "kernel-link". Failures are misses, never errors.
#pragma once

#include "digest/digest.h"
#include "kernel/kernel_wire.h"
#include "store/local_store.h"

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace linkd {

Digest kernelKey(const kernel::LinkMsg &req, const std::string &lldVersion);

// Thread-safe. A result is visible to lookups from the moment it is
// announced (before its link is answered) until it is in the store: a second
// process asking right after the first got its answer is a hit, not a race
// with the store write.
class KernelCache {
public:
  explicit KernelCache(LocalStore *store) : store(store) {}
  bool enabled() const { return store != nullptr; }
  std::optional<kernel::ResultMsg> lookup(const Digest &key);
  // Before answering: the result will be stored under `key`.
  void announce(const Digest &key, const kernel::ResultMsg &result);
  // After answering: stores it (and forgets the announcement).
  bool put(const Digest &key, const kernel::ResultMsg &result);

private:
  LocalStore *store;
  std::mutex mu;
  std::map<Digest, kernel::ResultMsg> storing; // announced, not yet stored
};

} // namespace linkd
