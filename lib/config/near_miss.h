// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// "Did you mean": the known name nearest to a mistyped one (a config key,
// a --linkd-* option), by edit distance, if it is near enough to be a typo.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

// Levenshtein distance (insertions, deletions, substitutions).
size_t editDistance(std::string_view a, std::string_view b);

// The candidate nearest to `name` within a third of its length (at least 1,
// at most 3 edits); nullopt if none is.
std::optional<std::string> nearestName(std::string_view name,
                                       const std::vector<std::string> &known);

} // namespace linkd
