// `linkd status` and `linkd stop`: small gRPC clients of a running daemon.
#pragma once

namespace linkd {

int printStatus(bool json);
int stopDaemon();

} // namespace linkd
