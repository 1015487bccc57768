// `linkd status` and `linkd stop`: small gRPC clients of a running daemon.
#pragma once

#include <string>

namespace linkd {

int printStatus(bool json);
int stopDaemon();
// `linkd stats [--json] [--zero]`: from the running daemon, or straight from
// the cache directory when none runs.
int printStats(bool json, bool zero);
// `linkd cache clear|trim`.
int cacheControl(const std::string &op);

} // namespace linkd
