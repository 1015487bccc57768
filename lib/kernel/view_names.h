// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// How a library link's view looks up an absolute path, the same in the
// daemon's view (daemon/linkd/service/kernel_link.cpp) and in linkd-lld's
// local view (daemon/linkd-lld/local_view.h): "." and empty parts dropped,
// ".." left to the file system (it may cross a symbolic link). Input names
// have neither (checkInputName), so one name is found however a link
// spells it. Header-only: linkd-lld and the daemon include it.
#pragma once

#include <string>
#include <string_view>

namespace linkd::kernel {

// The part of `rest` before its first '/', which is taken off `rest` with
// that '/': walking a path part by part (empty parts included).
inline std::string_view nextPathPart(std::string_view &rest) {
  size_t slash = rest.find('/');
  std::string_view part = rest.substr(0, slash);
  rest = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
  return part;
}

inline std::string viewLookupName(std::string_view path) {
  std::string out;
  while (!path.empty()) {
    std::string_view part = nextPathPart(path);
    if (part.empty() || part == ".")
      continue;
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

} // namespace linkd::kernel
