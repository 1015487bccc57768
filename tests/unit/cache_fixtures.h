// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What the cache's unit tests share: access records as the recorder
// writes them, a temporary directory, a file written whole.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace linkd::unit {

inline std::string rec(char kind, const std::string &p,
                       const std::string &p2 = "") {
  std::string s(1, kind);
  s += p;
  s += '\0';
  if (!p2.empty()) {
    s += p2;
    s += '\0';
  }
  return s;
}

class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/linkd-unit-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

inline void writeFile(const std::string &path, const std::string &content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

} // namespace linkd::unit
