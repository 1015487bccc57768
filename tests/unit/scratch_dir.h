// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A unit test with a scratch directory of its own under /tmp (removed
// after the test): files are written and read there and shell commands
// (compilers, the linker, the program) run in it.
#pragma once

#include "util/files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace linkd {

class ScratchDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/linkd-unit-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  // LINKD_TEST_KEEP=1 keeps the directory, to look at by hand.
  void TearDown() override {
    if (std::getenv("LINKD_TEST_KEEP"))
      std::fprintf(stderr, "kept %s\n", dir.c_str());
    else
      removeTree(dir);
  }

  int sh(const std::string &cmd) {
    return std::system(("cd " + dir + " && " + cmd).c_str());
  }
  void write(const std::string &name, const std::string &text) {
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
  }
  std::string read(const std::string &name) {
    return readFile(dir + "/" + name).value_or("");
  }

  std::string dir;
};

} // namespace linkd
