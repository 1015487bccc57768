// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a farm node accepts of the LinkRequest inside an OffloadStart.
//
// The request comes from a token holder, and every field of it is hostile.
// Some fields of LinkRequest exist only between a thin client and its own
// daemon (the rewrite spec names a file on the client; the rewrite plan is
// the daemon's instruction to its link child and is applied before any
// sandbox starts; stdin data feeds an archiver; no_cache asks for a local
// cache's bypass). A farm client never sends them, so a request that carries
// one is refused with INVALID_ARGUMENT rather than ignored: a field the
// node ignored today could be one a later link child honours. The table
// field by field is in docs/farm.md ("What a node accepts").
#pragma once

#include "linkd/v1/linkd.pb.h"

#include <string>

namespace linkd {

// "" if a farm node may run `req`; else why not (the INVALID_ARGUMENT text).
std::string validateOffloadedLink(const v1::LinkRequest &req);

} // namespace linkd
