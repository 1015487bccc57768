// `linkd status` and `linkd stop`: small gRPC clients of a running daemon.
#pragma once

#include <optional>
#include <string>

namespace linkd {

int printStatus(bool json);
int stopDaemon();
// `linkd rewrite ...` through the running daemon's Rewrite RPC (cached like a
// link). nullopt: no daemon (or LINKD_DISABLE=1); run it locally.
std::optional<int> rewriteThroughDaemon(int argc, char **argv);
// `linkd stats [--json] [--zero]`: from the running daemon, or straight from
// the cache directory when none runs.
int printStats(bool json, bool zero);
// `linkd cache clear|trim`.
int cacheControl(const std::string &op);

} // namespace linkd
