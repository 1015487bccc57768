// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// lib/util: the regular-file rules every process reads by, the tree removal
// that never follows a link out of the tree, and Result's two sides.
#include "util/files.h"
#include "util/result.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace linkd {
namespace {

class UtilFiles : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/linkd-util-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { removeTree(dir); }
  void write(const std::string &name, const std::string &data) {
    UniqueFd fd(::open((dir + "/" + name).c_str(),
                       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd.valid());
    ASSERT_TRUE(writeAll(fd.get(), data));
  }
  std::string dir;
};

TEST_F(UtilFiles, ReadsARegularFileWhole) {
  write("a", std::string(100000, 'x') + "end");
  Result<std::string> r = readFile(dir + "/a");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->size(), 100003u);
  EXPECT_TRUE(r->ends_with("end"));
  EXPECT_EQ(r.error(), "");
}

TEST_F(UtilFiles, RefusalsNameTheFileAndWhy) {
  write("big", "0123456789");
  Result<std::string> big = readFile(dir + "/big", 9);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error(), dir + "/big: larger than 9 bytes");
  EXPECT_EQ(big.value_or("fallback"), "fallback");

  Result<std::string> missing = readFile(dir + "/none");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), dir + "/none: No such file or directory");

  EXPECT_EQ(readFile(dir).error(), dir + ": not a regular file");

  // A FIFO nobody writes is refused at once, never waited on.
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(readFile(dir + "/fifo").error(), dir + "/fifo: not a regular file");
}

TEST_F(UtilFiles, OpenRegularFileGivesTheSizeAndOwnsTheDescriptor) {
  write("f", "abc");
  int fd;
  {
    Result<OpenFile> f = openRegularFile(dir + "/f", 3);
    ASSERT_TRUE(f) << f.error();
    EXPECT_EQ(f->size, 3u);
    fd = f->fd.get();
    EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
  }
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the descriptor outlived its owner";
}

TEST_F(UtilFiles, RemoveTreeDoesNotFollowALinkOutOfTheTree) {
  char outside[] = "/tmp/linkd-util-outside-XXXXXX";
  ASSERT_NE(mkdtemp(outside), nullptr);
  std::string keep = std::string(outside) + "/keep";
  {
    UniqueFd fd(::open(keep.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd.valid());
  }
  ASSERT_EQ(mkdir((dir + "/sub").c_str(), 0755), 0);
  write("sub/file", "x");
  ASSERT_EQ(symlink(outside, (dir + "/sub/link").c_str()), 0);
  EXPECT_TRUE(removeTree(dir));
  struct stat st{};
  EXPECT_NE(lstat(dir.c_str(), &st), 0) << "the tree is still there";
  EXPECT_EQ(lstat(keep.c_str(), &st), 0) << "a file outside the tree went";
  removeTree(outside);
}

TEST(UtilResult, AFailureConvertsToAnyResult) {
  auto parse = [](const std::string &s) -> Result<int> {
    if (s.empty())
      return Failure{"an empty number"};
    return std::atoi(s.c_str());
  };
  Result<int> ok = parse("42");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 42);
  Result<int> bad = parse("");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "an empty number");
  EXPECT_EQ(bad.value_or(7), 7);
}

// Within a file system and across one (/dev/shm: read and write), bytes at
// their offsets; a source shorter than asked is EIO.
TEST_F(UtilFiles, CopyFileBytesCopiesWithinAndAcrossFileSystems) {
  std::string bytes(1536 * 1024 + 7, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 131 + i / 4096);
  write("from", bytes);
  char shm[] = "/dev/shm/linkd-unit-XXXXXX";
  UniqueFd across(mkstemp(shm));
  ASSERT_TRUE(across.valid());
  unlink(shm);
  UniqueFd in(::open((dir + "/from").c_str(), O_RDONLY));
  UniqueFd same(::open((dir + "/to").c_str(), O_RDWR | O_CREAT, 0600));
  ASSERT_TRUE(in.valid() && same.valid());
  for (int out : {same.get(), across.get()}) {
    EXPECT_EQ(copyFileBytes(in.get(), out, bytes.size()), 0);
    std::string got(bytes.size(), '\0');
    EXPECT_EQ(pread(out, got.data(), got.size(), 0),
              static_cast<ssize_t>(got.size()));
    EXPECT_TRUE(got == bytes);
  }
  EXPECT_EQ(copyFileBytes(in.get(), same.get(), bytes.size() + 1), EIO);
}

} // namespace
} // namespace linkd
