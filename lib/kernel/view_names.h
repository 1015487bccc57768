// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// How a library link's view looks up an absolute path, the same in the
// daemon's view (daemon/linkd/service/blob_link.cpp) and in linkd-lld's
// local view (daemon/linkd-lld/local_view.h): "." and empty parts dropped,
// ".." left to the file system (it may cross a symbolic link). Input names
// have neither (checkInputName), so one name is found however a link
// spells it. Header-only: linkd-lld and the daemon include it.
#pragma once

#include <string>
#include <string_view>

namespace linkd::kernel {

inline std::string viewLookupName(std::string_view path) {
  std::string out;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? "" : path.substr(slash + 1);
    if (part.empty() || part == ".")
      continue;
    out += '/';
    out += part;
  }
  return out.empty() ? "/" : out;
}

} // namespace linkd::kernel
