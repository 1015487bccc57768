// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/service/kernel_cache.h"

namespace linkd {
namespace {

constexpr std::string_view kNamespace = "kernel-link";

void field(Sha256 &h, std::string_view s) { h.field(s); }

} // namespace

Digest kernelKey(const kernel::LinkMsg &req, const std::string &lldVersion) {
  Sha256 h;
  field(h, "linkd-kernel-key-1");
  field(h, LINKD_VERSION);
  field(h, lldVersion);
  field(h, std::to_string(req.flavor));
  field(h, std::to_string(req.argv.size()));
  for (const std::string &a : req.argv)
    field(h, a);
  field(h, std::to_string(req.env.size()));
  for (const auto &[k, v] : req.env) {
    field(h, k);
    field(h, v);
  }
  field(h, std::to_string(req.inputs.size()));
  for (const kernel::WireInput &in : req.inputs) {
    field(h, in.name);
    field(h, in.sha256);
  }
  return h.finish();
}

std::optional<kernel::ResultMsg> KernelCache::lookup(const Digest &key) {
  {
    std::lock_guard lock(mu);
    if (auto it = storing.find(key); it != storing.end())
      return it->second;
  }
  std::string ref, blob;
  if (!store || store->getAction(kNamespace, key, ref) != Lookup::Hit)
    return std::nullopt;
  auto d = Digest::fromRaw(ref);
  if (!d || store->getBlob(*d, blob) != Lookup::Hit || blob.empty())
    return std::nullopt;
  return kernel::decodeResult(std::string_view(blob).substr(1));
}

void KernelCache::announce(const Digest &key, const kernel::ResultMsg &result) {
  if (!store)
    return;
  std::lock_guard lock(mu);
  storing.insert_or_assign(key, result);
}

bool KernelCache::put(const Digest &key, const kernel::ResultMsg &result) {
  if (!store)
    return false;
  Digest d;
  bool ok = store->putBlob(kernel::encodeResult(result), &d) &&
            store->putAction(kNamespace, key, d.raw());
  std::lock_guard lock(mu);
  storing.erase(key);
  return ok;
}

} // namespace linkd
