// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "config/near_miss.h"

#include <algorithm>

namespace linkd {

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> nearestName(std::string_view name,
                                       const std::vector<std::string> &known) {
  size_t limit = std::clamp<size_t>(name.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t bestDistance = limit + 1;
  for (const std::string &k : known)
    if (size_t d = editDistance(name, k); d < bestDistance) {
      bestDistance = d;
      best = k;
    }
  return best;
}

} // namespace linkd
