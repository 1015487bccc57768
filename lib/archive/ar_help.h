// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The help texts llvm-ar 19 and llvm-ranlib 19 print (-h, --help, and after a
// usage error), byte for byte; `stem` is the program name's stem, which they
// show in the usage lines.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace linkd::archive {

void printArHelp(llvm::raw_ostream &out, llvm::StringRef stem);
void printRanlibHelp(llvm::raw_ostream &out, llvm::StringRef stem);

} // namespace linkd::archive
