// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Link-time rewriting in the link child (or the local fallback link), before
// LLD starts: takes each input's rewritten form from the plan's directory
// (the daemon put cached ones there) or rewrites the missing ones now (after
// scanning the whole set: the rename table spans it), then
// redirects LLD's reads of every input to its rewritten form. LLD's
// diagnostics and the access record keep naming the user's files.
#pragma once

#include "linkd/v1/linkd.pb.h"
#include "rewrite/rename_table.h"

#include <string>
#include <vector>

namespace linkd {

// Empty on success; otherwise an error message naming the file (and member).
// `leftAlone`, if given, gets the names the plan's --match selects and no
// rule renames (the inputs are then scanned even if all are cached).
std::string
applyRewritePlan(const v1::RewritePlan &plan,
                 std::vector<rewrite::LeftAloneRecord> *leftAlone = nullptr);

// Every plan of a link, one per --linkd-rewrite spec, in order; with more
// than one, a warning on stderr for each name two of them leave alone that
// merges in this link (a weak AMDGPU loader slot).
std::string
applyRewritePlans(const std::vector<const v1::RewritePlan *> &plans);

} // namespace linkd
