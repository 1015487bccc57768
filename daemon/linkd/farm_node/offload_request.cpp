// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The farm node's table of LinkRequest fields (see offload_request.h).
#include "daemon/linkd/farm_node/offload_request.h"

#include "link/flavor.h"

#include <algorithm>

namespace linkd {
namespace {

// Generous for any real link (a browser's argv is a few MiB) and small
// enough that a request cannot hold the node's memory by itself.
constexpr size_t kMaxArgBytes = 64u << 20;
constexpr size_t kMaxVersionBytes = 256;

std::string checkFlavorAndShape(const v1::LinkRequest &req) {
  auto f = req.flavor();
  if (f < v1::FLAVOR_ELF || f > v1::FLAVOR_WASM)
    return "unknown linker flavor " + std::to_string(f);
  if (req.protocol_version() > 1)
    return "protocol_version " + std::to_string(req.protocol_version()) +
           " is newer than this node's";
  if (req.argv().empty())
    return "empty argv";
  size_t bytes = 0;
  for (const std::string &a : req.argv())
    bytes += a.size() + 1;
  if (bytes > kMaxArgBytes)
    return "argv exceeds " + std::to_string(kMaxArgBytes) + " bytes";
  if (req.cwd().empty() || req.cwd()[0] != '/')
    return "cwd must be an absolute path";
  if (req.client_version().size() > kMaxVersionBytes)
    return "client_version is too long";
  return {};
}

// Fields only a thin client and its own daemon exchange.
std::string checkLocalOnly(const v1::LinkRequest &req) {
  if (req.has_rewrite_plan() || req.more_rewrite_plans_size() > 0)
    return "rewrite_plan is the daemon's to set, never a farm client's";
  if (req.has_incremental_plan())
    return "incremental_plan is the daemon's to set, never a farm client's";
  if (req.incremental())
    return "incremental links keep their state where they run; they are "
           "not offloaded";
  if (!req.rewrite_spec().empty() || req.more_rewrite_specs_size() > 0)
    return "rewrite_spec names a file of the client; links with link-time "
           "rewriting are not offloaded";
  if (req.has_stdin_data())
    return "stdin_data is for archivers, which are not offloaded";
  if (req.no_cache())
    return "no_cache is the client's own cache's business";
  return {};
}

// The environment: only variables the flavor's LLD reads. Anything else
// (the node's own sandbox keys in particular) is refused, not dropped.
std::string checkEnvironment(const v1::LinkRequest &req) {
  auto names = flavorEnvironment(static_cast<Flavor>(req.flavor()));
  for (const auto &[name, value] : req.env())
    if (std::find(names.begin(), names.end(), name) == names.end())
      return "env names " + name + ", which the linker does not read";
  return {};
}

// A field this node does not know might mean something it would not allow.
std::string checkNoUnknownFields(const v1::LinkRequest &req) {
  if (!req.GetReflection()->GetUnknownFields(req).empty())
    return "the request has fields this node does not know";
  if (req.has_rewrite_plan() && !req.rewrite_plan()
                                     .GetReflection()
                                     ->GetUnknownFields(req.rewrite_plan())
                                     .empty())
    return "the request has fields this node does not know";
  return {};
}

} // namespace

std::string validateOffloadedLink(const v1::LinkRequest &req) {
  for (auto check : {checkFlavorAndShape, checkLocalOnly, checkEnvironment,
                     checkNoUnknownFields})
    if (std::string e = check(req); !e.empty())
      return e;
  return {};
}

} // namespace linkd
