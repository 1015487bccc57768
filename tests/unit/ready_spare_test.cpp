// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The ready spare (lib/incremental/ready_spare.h): an exact copy of a
// state's output, with the output's mode, named after the output's
// identity, and nothing left behind when it cannot be made.
#include "incremental/ready_spare.h"
#include "scratch_dir.h"

#include <sys/stat.h>

#include <random>

namespace linkd {
namespace {

class ReadySpareTest : public ScratchDirTest {
protected:
  // The directory's entries, sorted, one per line.
  std::string entries() {
    std::string out;
    FILE *p = popen(("ls -A " + dir).c_str(), "r");
    char buf[256];
    while (p && fgets(buf, sizeof buf, p))
      out += buf;
    if (p)
      pclose(p);
    return out;
  }
  struct stat statOf(const std::string &name) {
    struct stat st{};
    EXPECT_EQ(stat((dir + "/" + name).c_str(), &st), 0) << name;
    return st;
  }
};

TEST_F(ReadySpareTest, IsAnExactCopyNamedAfterTheOutput) {
  // Bytes no pattern compresses, over several copy_file_range calls' worth.
  std::mt19937_64 random(7);
  std::string bytes(3 * 1024 * 1024 + 123, '\0');
  for (char &c : bytes)
    c = static_cast<char>(random());
  write("output", bytes);
  ASSERT_EQ(chmod((dir + "/output").c_str(), 0751), 0);
  struct stat out = statOf("output");
  bool outdated = true;
  EXPECT_EQ(incremental::makeReadySpare(dir, outdated), "");
  EXPECT_FALSE(outdated);
  std::string name = incremental::readySpareName(out);
  EXPECT_TRUE(name.starts_with("spare.ready-" + std::to_string(out.st_ino)))
      << name;
  EXPECT_EQ(entries(), "output\n" + name + "\n");
  EXPECT_TRUE(read(name) == bytes);
  struct stat spare = statOf(name);
  EXPECT_EQ(spare.st_mode & 07777, 0751u);
  EXPECT_EQ(spare.st_nlink, 1u);
  EXPECT_NE(spare.st_ino, out.st_ino);

  // The output written after its copy is another output: its spare has
  // another name, and the old one is not it.
  std::string other = bytes;
  other[5] ^= 1;
  write("output", other);
  EXPECT_NE(incremental::readySpareName(statOf("output")), name);

  // A full link removes every ready spare (and copies in progress); the
  // state's other files stay.
  write("spare.ready.tmp-abcdef", "half");
  write("spare", "x");
  write("spare.edits", "y");
  incremental::removeReadySpares(dir);
  EXPECT_EQ(entries(), "output\nspare\nspare.edits\n");
}

TEST_F(ReadySpareTest, NoOutputNoSpareAndNoLitter) {
  bool outdated = true;
  std::string e = incremental::makeReadySpare(dir, outdated);
  EXPECT_NE(e.find(dir + "/output: "), std::string::npos) << e;
  EXPECT_FALSE(outdated);
  // A symbolic link in the state is not followed out of it.
  write("elsewhere", "not the output");
  ASSERT_EQ(symlink("elsewhere", (dir + "/output").c_str()), 0);
  e = incremental::makeReadySpare(dir, outdated);
  EXPECT_NE(e.find(dir + "/output: "), std::string::npos) << e;
  // A directory is not an output.
  ASSERT_EQ(unlink((dir + "/output").c_str()), 0);
  ASSERT_EQ(mkdir((dir + "/output").c_str(), 0700), 0);
  e = incremental::makeReadySpare(dir, outdated);
  EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
  EXPECT_EQ(entries(), "elsewhere\noutput\n");
}

} // namespace
} // namespace linkd
