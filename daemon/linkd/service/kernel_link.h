// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One kernel link from liblinkd, from its Link message to its Result
// (docs/kernels.md). The request names its inputs and gives their digests;
// the daemon looks the result up by content (kernel_cache.h), asks for the
// inputs its blob store lacks, and links them in a sandboxed child over the
// farm node's view (lib/view/sandbox_view.h): the caller's names are files of
// the view, relative names under a virtual working directory, and every
// file the link writes stays in the link's scratch directory and comes back
// as bytes. Paths the argv reaches that are not among the inputs (a system
// library, a -L search) are answered from the daemon's own file system,
// copied into the blob store first, and make the result uncacheable.
#pragma once

#include "daemon/linkd/service/kernel_listener.h"

namespace linkd {

// Serves one Link request whose payload (without the type byte) is
// `payload` on connection `fd`. False if the connection is no longer usable.
bool serveKernelLink(KernelLinkContext &ctx, int fd, std::string_view payload);

} // namespace linkd
