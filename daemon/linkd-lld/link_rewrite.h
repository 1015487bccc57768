// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Link-time rewriting in the link child (or the local fallback link), before
// LLD starts: takes each input's rewritten form from the plan's directory
// (the daemon put cached ones there) or rewrites the missing ones now (after
// scanning the whole set: the rename table spans it), then
// redirects LLD's reads of every input to its rewritten form. LLD's
// diagnostics and the access record keep naming the user's files.
#pragma once

#include "linkd/v1/linkd.pb.h"

#include <string>

namespace linkd {

// Empty on success; otherwise an error message naming the file (and member).
std::string applyRewritePlan(const v1::RewritePlan &plan);

} // namespace linkd
