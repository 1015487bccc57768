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

  std::string nodeEnv;
  pid_t nodePid = -1;
};

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
  EXPECT_NE(r.out.find("unanswered"), std::string::npos) << describe(r);
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

} // namespace
} // namespace linkd::e2e
