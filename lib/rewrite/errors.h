// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Error values of the rewriter: every message names its file (and archive
// member); several are joined one per line, as the CLI prints them.
#pragma once

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace linkd::rewrite {

inline llvm::Error fail(const std::string &file, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 file + ": " + msg);
}

inline llvm::Error joined(const std::vector<std::string> &messages) {
  std::string all;
  for (const std::string &m : messages)
    all += (all.empty() ? "" : "\n") + m;
  return llvm::createStringError(llvm::inconvertibleErrorCode(), all);
}

} // namespace linkd::rewrite
