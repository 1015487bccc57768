// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "view/path_fact.h"

#include <sys/stat.h>

#include <cerrno>

namespace linkd {

bool statPathFact(const std::string &path, v1::PathFact &f) {
  f.set_path(path);
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    f.set_kind(e == ENOENT || e == ENOTDIR ? v1::PathFact::ABSENT
                                           : v1::PathFact::UNREADABLE);
    f.set_error(e);
    return false;
  }
  f.set_mode(st.st_mode);
  f.set_size(static_cast<uint64_t>(st.st_size));
  f.set_dev(st.st_dev);
  f.set_ino(st.st_ino);
  f.set_mtime_ns(st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec);
  if (S_ISDIR(st.st_mode)) {
    f.set_kind(v1::PathFact::DIRECTORY);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    f.set_kind(v1::PathFact::UNREADABLE);
    f.set_error(EACCES);
    return false;
  }
  return true;
}

} // namespace linkd
