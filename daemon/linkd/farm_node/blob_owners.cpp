// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_node/blob_owners.h"

namespace linkd {

bool BlobOwners::owns(const std::string &client, const Digest &d) const {
  std::lock_guard lock(mu);
  auto it = byClient.find(client);
  return it != byClient.end() && it->second.count(d);
}

void BlobOwners::add(const std::string &client, const Digest &d) {
  std::lock_guard lock(mu);
  byClient[client].insert(d);
}

} // namespace linkd
