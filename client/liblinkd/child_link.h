// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// liblinkd's fallback when no daemon can be had: the inputs are written to a
// private temporary directory under their names (private_dirs.h), the local
// linker (local_linker.h; `linkd-lld link`, the same LLD as the daemon's, or
// a stock one) runs there in a child process (never LLD in the caller's
// process), and every file it left in the directory that is not an input is
// an output. Inputs named absolutely are read at their names by linkd-lld's
// view (daemon/linkd-lld/local_view.h); a stock linker cannot be shown them,
// which is an error value here.
#pragma once

#include "client/liblinkd/kernel_request.h"

namespace linkd::kernel {

Outcome linkInChildProcess(const Request &req);

} // namespace linkd::kernel
