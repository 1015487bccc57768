// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The file system of a library link run without a daemon
// (client/liblinkd/child_link.cpp), made to mean what the daemon's view of
// the same call means (daemon/linkd/service/kernel_link.cpp):
//   * an input the caller named absolutely (`/tmp/tmpa8w3_9qz`) is read at
//     that name, however it is spelled with "." and empty parts (".." is
//     the file system's), from the copy the library placed in a directory
//     of its own (never written at the name); directories above such a name
//     that the file system lacks exist as empty directories;
//   * a relative path that climbs above the working directory (the
//     library's private directory) does not exist, as above the daemon's
//     virtual working directory, and nothing can be created there.
// Everything else is the file system's, as for the daemon's link.
//
// `linkd-lld link --view DIR`: DIR holds `names` (the placed names, each
// ended by NUL), their copies `0`, `1`, ... in that order, and an empty
// directory `empty`. Process-global, like the access recorder whose libc
// entry points consult it; set once before LLD starts.
#pragma once

#include <string>

namespace linkd::local_view {

// Turns the view on; "" or why it could not be read.
std::string startLocalView(const std::string &dir);

// What a file-system call on `path` should use: `path` itself, the file
// or directory the view substitutes, or nullptr with errno set (ENOENT
// above the working directory, as the daemon's view; EACCES for a write at
// a placed name). `writes`: the call may create or change the file.
const char *viewed(const char *path, bool writes);

// realpath() where the view decides: true with the answer in `result`
// (the placed name itself, into `resolved`, PATH_MAX bytes, or malloc'ed if
// that is null; nullptr with errno when there is nothing), false where the
// caller asks libc.
bool viewedRealpath(const char *path, char *resolved, char *&result);

} // namespace linkd::local_view
