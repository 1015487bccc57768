// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A path of this machine as a sandboxed link is told about it (a PathFact
// of the farm contract, proto/linkd/v1/farm.proto): what stat() says, in the
// one form the farm client, the REAPI executor and the kernel link share.
// How a regular file's content is named differs (hashed in place, or copied
// into a blob store), so that part stays with the caller.
#pragma once

#include "linkd/v1/farm.pb.h"

#include <string>

namespace linkd {

// Fills `f` for `path` from stat(): absent (ENOENT, ENOTDIR), unreadable
// (any other error, or neither a regular file nor a directory), or a
// directory, with its mode, size, device, inode and mtime. True when `path`
// is a regular file: the caller then sets its kind, digest (and size) from
// its content.
bool statPathFact(const std::string &path, v1::PathFact &f);

} // namespace linkd
