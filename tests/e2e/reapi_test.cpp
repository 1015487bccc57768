// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// linkd against a real Remote Execution API server: Bazel's own RemoteWorker
// (tools/reapi_worker.sh builds it from Debian's bazel-bootstrap-source and
// binds it to loopback), one per test, with its CAS in the test directory.
// A "worker" is a daemon with its own socket and local store; workers share
// only the REAPI tier. Counters come from `linkd stats --json`; bytes are
// compared with stock LLD's.
#include "tier_workers.h"

#include <signal.h>

#include <thread>

namespace linkd::e2e {
namespace {

const Tool java{"/usr/bin/java", "openjdk-17-jre-headless"};
const Tool javac{"/usr/bin/javac", "openjdk-17-jdk-headless"};

class ReapiTest : public TierWorkersTest {
protected:
  // Starts the RemoteWorker on a free loopback port; its URL (grpcs:// with
  // `tlsOptions`, the worker's --tls_* options).
  std::string startServer(const std::string &instance = "",
                          const std::string &tlsOptions = "") {
    EXPECT_TRUE(haveTool(java));
    EXPECT_TRUE(haveTool(javac));
    EXPECT_TRUE(haveFile("/usr/share/bazel/A-server.jar", "bazel-bootstrap"));
    EXPECT_TRUE(haveFile("/usr/src/bazel-bootstrap/src/tools/remote",
                         "bazel-bootstrap-source"));
    port = freePort();
    run("mkdir -p reapi/work reapi/cas");
    Background bg =
        start("exec bash " + std::string(LINKD_E2E_SOURCE_DIR) +
              "/tests/e2e/tools/reapi_worker.sh " + binDir() +
              "/../reapi-worker/classes --listen_port=" + std::to_string(port) +
              " --work_path=" + path("reapi/work") +
              " --cas_path=" + path("reapi/cas") + " --jobs=2 " + tlsOptions +
              " >reapi/log 2>&1");
    atTeardown([this, bg] {
      kill(bg.pid, SIGTERM);
      wait(bg, 10s);
    });
    // The first start in a build compiles the worker (~10 s on two cores).
    bool up = false;
    for (int i = 0; i < 1200 && !(up = portAccepts(port)); ++i)
      std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(up) << "the REAPI worker did not start: "
                    << readFile("reapi/log");
    return (tlsOptions.empty() ? "grpc://" : "grpcs://") +
           std::string("127.0.0.1:") + std::to_string(port) +
           (instance.empty() ? "" : "/" + instance);
  }

  int port = 0;
};

// Worker A links (a miss) and publishes to the REAPI server's CAS and action
// cache; worker B, with an empty local store, gets stock's bytes from it.
TEST_F(ReapiTest, WorkerBHitsWhatWorkerALinkedThroughTheActionCache) {
  std::string url = startServer("linkd/ci");
  stockReference();
  // Headers are sent with every call (the worker ignores unknown ones; it
  // rejects calls without REAPI's request metadata, which linkd sends).
  writeFile("headers", "# API key\nx-buildbuddy-api-key=not-a-secret\n");
  std::string headers = " LINKD_REMOTE_HEADER_FILE=" + path("headers");
  std::string a = worker("a", url, headers), b = worker("b", url, headers);
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  EXPECT_TRUE(sameBytes("ref", "outA"));
  waitForRemoteWrites(a, 3); // output, result, manifest
  auto sa = stats(a);
  EXPECT_EQ(sa["remote_errors"], 0);
  EXPECT_EQ(sa["misses"], 1);
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  auto sb = stats(b);
  EXPECT_EQ(sb["hits"], 1);
  EXPECT_EQ(sb["misses"], 0);
  EXPECT_GE(sb["remote_hits"], 3);
  EXPECT_EQ(sb["remote_errors"], 0);
  EXPECT_EQ(run("./outB").out, "42\n");
  // On the server: the output as a CAS blob under its SHA-256 (the worker
  // keeps blobs in files; it ignores instance names, so what an instance
  // name separates is checked against a scripted server,
  // tests/unit/reapi_client_test.cpp).
  std::string hash = run("sha256sum outB | cut -c1-64").out.substr(0, 64);
  EXPECT_TRUE(exists("reapi/cas/cas/" + hash.substr(0, 2) + "/" + hash));
}

// Above the server's batch limit (4 MiB for the worker) blobs go through
// ByteStream both ways, in pieces.
TEST_F(ReapiTest, LargeOutputsGoThroughByteStream) {
  std::string url = startServer();
  writeFile("big.c", "const char big[6 << 20] = {1, 2, 3};\n"
                     "int lib(void) { return 42 + big[1]; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c big.c")));
  stockReference("main.o big.o");
  std::string a = worker("a", url), b = worker("b", url);
  ASSERT_TRUE(exitedZero(linkAs(a, "outA", "main.o big.o")));
  waitForRemoteWrites(a, 3);
  ASSERT_TRUE(exitedZero(linkAs(b, "outB", "main.o big.o")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  EXPECT_EQ(stats(b)["hits"], 1);
  EXPECT_EQ(run("./outB").out, "44\n");
}

// A server whose CAS holds other bytes under the output's digest (the
// worker checks as it reads and says INTERNAL; a server that does not is
// caught by linkd's own check, tests/unit/reapi_client_test.cpp): B links
// itself (stock's bytes) and uploads the blob again although the server
// lists it as present. This server keeps the copy it has (an upload of a
// blob it holds is a no-op), so a third worker links too: slower, never
// wrong.
TEST_F(ReapiTest, ACorruptBlobOnTheServerIsNeverAnOutput) {
  std::string url = startServer();
  stockReference();
  std::string a = worker("a", url), b = worker("b", url);
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  waitForRemoteWrites(a, 3);
  std::string hash = run("sha256sum outA | cut -c1-64").out;
  hash = hash.substr(0, 64);
  std::string blob = "reapi/cas/cas/" + hash.substr(0, 2) + "/" + hash;
  ASSERT_TRUE(exists(blob)) << run("find reapi/cas").out;
  // Same size, other bytes (a flipped byte in the middle).
  ASSERT_TRUE(exitedZero(run("printf '\\x5a' | dd of=" + blob +
                             " bs=1 seek=1000 conv=notrunc status=none")));
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  EXPECT_EQ(run("./outB").out, "42\n");
  auto sb = stats(b);
  EXPECT_GE(sb["remote_errors"] + sb["remote_corrupt"], 1);
  EXPECT_EQ(sb["hits"], 0);
  EXPECT_GE(workerLog("b", "does not match"), 1u);
  waitForRemoteWrites(b, 1);
  std::string c = worker("c", url);
  ASSERT_TRUE(exitedZero(linkAs(c, "outC")));
  EXPECT_TRUE(sameBytes("ref", "outC"));
  EXPECT_EQ(run("./outC").out, "42\n");
}

// Signed mode over REAPI: a reader with the key accepts only entries signed
// with it.
TEST_F(ReapiTest, EntriesSignedWithAnotherKeyAreRejected) {
  std::string url = startServer();
  stockReference();
  std::string a = worker("a", url, " LINKD_REMOTE_KEY=one-key");
  std::string b = worker("b", url, " LINKD_REMOTE_KEY=another-key");
  std::string c = worker("c", url, " LINKD_REMOTE_KEY=one-key");
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  waitForRemoteWrites(a, 3);
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  auto sb = stats(b);
  EXPECT_EQ(sb["hits"], 0);
  EXPECT_GE(sb["remote_rejected"], 1);
  ASSERT_TRUE(exitedZero(linkAs(c, "outC")));
  EXPECT_TRUE(sameBytes("ref", "outC"));
  EXPECT_EQ(stats(c)["hits"], 1);
}

// Nothing listens: the link is local with stock's bytes, the tier's failure
// is counted and logged with what gRPC said, and the breaker keeps later
// links from waiting on it.
TEST_F(ReapiTest, AServerThatIsDownCostsACounterNotALink) {
  stockReference();
  std::string url = "grpc://127.0.0.1:" + std::to_string(freePort());
  std::string a = worker("a", url);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
    EXPECT_TRUE(sameBytes("ref", "outA"));
  }
  auto sa = stats(a);
  EXPECT_GE(sa["remote_errors"] + sa["remote_timeouts"], 1);
  EXPECT_GE(workerLog("a", "remote tier " + url), 1u);
  EXPECT_GE(workerLog("a", "UNAVAILABLE"), 1u);
}

// Settings that cannot work are said at start-up and cost the tier, never
// the link: a header file that does not exist, a URL with credentials.
TEST_F(ReapiTest, BadTierSettingsAreLoggedAndTheLinkStillHappens) {
  stockReference();
  std::string a = worker("a", "grpc://127.0.0.1:1",
                         " LINKD_REMOTE_HEADER_FILE=" + path("no-such-file"));
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  EXPECT_TRUE(sameBytes("ref", "outA"));
  EXPECT_EQ(workerLog("a", "cannot read the remote_header_file"), 1u);
  std::string b = worker("b", "grpc://user:pw@127.0.0.1:1");
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  EXPECT_EQ(workerLog("b", "credentials go in remote_header"), 1u);
}

} // namespace
} // namespace linkd::e2e

namespace linkd::e2e {
namespace {

// The executor: cache misses run as REAPI actions on the RemoteWorker,
// which runs `linkd-lld remote-link` (the path its "image" has: this
// build's).
class ReapiExecutorTest : public ReapiTest {
protected:
  std::string executor(const std::string &url, const std::string &linker) {
    return " LINKD_REMOTE_EXECUTOR=" + url + " LINKD_REMOTE_LINKER=" + linker +
           " LINKD_FARM_POLICY=remote";
  }
  // A remote_linker that runs linkd-lld and then does `then` (a shell
  // line, in the action's directory) before it exits.
  std::string wrappedLinker(const std::string &name, const std::string &then) {
    writeFile(name, "#!/bin/sh\n" + binPath("linkd-lld") + " \"$@\" || exit\n" +
                        then + "\n");
    run("chmod +x " + name);
    return path(name);
  }
};

TEST_F(ReapiExecutorTest, AMissRunsOnTheClusterWithStockBytes) {
  std::string url = startServer();
  stockReference();
  std::string a = worker("a", "", executor(url, binPath("linkd-lld")));
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  EXPECT_TRUE(sameBytes("ref", "outA"));
  EXPECT_EQ(run("./outA").out, "42\n");
  auto sa = stats(a);
  EXPECT_EQ(sa["farm_offloaded"], 1);
  EXPECT_EQ(sa["farm_fallbacks"], 0);
  EXPECT_EQ(sa["misses"], 1);
  // A cold link (no manifest yet) learns in rounds what its linker scripts
  // name; the result is cached like a local link's.
  EXPECT_GE(sa["farm_round_trips"], 1);
  EXPECT_GE(workerLog("a", "farm=" + url + " rc=0"), 1u);
  ASSERT_TRUE(exitedZero(linkAs(a, "outA2")));
  EXPECT_TRUE(sameBytes("ref", "outA2"));
  EXPECT_EQ(stats(a)["hits"], 1);
  // A second client with an empty cache and no shared tier: the same link
  // is the same action, which the cluster's action cache answers (nothing
  // runs on the worker).
  std::string b = worker("b", "", executor(url, binPath("linkd-lld")));
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  EXPECT_EQ(stats(b)["farm_offloaded"], 1);
  EXPECT_EQ(workerLog("b", "action cache"), 1u);
  // Another link of the same inputs (another key: a build id): offloaded
  // too, with stock's bytes for its arguments.
  ASSERT_TRUE(exitedZero(run("clang-19 -fuse-ld=lld main.o lib.o "
                             "-Wl,--build-id=0xabcd -o ref2")));
  RunResult r = run(a + "clang-19 --ld-path=" + binPath("ld.linkd") +
                    " main.o lib.o -Wl,--build-id=0xabcd -o other");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_TRUE(sameBytes("ref2", "other"));
  EXPECT_EQ(stats(a)["farm_offloaded"], 2);
}

// Without remote_linker, the daemon ships its own linkd-lld with the
// shared objects its zygote runs with and their loader: a worker whose
// image has no linkd runs it (uploaded once, then found in the CAS).
TEST_F(ReapiExecutorTest, TheShippedLinkerNeedsNothingInTheWorkerImage) {
  std::string url = startServer();
  stockReference();
  std::string a = worker("a", "", executor(url, ""));
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  EXPECT_TRUE(sameBytes("ref", "outA"));
  EXPECT_EQ(run("./outA").out, "42\n");
  auto sa = stats(a);
  EXPECT_EQ(sa["farm_offloaded"], 1);
  EXPECT_EQ(sa["farm_fallbacks"], 0);
  EXPECT_GE(workerLog("a", "linker=shipped"), 1u);
  // A second client: the linker's files are in the CAS already.
  std::string b = worker("b", "", executor(url, ""));
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  auto sb = stats(b);
  EXPECT_EQ(sb["farm_offloaded"], 1);
  EXPECT_LT(sb["farm_bytes_up"], sa["farm_bytes_up"] / 10);
}

// With the cluster's cache as a tier too, a second worker's run of the same
// link is a hit from it: nothing is linked anywhere.
TEST_F(ReapiExecutorTest, TheSecondWorkerHitsTheClustersCache) {
  std::string url = startServer();
  stockReference();
  std::string exec = executor(url, binPath("linkd-lld"));
  std::string a = worker("a", url, exec), b = worker("b", url, exec);
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  EXPECT_TRUE(sameBytes("ref", "outA"));
  EXPECT_EQ(stats(a)["farm_offloaded"], 1);
  // The result and the manifest: the output is in the CAS already (the
  // action left it there), so it is not written again.
  waitForRemoteWrites(a, 2);
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  auto sb = stats(b);
  EXPECT_EQ(sb["hits"], 1);
  EXPECT_GE(sb["remote_hits"], 3);
  EXPECT_EQ(sb["farm_offloaded"], 0);
}

// Every way the cluster can fail ends in a local link with stock's bytes.
TEST_F(ReapiExecutorTest, FailuresOfTheClusterLinkLocally) {
  std::string url = startServer();
  stockReference();
  struct Case {
    std::string name, linker, logged;
  } cases[] = {
      {"nolinker", "/nonexistent/linkd-lld", "/nonexistent/linkd-lld"},
      // The worker returns other bytes than the runner reported.
      {"wrongbytes",
       wrappedLinker("wrong.sh", "printf X | dd of=out/files/0 bs=1 seek=200 "
                                 "conv=notrunc status=none"),
       "does not match its digest"},
      // The worker's linkd-lld links with another LLD (its result says so).
      {"otherlld",
       wrappedLinker("otherlld.sh", "sed -i 's/LLD 19/LLD 18/' out/result"),
       "links with"},
      // The worker dies mid-action (its process, the server, goes away).
      {"dies", wrappedLinker("dies.sh", "kill -9 $PPID; sleep 5"), "farm="},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    std::string w = worker(c.name, "", executor(url, c.linker));
    ASSERT_TRUE(exitedZero(linkAs(w, "out-" + c.name)));
    EXPECT_TRUE(sameBytes("ref", "out-" + c.name));
    auto s = stats(w);
    EXPECT_EQ(s["farm_offloaded"], 0);
    EXPECT_EQ(s["farm_fallbacks"], 1);
    EXPECT_GE(workerLog(c.name, c.logged), 1u);
    EXPECT_GE(workerLog(c.name, "linking locally"), 1u);
  }
  // The server is gone now: a down cluster costs one failure, then it is
  // skipped for a while.
  std::string d = worker("down", "", executor(url, binPath("linkd-lld")));
  ASSERT_TRUE(exitedZero(linkAs(d, "out-down")));
  EXPECT_TRUE(sameBytes("ref", "out-down"));
  EXPECT_GE(workerLog("down", "not trying again for 10 s"), 1u);
  // Another link (another key) meanwhile is not sent at all.
  ASSERT_TRUE(exitedZero(run("clang-19 -fuse-ld=lld main.o lib.o "
                             "-Wl,--build-id=0x77 -o ref77")));
  RunResult r = run(d + "clang-19 --ld-path=" + binPath("ld.linkd") +
                    " main.o lib.o -Wl,--build-id=0x77 -o out77");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_TRUE(sameBytes("ref77", "out77"));
  EXPECT_EQ(stats(d)["farm_fallbacks"], 2);
  EXPECT_GE(workerLog("down", "failed recently; not trying again yet"), 1u);
}

} // namespace
} // namespace linkd::e2e
