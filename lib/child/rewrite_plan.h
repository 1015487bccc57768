// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Link-time rewriting, the part both binaries share: a parsed spec as the
// RewritePlan the link child follows, and back. No LLVM (the daemon uses it).
#pragma once

#include "linkd/v1/linkd.pb.h"
#include "rewrite/link_spec.h"

#include <string>

namespace linkd {

// The plan for `spec`, every input not cached yet.
v1::RewritePlan planFromSpec(const rewrite::LinkRewriteSpec &spec);

// `dir`/<index>: where input `index`'s rewritten form is kept.
std::string rewrittenPath(const std::string &dir, int index);

// The spec of `plan` (for rewrite::rewrite()).
rewrite::RewriteSpec specFromPlan(const v1::RewritePlan &plan);

} // namespace linkd
