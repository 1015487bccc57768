// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The farm's trust boundaries (docs/design.md, "Trust boundaries";
// docs/farm.md), attacked from each side with tests/e2e/tools/farm_peer: a
// token holder sending crafted Offload requests to a real node, and a fake node
// answering a real farm client (the test's own daemon) with outputs its link
// could not write. Every attack must be refused, and every build still ends
// with stock bytes.
#include "harness.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

namespace linkd::e2e {
namespace {

constexpr const char *kToken = "test-token-0123456789abcdef";
constexpr const char *kOtherToken = "other-token-abcdefghijklmnop";

class FarmTrustTest : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    writeFile("tokens",
              std::string(kToken) + " alice 4\n" + kOtherToken + " bob 4\n");
    writeFile("tok", std::string(kToken) + "\n");
    writeFile("tok2", std::string(kOtherToken) + "\n");
  }

  // Starts `command` (which listens on `port`) and waits until it accepts.
  pid_t startListener(const std::string &command, int port) {
    Background bg = start(command);
    atTeardown([this, bg] {
      kill(bg.pid, SIGTERM);
      wait(bg, 30s);
    });
    EXPECT_TRUE(waitForPort(port, bg.pid)) << command << " did not start";
    return bg.pid;
  }

  // A real node on loopback, plaintext (allowed on loopback).
  int startNode(const std::string &extra = "") {
    int port = freePort();
    run("mkdir -p n1/run && chmod 700 n1/run");
    nodeEnv = "export LINKD_SOCKET=" + path("n1/run/linkd.sock") +
              " LINKD_STATE_DIR=" + path("n1/state") +
              " LINKD_CACHE_DIR=" + path("n1/cache") + "; ";
    nodePid = startListener(
        nodeEnv + "exec " + binPath("linkd") +
            " serve --listen 127.0.0.1:" + std::to_string(port) +
            " --token-file " + path("tokens") + " --jobs 2 " + extra,
        port);
    return port;
  }

  // The environment that makes the test's daemon a farm client of `port`.
  std::string farmEnv(int port, const std::string &tokenFile = "tok",
                      const std::string &extra = "") {
    return "export LINKD_FARM=ipv4:127.0.0.1:" + std::to_string(port) +
           " LINKD_FARM_INSECURE=true LINKD_FARM_TOKEN_FILE=" +
           path(tokenFile) + " LINKD_FARM_POLICY=remote " + extra + "; ";
  }

  // farm_peer offload with the LinkRequest `json`: its "status=..." line
  // and the rest of what it printed.
  RunResult offload(int port, const std::string &json,
                    const std::string &tokenFile = "tok") {
    writeFile("req.json", json);
    return run(binPath("farm_peer") +
               " offload 127.0.0.1:" + std::to_string(port) + " - \"$(cat " +
               tokenFile + ")\" " + path("req.json"));
  }

  // The node log's lines that hold `needle`.
  std::string nodeLog(const std::string &needle) {
    return run("grep -F -- '" + needle + "' n1/state/linkd.log").out;
  }
  // The test directory, as a link's cwd.
  std::string here() {
    std::string d = path("");
    d.pop_back();
    return d;
  }
  // The node's peak resident memory (VmHWM), in KiB.
  long nodePeakKib() {
    RunResult r = run("grep VmHWM /proc/" + std::to_string(nodePid) +
                      "/status | tr -dc 0-9");
    return r.out.empty() ? -1 : std::stol(r.out);
  }

  std::string nodeEnv;
  pid_t nodePid = -1;
};

using Clock = std::chrono::steady_clock;

// A program without libc that exits with status 3.
constexpr const char *kExit3 =
    "void _start(void) { __asm__ volatile(\"mov $60, %eax; mov $3, %edi; "
    "syscall\"); }\n";

// A LinkRequest as protobuf JSON; `extra` adds fields.
std::string linkJson(const std::string &cwd, const std::string &extra = "") {
  return R"({"protocolVersion": 1, "flavor": "FLAVOR_ELF", "argv": ["ld.lld",
      "-e", "main", "p.o", "-o", "out"], "cwd": ")" +
         cwd + "\"" + (extra.empty() ? "" : ", " + extra) + "}";
}

TEST_F(FarmTrustTest, TheNodeRefusesEveryFieldOnlyALocalDaemonMaySet) {
  int port = startNode();
  writeFile("p.c", "int main(void) { return 3; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c && mkdir -p plan")));
  // The attack of the audit: a rewrite plan whose directory is on the node
  // (here: the test directory, which the node can see) and whose input is a
  // file of the node. Applied, it would write plan/0 outside the sandbox.
  std::string plan = R"("rewritePlan": {"match": "*", "internalPrefix": "x_",
      "inputs": [{"path": ")" +
                     path("p.o") +
                     R"(", "scope": "SCOPE_RUNTIME"}], "dir": ")" +
                     path("plan") + "\"}";
  struct Case {
    const char *what;
    std::string extra;
  } cases[] = {
      {"rewrite_plan", plan},
      // An incremental state in a directory of the node's: the link child
      // would keep (and later read) the state, the output and the objects
      // there, outside the sandbox.
      {"incremental_plan", "\"incrementalPlan\": {\"stateDir\": \"" +
                               path("plan") + "\", \"resultFile\": \"" +
                               path("plan/result") + "\"}"},
      {"incremental", "\"incremental\": true"},
      {"rewrite_spec", "\"rewriteSpec\": \"" + path("spec") + "\""},
      {"stdin_data", "\"stdinData\": \"aGVsbG8=\""},
      {"no_cache", "\"noCache\": true"},
      {"__LINKD_SANDBOX_WRITE", "\"env\": {\"__LINKD_SANDBOX_WRITE\": \"/\"}"},
      {"HOME", "\"env\": {\"HOME\": \"/root\"}"},
  };
  for (const Case &c : cases) {
    RunResult r = offload(port, linkJson(path(""), c.extra));
    EXPECT_NE(r.out.find("status=3 "), std::string::npos) << c.what << "\n"
                                                          << describe(r);
    EXPECT_NE(r.out.find(c.what), std::string::npos) << describe(r);
  }
  EXPECT_EQ(run("ls plan").out, "") << "the plan ran on the node";
  // An archiver flavor and the rewrite command are not for the farm either.
  for (const char *flavor : {"FLAVOR_AR", "FLAVOR_REWRITE", "FLAVOR_LIB"}) {
    std::string json = linkJson(path(""));
    json = replaceAll(json, "FLAVOR_ELF", flavor);
    EXPECT_NE(offload(port, json).out.find("status=3 "), std::string::npos)
        << flavor;
  }
  // The node still serves a plain link (its answers: every path absent,
  // so the link fails on the node with LLD's own message).
  RunResult plain = offload(port, linkJson(path("")));
  EXPECT_NE(plain.out.find("status=0 "), std::string::npos) << describe(plain);
  EXPECT_TRUE(processAlive(nodePid));
}

// A fake node answering with `mode` (farm_peer fake-node); the link must
// fall back to a local one with stock bytes, and the client count it.
class FakeNodeTest : public FarmTrustTest {
protected:
  void attack(const std::string &mode) {
    int port = freePort();
    startListener("exec " + binPath("farm_peer") + " fake-node " +
                      std::to_string(port) + " " + mode,
                  port);
    writeFile("p.c", kExit3);
    ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
    ASSERT_TRUE(linkBoth(
        elfLinkers(), farmEnv(port) + "umask 022; {ld} p.o -o out", {"out"}));
    EXPECT_EQ(run("./out").exitCode, 3);
    struct stat st {};
    ASSERT_EQ(stat(path("out").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07000, 0u);
    auto s = cacheStats();
    EXPECT_EQ(s["farm_offloaded"], 0);
    EXPECT_EQ(s["farm_rejected"], 1);
    EXPECT_EQ(s["farm_fallbacks"], 1);
    EXPECT_EQ(logLines("farm: rejected").size(), 1u);
  }
};

TEST_F(FakeNodeTest, AnOutputOutsideTheLinksOutputsIsRefused) {
  run("mkdir -p victim");
  attack("abs:" + path("victim/evil.sh"));
  EXPECT_FALSE(exists("victim/evil.sh"));
  EXPECT_EQ(run("ls -A victim").out, "");
}

TEST_F(FakeNodeTest, ASetuidOutputIsRefused) { attack("setuid"); }

TEST_F(FakeNodeTest, AnOutputThroughASymlinkIsRefused) {
  // `sub` leads elsewhere; the link's output is `out`, not `sub/out`, and
  // `./out` is spelled differently but is the same file (allowed would be
  // fine too, but `sub/../out` through a symlink is not `out`).
  run("mkdir -p victim && ln -s victim sub");
  attack("path:sub/out");
  EXPECT_EQ(run("ls -A victim").out, "");
}

TEST_F(FakeNodeTest, AnOutputWithDotDotIsRefused) {
  run("mkdir -p victim d && ln -s ../victim d/v");
  attack("path:d/v/../out");
  EXPECT_EQ(run("ls -A victim").out, "");
}

TEST_F(FarmTrustTest, AStalledClientDoesNotHoldTheNodeFromAnotherToken) {
  // One job slot. alice's link asks about its first input and alice never
  // answers; after the stall timeout the node drops it, and bob's link,
  // queued behind it, runs on the node.
  int port = startNode("--jobs 1 --stall-timeout 2");
  writeFile("p.c", kExit3);
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  writeFile("req.json", linkJson(path("")));
  Background stalled = start("exec " + binPath("farm_peer") +
                             " stall 127.0.0.1:" + std::to_string(port) +
                             " - " + kToken + " " + path("req.json"));
  std::this_thread::sleep_for(1s);
  auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       farmEnv(port, "tok2", "LINKD_FARM_TIMEOUT_MS=20000") +
                           "{ld} p.o -o out",
                       {"out"}));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 15s);
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);
  RunResult r = wait(stalled, 30s);
  EXPECT_NE(r.out.find("status=8 "), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("without progress"), std::string::npos) << describe(r);
  EXPECT_TRUE(processAlive(nodePid));
}

TEST_F(FarmTrustTest, AStoredBlobServesOnlyTheTokenThatSentIt) {
  int port = startNode();
  writeFile("p.c", kExit3);
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  auto link = [&](const std::string &tok, const std::string &out) {
    run(binPath("linkd") + " stop");
    EXPECT_TRUE(exitedZero(
        run(farmEnv(port, tok) + binPath("ld.linkd") + " p.o -o " + out)));
    EXPECT_EQ(run("./" + out).exitCode, 3);
    auto s = cacheStats();
    EXPECT_EQ(s["farm_offloaded"], 1) << out;
    return s["farm_blobs_uploaded"];
  };
  EXPECT_EQ(link("tok", "a"), 1);  // alice sends p.o
  EXPECT_EQ(link("tok", "b"), 0);  // and may use it again
  EXPECT_EQ(link("tok2", "c"), 1); // bob must send it himself
  EXPECT_EQ(link("tok2", "d"), 0);
}

// Mallory (alice's token) starts a link that needs p.o
// and sends its content a byte a second. bob's link of the same p.o does
// not wait for that upload (before: 43.9 s, then a failed digest check on
// mallory's partial file); alice's own next link waits while it makes no
// progress for 3 s at most, then sends p.o itself; mallory's link is dropped
// after the stall timeout: a trickle is no progress.
TEST_F(FarmTrustTest, ATricklingUploadStallsNoOtherLinkAndIsDropped) {
  int port = startNode("--stall-timeout 15");
  writeFile("lib.c", "int answer(void) { return 3; }\n");
  writeFile("p.c", "int answer(void);\n"
                   "void _start(void) { __asm__ volatile(\"syscall\" :: "
                   "\"a\"(60), \"D\"(answer())); }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O1 -c p.c lib.c")));
  writeFile("req.json",
            R"({"protocolVersion": 1, "flavor": "FLAVOR_ELF", "argv": ["ld.lld",
      "p.o", "lib.o", "-o", "out"], "cwd": ")" +
                here() + "\"}");
  Background trickler =
      start("exec " + binPath("farm_peer") +
            " trickle 127.0.0.1:" + std::to_string(port) + " - " + kToken +
            " " + path("req.json") + " " + path("p.o") + " " + path("lib.o"));
  atTeardown([trickler] { kill(trickler.pid, SIGKILL); });
  // Its upload began (a partial file of its own).
  auto partials = [&] {
    return run("ls n1/cache/farm/blobs/partial | wc -l").out;
  };
  for (int i = 0; i < 100 && partials() == "0\n"; ++i)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(partials(), "1\n");
  auto timed = [&](const std::string &tok, const std::string &link) {
    run(binPath("linkd") + " stop");
    auto begin = Clock::now();
    EXPECT_TRUE(linkBoth(elfLinkers(), farmEnv(port, tok) + link, {"out"}));
    auto took = Clock::now() - begin;
    EXPECT_EQ(run("./out").exitCode, 3);
    EXPECT_EQ(cacheStats()["farm_offloaded"], 1) << link;
    EXPECT_EQ(cacheStats()["farm_fallbacks"], 0) << link;
    return took;
  };
  EXPECT_LT(timed("tok2", "{ld} p.o lib.o -o out"), 8s);
  EXPECT_LT(timed("tok", "{ld} -znorelro p.o lib.o -o out"), 10s);
  EXPECT_NE(nodeLog("client=alice stops waiting for"), "");
  // (In OffloadDone: the trickler, blocked in its writes, never half-closes,
  // and so its call then ends cancelled.)
  RunResult r = wait(trickler, 40s);
  EXPECT_NE(r.out.find("done.error: the client left a question or upload "
                       "without progress for 15 s"),
            std::string::npos)
      << describe(r);
  EXPECT_EQ(partials(), "1\n"); // mallory's bytes, for alice to resume
  EXPECT_TRUE(processAlive(nodePid));
}

// A client that stops reading its outputs holds no job
// slot (bob's link runs meanwhile on the node's only one), and its call is
// cancelled once a write to it blocks for the stall timeout.
TEST_F(FarmTrustTest, AClientThatStopsReadingHoldsNoSlot) {
  int port = startNode("--jobs 1 --stall-timeout 4");
  writeFile("p.c", kExit3);
  // 64 MiB of output from a few bytes of input.
  writeFile("big.lds", "SECTIONS { .text : { *(.text) } "
                       ".pad : { BYTE(1); . += 0x4000000; } }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  writeFile("req.json",
            R"({"protocolVersion": 1, "flavor": "FLAVOR_ELF", "argv": ["ld.lld",
      "-e", "_start", "p.o", "-T", "big.lds", "-o", "big"], "cwd": ")" +
                here() + "\"}");
  Background reader =
      start("exec " + binPath("farm_peer") +
            " no-read 127.0.0.1:" + std::to_string(port) + " - " + kToken +
            " " + path("req.json") + " " + path("p.o") + " " + path("big.lds"));
  atTeardown([reader] { kill(reader.pid, SIGKILL); });
  for (int i = 0; i < 100 && nodeLog("farm link id=1 ").empty(); ++i)
    std::this_thread::sleep_for(100ms);
  std::this_thread::sleep_for(1s); // the link ran; its outputs wait
  auto begin = Clock::now();
  ASSERT_TRUE(linkBoth(elfLinkers(), farmEnv(port, "tok2") + "{ld} p.o -o out",
                       {"out"}));
  EXPECT_LT(Clock::now() - begin, 4s);
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);
  RunResult r = wait(reader, 60s);
  EXPECT_NE(r.out.find("status=1 "), std::string::npos) << describe(r);
  EXPECT_NE(nodeLog("did not send its start or take what the node wrote"), "")
      << run("cat n1/state/linkd.log").out;
  EXPECT_TRUE(processAlive(nodePid));
}

// Facts are counted on the wire. Two million nameless
// directory facts (8 MB in one message) are refused before they are parsed;
// before, 2.5 M took a node to 1.58 GB.
TEST_F(FarmTrustTest, AFirstMessageWithMillionsOfFactsIsRefusedCheaply) {
  int port = startNode();
  long before = nodePeakKib();
  ASSERT_GT(before, 0);
  RunResult r =
      run(binPath("farm_peer") + " facts 127.0.0.1:" + std::to_string(port) +
          " " + kToken + " 2000000");
  EXPECT_NE(r.out.find("status=8 "), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("more than the node takes"), std::string::npos)
      << describe(r);
  long grew = nodePeakKib() - before;
  EXPECT_LT(grew, 100 * 1024) << "the node's peak grew by " << grew << " KiB";
  // The node still links.
  writeFile("p.c", kExit3);
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  ASSERT_TRUE(
      linkBoth(elfLinkers(), farmEnv(port) + "{ld} p.o -o out", {"out"}));
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);
}

} // namespace
} // namespace linkd::e2e
