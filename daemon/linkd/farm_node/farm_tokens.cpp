// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_node/farm_tokens.h"

#include <openssl/crypto.h>

#include <fstream>
#include <sstream>

namespace linkd {

std::optional<FarmTokens> FarmTokens::load(const std::string &path,
                                           unsigned defaultMaxLinks,
                                           std::string *error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read token file " + path;
    return std::nullopt;
  }
  FarmTokens t;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream words(line);
    Client c;
    if (!(words >> c.token) || c.token[0] == '#')
      continue;
    if (c.token.size() < 16) {
      *error = path + ":" + std::to_string(n) +
               ": token too short (16 characters at least)";
      return std::nullopt;
    }
    if (!(words >> c.name))
      c.name = "client" + std::to_string(n);
    long long max = 0;
    c.maxLinks = (words >> max) && max > 0 ? static_cast<unsigned>(max)
                                           : defaultMaxLinks;
    t.clients.push_back(std::move(c));
  }
  if (t.clients.empty()) {
    *error = "no tokens in " + path;
    return std::nullopt;
  }
  return t;
}

std::optional<std::string>
FarmTokens::authenticate(const std::string &header) const {
  const std::string prefix = "Bearer ";
  if (header.size() <= prefix.size() ||
      header.compare(0, prefix.size(), prefix))
    return std::nullopt;
  std::string given = header.substr(prefix.size());
  std::optional<std::string> found;
  for (const Client &c : clients)
    if (c.token.size() == given.size() &&
        CRYPTO_memcmp(c.token.data(), given.data(), given.size()) == 0)
      found = c.name;
  return found;
}

bool FarmTokens::acquire(const std::string &name) {
  unsigned max = 0;
  for (const Client &c : clients)
    if (c.name == name)
      max = c.maxLinks;
  std::lock_guard lock(mu);
  unsigned &n = active[name];
  if (n >= max)
    return false;
  ++n;
  return true;
}

void FarmTokens::release(const std::string &name) {
  std::lock_guard lock(mu);
  if (active[name] > 0)
    --active[name];
}

} // namespace linkd
