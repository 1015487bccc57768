// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// liblinkd's fallback when no daemon can be had: the inputs are written to a
// private temporary directory under their names, `linkd-lld link` runs there
// in a child process (never LLD in the caller's process), and every file it
// left in the directory that is not an input is an output. The same LLD as
// the daemon's link children, so the same bytes and diagnostics. Absolute
// input names cannot be placed in a private directory: that is an error
// value here (the daemon's view takes them).
#pragma once

#include "client/liblinkd/kernel_request.h"

namespace linkd::kernel {

Outcome linkInChildProcess(const Request &req);

} // namespace linkd::kernel
