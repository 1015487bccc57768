// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Bearer tokens of a farm node and the links each may run at once.
//
// Token file: one client per line, `TOKEN [NAME [MAX_LINKS]]`, `#` comments.
// NAME is what the logs show (never the token); MAX_LINKS caps concurrent
// links for that token (default: the node's --max-links-per-token). Tokens
// are compared in constant time. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace linkd {

class FarmTokens {
public:
  // Reads `path`; nullopt and `error` set when unreadable or empty.
  static std::optional<FarmTokens>
  load(const std::string &path, unsigned defaultMaxLinks, std::string *error);

  // The client's name for `authorization` metadata ("Bearer <token>"), or
  // nullopt for a missing or unknown token.
  std::optional<std::string> authenticate(const std::string &header) const;

  // Takes one of the client's link slots; false when it is at its limit.
  bool acquire(const std::string &name);
  void release(const std::string &name);

  FarmTokens() = default;
  FarmTokens(FarmTokens &&other) noexcept
      : clients(std::move(other.clients)), active(std::move(other.active)) {}

private:
  struct Client {
    std::string token, name;
    unsigned maxLinks = 0;
  };
  std::vector<Client> clients;
  std::mutex mu;
  std::map<std::string, unsigned> active;
};

} // namespace linkd
