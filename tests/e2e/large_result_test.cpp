// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Large results (a 96 MiB incompressible output, like W1's 132 MB): the
// counters are current when the client returns, even though a hit makes its
// next spare copy afterwards; and an identical link started while the first
// one's result is still being stored (hashed, compressed, written: a good
// part of a second) waits for that store and is a hit: LLD runs once.
#include "harness.h"

#include <thread>

namespace linkd::e2e {
namespace {

class LargeResult : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure())
      return;
    ASSERT_TRUE(exitedZero(run("head -c 100663296 /dev/urandom > random.bin")));
    writeFile("blob.s", ".section .rodata\n.globl blob\nblob:\n"
                        ".incbin \"random.bin\"\n");
    writeFile("main.c", "extern const char blob[];\n"
                        "int main(void) { return blob[0] & 0; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -c blob.s && clang-19 -c main.c")));
    ASSERT_TRUE(exitedZero(run("clang-19 --ld-path=" + tools::ldLld.path +
                               " main.o blob.o -o big.stock")));
  }

  // Links to `big` (the output's name is part of the key), then renames it
  // to `output`.
  std::string linkCommand(const std::string &output) {
    return "clang-19 --ld-path=" + binPath("ld.linkd") +
           " main.o blob.o -o big && mv big " + output;
  }

  // Exactly `n` results stored, once the stores after the answers ended.
  void storedExactly(long long n) {
    ASSERT_EQ(statReaching("results_stored", n), n);
  }
};

TEST_F(LargeResult, CountersAreCurrentWhenTheClientReturns) {
  ASSERT_TRUE(exitedZero(run(linkCommand("big1"))));
  storedExactly(1);
  for (int i = 2; i <= 4; ++i) {
    std::string out = "big" + std::to_string(i);
    RunResult hit = run(linkCommand(out));
    ASSERT_TRUE(exitedZero(hit)) << describe(hit);
    // Read at once: no waiting for the daemon to catch up.
    auto stats = cacheStats();
    EXPECT_EQ(stats["hits"], i - 1) << "after hit " << i - 1;
    EXPECT_EQ(stats["requests"], i);
    EXPECT_TRUE(sameBytes("big.stock", out));
  }
}

TEST_F(LargeResult, ATwinDuringTheStoreIsServedFromIt) {
  ASSERT_TRUE(exitedZero(run(linkCommand("big1"))));
  // The first client has its answer; its result is being stored now.
  RunResult twin = run(linkCommand("big2"));
  ASSERT_TRUE(exitedZero(twin)) << describe(twin);
  EXPECT_TRUE(sameBytes("big.stock", "big1"));
  EXPECT_TRUE(sameBytes("big.stock", "big2"));
  auto stats = cacheStats();
  EXPECT_EQ(stats["misses"], 1);
  EXPECT_EQ(stats["hits"], 1);
  EXPECT_EQ(stats["results_stored"], 1);
  // LLD ran once: one link line with a child's exit status.
  EXPECT_EQ(logLines(" rc=0 ").size(), 1u);
  EXPECT_EQ(logLines(" cache=miss").size(), 1u);
  EXPECT_EQ(logLines(" cache=hit ").size(), 1u);
}

TEST_F(LargeResult, LogLinesSayWhatTheCacheDid) {
  ASSERT_TRUE(exitedZero(run(linkCommand("miss"))));
  storedExactly(1);
  ASSERT_TRUE(exitedZero(run(linkCommand("hit"))));
  // (After the daemon started: in the environment of the client that starts
  // it, LINKD_NOCACHE=1 turns its cache off.)
  ASSERT_TRUE(exitedZero(run("LINKD_NOCACHE=1 " + linkCommand("off"))));
  auto off = logLines(" cache=off ");
  ASSERT_EQ(off.size(), 1u);
  EXPECT_NE(off[0].find("reason=\"no-cache requested by the client\""),
            std::string::npos)
      << off[0];
  auto miss = logLines(" cache=miss ");
  ASSERT_EQ(miss.size(), 1u);
  EXPECT_NE(miss[0].find(" reason=\""), std::string::npos) << miss[0];
  auto hit = logLines(" cache=hit ");
  ASSERT_EQ(hit.size(), 1u);
  for (const std::string &field : std::vector<std::string>{
           " flavor=elf ", " saved_ms=", " output=" + dir + "/big ",
           " cwd=" + dir})
    EXPECT_NE(hit[0].find(field), std::string::npos) << field << "\n" << hit[0];
  EXPECT_TRUE(logLines("CACHE_").empty());
}

} // namespace
} // namespace linkd::e2e
