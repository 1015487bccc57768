// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Response files (`@file`) as LLD reads them.
//
// The cache needs two things from them. The action key covers their content
// rather than their name (gcc's collect2 passes `@/tmp/ccXXXXXX` with a fresh
// name on every link), and the cacheability check must see the options inside
// them. LLD expands `@file` relative to the working directory, recursively;
// a file that cannot be read leaves the argument as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

// LLVM's cl::TokenizeGNUCommandLine: whitespace separates, backslash escapes
// the next character, single and double quotes group.
std::vector<std::string> tokenizeGnu(std::string_view text);

struct ResponseFile {
  std::string path;    // absolute
  std::string content; // raw bytes
};

// What the daemon reads of response files in all, per request: far more
// than any real link's, and small enough that `@/dev/zero`-like input
// cannot grow the daemon. Beyond it the link is uncacheable (the child,
// which expands them as LLD does, behaves like stock).
constexpr size_t kMaxResponseFileBytes = 64u << 20;

struct ExpandedArgs {
  std::vector<std::string> args;      // argv[1..] with all @files expanded
  std::vector<ResponseFile> files;    // every response file read, in order
  // Non-empty: a response file was left unread because it is a FIFO or a
  // device, or the files passed kMaxResponseFileBytes; the expansion is
  // then incomplete and the link must not be cached.
  std::string unread;
  size_t budget = kMaxResponseFileBytes; // bytes still to read
};

// Expands argv[1..]. Nested response files are expanded too (depth-limited,
// like LLVM). Tokenization is GNU style for all flavors: the result is used to
// find options, never to run the link.
ExpandedArgs expandResponseFiles(const std::vector<std::string> &argv,
                                 const std::string &cwd);

// Absolute form of `path` relative to `cwd` (no normalisation: the same
// spelling LLD's file accesses use).
std::string absolutePath(const std::string &path, const std::string &cwd);

// `path` without "." components and repeated slashes ("/a/./b//c" is
// "/a/b/c"): one spelling for one file, whichever way LLVM built the name
// it opened (a response file was recorded as "<cwd>/./a.rsp" in the
// sanitizer build, was then taken for an input of its own, and its link
// with a fresh name never hit). ".." is kept: only the file system can say
// where it leads.
std::string withoutDotComponents(std::string_view path);

} // namespace linkd
