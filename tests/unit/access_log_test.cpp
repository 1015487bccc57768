// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Access records, LLD's temporaries and response files: what a link read
// and wrote, as the cache takes it.
#include "cache_fixtures.h"

#include "cache/access_log.h"
#include "cache/archive_key.h"
#include "cache/cache_stats.h"
#include "cache/input_handles.h"
#include "cache/link_key.h"
#include "cache/name_check.h"
#include "cache/stat_cache.h"
#include "config/config.h"
#include "digest/sha256_thread.h"
#include "link/response_files.h"
#include "store/local_store.h"
#include "store/remote_backend.h"
#include "store/remote_tiers.h"
#include "store/temp_journal.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>

namespace {

using namespace linkd;
using namespace linkd::unit;

TEST(AccessLog, RenamedTempFileIsTheOutputAndNeverAnInput) {
  std::string r = rec('R', "/w/a.o") + rec('M', "/w/libx.so") +
                  rec('S', "/w/out") + rec('N', "/w/out", "/w/out.old") +
                  rec('U', "/w/out.old") + rec('W', "/w/out.tmp123") +
                  rec('N', "/w/out.tmp123", "/w/out") + rec('W', "/w/out.map");
  AccessLog log = parseAccessLog(r);
  EXPECT_EQ(log.read, std::set<std::string>({"/w/a.o"}));
  EXPECT_EQ(log.missing, std::set<std::string>({"/w/libx.so"}));
  EXPECT_TRUE(log.existing.empty()); // /w/out was touched by the link
  EXPECT_EQ(log.outputs, std::set<std::string>({"/w/out", "/w/out.map"}));
  EXPECT_TRUE(log.uncacheable.empty());
}

TEST(TempJournal, OnlyLldsOwnTemporaryNamesAreTakenForLitter) {
  // FileOutputBuffer's `<out>.tmp%%%%%%%`: seven lowercase hex digits.
  EXPECT_TRUE(isLldTemporary("/w/a.out.tmp5afd4ba"));
  EXPECT_TRUE(isLldTemporary("/w/small.20139.out.tmp696abef"));
  // A user's own files that merely look alike are left alone.
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmpfoobar"));
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmp5AFD4BA"));
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmp5afd4ba0"));
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmp123"));
  EXPECT_FALSE(isLldTemporary("/w/.tmp5afd4ba"));
  EXPECT_FALSE(isLldTemporary("a.out.tmp5afd4ba")); // relative
  EXPECT_FALSE(isLldTemporary(""));
}

TEST(AccessLog, KernelPseudoFilesAreNotInputs) {
  AccessLog log = parseAccessLog(rec('R', "/proc/cpuinfo") +
                                 rec('S', "/sys/devices/system/cpu") +
                                 rec('M', "/dev/nope") + rec('R', "/w/a.o"));
  EXPECT_EQ(log.read, std::set<std::string>({"/w/a.o"}));
  EXPECT_TRUE(log.existing.empty());
  EXPECT_TRUE(log.missing.empty());
  EXPECT_TRUE(log.uncacheable.empty());
}

TEST(AccessLog, TheNullDeviceIsNoOutputAndDevShmHoldsFiles) {
  AccessLog log = parseAccessLog(rec('W', "/dev/null") + rec('R', "/w/a.o") +
                                 rec('R', "/dev/shm/jit/k.o") +
                                 rec('M', "/dev/shm/jit/libm.so"));
  EXPECT_TRUE(log.outputs.empty());
  EXPECT_EQ(log.read, std::set<std::string>({"/dev/shm/jit/k.o", "/w/a.o"}));
  EXPECT_EQ(log.missing, std::set<std::string>({"/dev/shm/jit/libm.so"}));
  EXPECT_TRUE(log.uncacheable.empty());
}

TEST(AccessLog, ProcessesDirectoriesAndBadRecordsAreUncacheable) {
  EXPECT_FALSE(parseAccessLog(rec('X', "/bin/sh")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('L', "/w")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('D', "/w/d")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('C', "/w")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('E', "")).uncacheable.empty());
  EXPECT_FALSE(
      parseAccessLog(std::string("Rno-terminator")).uncacheable.empty());
  // A path that was missing and then read appeared during the link.
  EXPECT_FALSE(
      parseAccessLog(rec('M', "/w/x") + rec('R', "/w/x")).uncacheable.empty());
}

TEST(ResponseFiles, OneSpellingForOneFile) {
  EXPECT_EQ(withoutDotComponents("/w/./a.rsp"), "/w/a.rsp");
  EXPECT_EQ(withoutDotComponents("/w//x/./././a"), "/w/x/a");
  EXPECT_EQ(withoutDotComponents("/w/x/.."), "/w/x/..");
  EXPECT_EQ(withoutDotComponents("./a.o"), "a.o");
  EXPECT_EQ(withoutDotComponents("/"), "/");
  EXPECT_EQ(withoutDotComponents("/."), "/");
  EXPECT_EQ(withoutDotComponents("."), ".");
}

TEST(ResponseFiles, GnuTokenizer) {
  EXPECT_EQ(tokenizeGnu("a  b\tc\n"),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(tokenizeGnu("'a b' \"c \\\" d\" e\\ f"),
            (std::vector<std::string>{"a b", "c \" d", "e f"}));
}

TEST(ResponseFiles, ExpandedRecursivelyRelativeToCwd) {
  TempDir t;
  writeFile(t.path + "/outer.rsp", "-o out @inner.rsp");
  writeFile(t.path + "/inner.rsp", "--gc-sections a.o");
  ExpandedArgs e =
      expandResponseFiles({"ld.lld", "@outer.rsp", "b.o", "@absent"}, t.path);
  EXPECT_EQ(e.args, (std::vector<std::string>{"-o", "out", "--gc-sections",
                                              "a.o", "b.o", "@absent"}));
  ASSERT_EQ(e.files.size(), 2u);
  EXPECT_EQ(e.files[0].path, t.path + "/outer.rsp");
}

TEST(ResponseFiles, SpecialFilesAndHugeOnesAreLeftUnread) {
  TempDir t;
  ASSERT_EQ(mkfifo((t.path + "/fifo").c_str(), 0600), 0);
  ExpandedArgs fifo =
      expandResponseFiles({"ld", "@fifo", "@/dev/zero"}, t.path);
  EXPECT_EQ(fifo.args, (std::vector<std::string>{"@fifo", "@/dev/zero"}));
  EXPECT_EQ(fifo.unread,
            "response file " + t.path + "/fifo is not a regular file");
  ASSERT_EQ(truncate((t.path + "/big").c_str(), 0), -1); // absent
  writeFile(t.path + "/big", "");
  ASSERT_EQ(truncate((t.path + "/big").c_str(), kMaxResponseFileBytes + 1), 0);
  ExpandedArgs big = expandResponseFiles({"ld", "@big"}, t.path);
  EXPECT_EQ(big.unread, "response files larger than 64 MiB");
}

TEST(AccessLog, ReadThenReplacedIsNoInput) {
  // llvm-ar r: reads lib.a, writes a temp file, renames it over lib.a.
  std::string r = rec('R', "/w/lib.a") + rec('R', "/w/a.o") +
                  rec('W', "/w/lib.a.temp-archive-1.a") +
                  rec('N', "/w/lib.a.temp-archive-1.a", "/w/lib.a");
  AccessLog log = parseAccessLog(r);
  EXPECT_EQ(log.read, std::set<std::string>{"/w/a.o"});
  EXPECT_EQ(log.overwritten, std::set<std::string>{"/w/lib.a"});
  EXPECT_EQ(log.outputs, std::set<std::string>{"/w/lib.a"});
}

} // namespace
