// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Where a library link may write: only under its working directory. The
// outputs come back as bytes by their relative names, in both modes; an
// output named absolutely, or with ".." climbing out of the working
// directory, is refused before either mode runs, with one message. Without
// this the modes disagreed: the daemon's view answered `-o /abs` with bytes
// and `-o ../x` with an LLD error, while a local link wrote both files on
// the caller's file system (one of them outside its private directory).
//
// The options checked are the ones LLD 19's drivers write files from (-o,
// maps, dependency files, reproduce tarballs, LTO objects, PDBs, import
// libraries, ...), in every spelling the drivers accept.
#pragma once

#include "client/liblinkd/kernel_request.h"

#include <string>

namespace linkd::kernel {

// "" if every output the argv names stays under the working directory;
// else why not, naming the option and the path.
std::string outputOutsideWorkingDirectory(const Request &req);

} // namespace linkd::kernel
