// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Rewriting through the daemon: `--linkd-rewrite=SPEC` on a link, the
// rewritten-object cache behind it, the local fallback, and `linkd rewrite`
// through the Rewrite RPC. The reference is always stock LLD linking objects
// rewritten by `linkd-lld rewrite` (the CLI, no daemon): same bytes.
#include "harness.h"

#include <thread>

namespace linkd::e2e {
namespace {

class LinkRewrite : public E2eTest {
protected:
  std::map<std::string, long long> stats() { return cacheStats(); }

  // A runtime with private state (a global, a static, a helper) behind
  // halide_ entry points, and a kernel that uses it.
  void writeProgram(int kernelValue) {
    writeFile("rt.c", R"(static int calls;
int shared_state = 0;
int helper(int x) { return x + shared_state; }
void halide_set(int v) { shared_state = v; ++calls; }
int halide_get(void) { return helper(0); }
int halide_calls(void) { return calls; }
)");
    writeFile("k.c", "int halide_get(void);\nvoid halide_set(int);\n"
                     "int kernel_a(void) { halide_set(" +
                         std::to_string(kernelValue) +
                         "); return halide_get(); }\n");
    writeFile("main.c", R"(int kernel_a(void);
int rtA_get(void);
int rtA_calls(void);
/* The program's own state with the runtime's names: must not merge. */
int shared_state = 100;
int helper(int x) { return -x; }
int main(void) {
  int k = kernel_a();
  return k == rtA_get() && rtA_calls() == 1 && shared_state == 100 &&
                 helper(1) == -1 ? k : 255;
}
)");
    writeFile("spec.txt", "# runtime A\nmatch = halide_\nexport-prefix = "
                          "rtA_\ninternal-prefix = rtAi_\nruntime = rt.o\n"
                          "kernel = k.o\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -O1 -c rt.c k.c main.c")));
  }

  // The stock reference: the CLI rewrite, then ld.lld on its outputs.
  void linkReference(const std::string &out) {
    ASSERT_TRUE(exitedZero(
        run(binPath("linkd-lld") +
            " rewrite --match halide_ --export-prefix rtA_ --internal-prefix "
            "rtAi_ --runtime rt.o --kernel k.o --out-dir ref && "
            "clang-19 --ld-path=" +
            tools::ldLld.path + " main.o ref/rt.o ref/k.o -o " + out)));
  }

  std::string linkCommand(const std::string &out) {
    return "clang-19 --ld-path=" + binPath("ld.linkd") +
           " -Wl,--linkd-rewrite=spec.txt main.o rt.o k.o -o " + out;
  }
};

TEST_F(LinkRewrite, StockBytesAndRewrittenInputsComeFromTheCache) {
  writeProgram(7);
  linkReference("stock");
  RunResult first = run(linkCommand("p"));
  ASSERT_TRUE(exitedZero(first));
  EXPECT_TRUE(sameBytes("stock", "p"));
  EXPECT_EQ(run("./p").exitCode, 7);
  waitForStat("rewrites_stored", 2);
  EXPECT_EQ(stats()["rewrites_cached"], 0);

  // The same link again: a hit of the whole link, nothing rewritten.
  ASSERT_TRUE(exitedZero(run("rm p && " + linkCommand("p"))));
  EXPECT_TRUE(sameBytes("stock", "p"));
  EXPECT_EQ(stats()["hits"], 1);

  // A kernel change: the link misses, the runtime's rewritten form is
  // reused, the kernel's is made and stored.
  writeProgram(9);
  linkReference("stock9");
  ASSERT_TRUE(exitedZero(run(linkCommand("p9"))));
  EXPECT_TRUE(sameBytes("stock9", "p9"));
  EXPECT_EQ(run("./p9").exitCode, 9);
  waitForStat("rewrites_stored", 3);
  auto s = stats();
  EXPECT_EQ(s["rewrites_cached"], 1);
  EXPECT_EQ(s["rewrites_stored"], 3);

  // A spec change (another prefix) is a miss of the link: the program
  // now names symbols the runtime no longer exports.
  writeFile("spec.txt", "match = halide_\nexport-prefix = rtB_\n"
                        "internal-prefix = rtBi_\nruntime = rt.o\n"
                        "kernel = k.o\n");
  RunResult changed = run(linkCommand("pB"));
  EXPECT_NE(changed.exitCode, 0);
  EXPECT_NE(changed.err.find("undefined symbol: rtA_get"), std::string::npos)
      << changed.err;
}

TEST_F(LinkRewrite, LocalFallbackGivesTheSameBytes) {
  writeProgram(5);
  linkReference("stock");
  ASSERT_TRUE(exitedZero(run("LINKD_DISABLE=1 " + linkCommand("p"))));
  EXPECT_TRUE(sameBytes("stock", "p"));
  EXPECT_EQ(run("./p").exitCode, 5);
}

TEST_F(LinkRewrite, NoCacheLeavesTheRewrittenObjectCacheAlone) {
  writeProgram(8);
  linkReference("stock");
  ASSERT_TRUE(
      exitedZero(run(replaceAll(linkCommand("p"), "-Wl,--linkd-rewrite",
                                "-Wl,--linkd-no-cache -Wl,--linkd-rewrite"))));
  EXPECT_TRUE(sameBytes("stock", "p"));
  // Time for anything stored after the answer; then a cached link must
  // find nothing rewritten before it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(stats()["rewrites_stored"], 0);
  ASSERT_TRUE(exitedZero(run(linkCommand("p2"))));
  waitForStat("rewrites_stored", 2);
  auto s = stats();
  EXPECT_EQ(s["cache_disabled"], 1);
  EXPECT_EQ(s["rewrites_cached"], 0);
}

TEST_F(LinkRewrite, DiagnosticsNameTheUsersFiles) {
  writeProgram(3);
  writeFile("k.c", "int halide_get(void);\nint missing_fn(void);\n"
                   "int kernel_a(void) { return halide_get() + "
                   "missing_fn(); }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O1 -c k.c")));
  RunResult r = run(linkCommand("p"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("undefined symbol: missing_fn"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(">>>               k.o:(kernel_a)"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("/proc/self"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("rewrite."), std::string::npos) << r.err;
  EXPECT_FALSE(exists("p"));
}

TEST_F(LinkRewrite, BadSpecsAreClearErrorsAndTheDaemonKeepsServing) {
  writeProgram(4);
  writeFile("spec.txt", "match = halide_\nruntime = rt.o\nprefix = x_\n");
  RunResult viaDaemon = run(linkCommand("p"));
  EXPECT_EQ(viaDaemon.exitCode, 1);
  std::string expected =
      "linkd: error: link-time rewriting: " + path("spec.txt") +
      ":3: unknown key 'prefix'";
  EXPECT_NE(viaDaemon.err.find(expected), std::string::npos) << viaDaemon.err;
  RunResult local = run("LINKD_DISABLE=1 " + linkCommand("p"));
  EXPECT_EQ(local.exitCode, 1);
  EXPECT_EQ(local.err, viaDaemon.err);

  writeFile("spec.txt", "match = halide_\nexport-prefix = rtA_\n"
                        "runtime = nonexistent.o\n");
  RunResult missing = run(linkCommand("p"));
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.err.find("nonexistent.o"), std::string::npos)
      << missing.err;

  writeFile("bad.o", "not an object at all, just text\n");
  writeFile("spec.txt", "match = halide_\nexport-prefix = rtA_\n"
                        "runtime = bad.o\n");
  RunResult corrupt = run(linkCommand("p"));
  EXPECT_EQ(corrupt.exitCode, 1);
  EXPECT_NE(corrupt.err.find("bad.o"), std::string::npos) << corrupt.err;
  EXPECT_FALSE(exists("p"));

  auto before = daemonStatus();
  ASSERT_TRUE(before);
  writeProgram(4);
  ASSERT_TRUE(exitedZero(run(linkCommand("p"))));
  EXPECT_EQ(run("./p").exitCode, 4);
  auto after = daemonStatus();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->pid, before->pid);
}

TEST_F(LinkRewrite, RewriteCommandRunsInTheDaemonAndIsCached) {
  writeProgram(6);
  std::string args = " rewrite --match halide_ --export-prefix rtA_ "
                     "--internal-prefix rtAi_ --runtime rt.o --kernel k.o "
                     "--out-dir ";
  ASSERT_TRUE(exitedZero(
      run("mkdir viaD local && " + binPath("linkd-lld") + args + "local")));
  ASSERT_TRUE(exitedZero(run(linkCommand("p")))); // starts the daemon
  long long before = stats()["requests"];
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(exitedZero(run(binPath("linkd") + args + "viaD")));
  auto s = stats();
  EXPECT_EQ(s["requests"], before + 2) << "not through the daemon";
  EXPECT_EQ(s["hits"], 1);
  EXPECT_TRUE(sameBytes("local/rt.o", "viaD/rt.o"));
  EXPECT_TRUE(sameBytes("local/k.o", "viaD/k.o"));
  RunResult bad = run(binPath("linkd") + " rewrite --runtime nope.o "
                                         "--out-dir viaD");
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_NE(bad.err.find("nope.o"), std::string::npos) << bad.err;
}

} // namespace
} // namespace linkd::e2e

namespace linkd::e2e {
namespace {

// Two namespaced copies of one runtime in one link, each with its kernel
// (Halide: two pipelines, each with its own runtime): two specs, each
// rewriting its own files. Both copies keep their own state; the bytes
// are stock LLD's on the objects two `linkd rewrite` runs write; a repeat
// is a hit; a file named by both specs is refused.
class TwoRewriteSpecs : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    writeFile("rt.c", R"(static int calls;
int shared_state = 0;
int helper(int x) { return x + shared_state; }
void halide_set(int v) { shared_state = v; ++calls; }
int halide_get(void) { return helper(0); }
int halide_calls(void) { return calls; }
)");
    for (const char *c : {"a", "b"})
      writeFile(std::string("k_") + c + ".c",
                std::string("int halide_get(void);\nvoid halide_set(int);\n"
                            "int kernel_") +
                    c + "(int v) { halide_set(v); return halide_get(); }\n");
    writeFile("main.c", R"(int kernel_a(int), kernel_b(int);
int rtA_get(void), rtB_get(void), rtA_calls(void), rtB_calls(void);
int main(void) {
  int a = kernel_a(3), b = kernel_b(4);
  int a2 = kernel_a(5);
  /* Each copy saw only its own kernel's calls. */
  return a == 3 && b == 4 && a2 == 5 && rtA_get() == 5 && rtB_get() == 4 &&
                 rtA_calls() == 2 && rtB_calls() == 1 ? 42 : 1;
}
)");
    // Each copy of the runtime is a file of its own (LLD reads a file in
    // one rewritten form).
    ASSERT_TRUE(exitedZero(run("clang-19 -O1 -c rt.c k_a.c k_b.c main.c && "
                               "cp rt.o rt_a.o && cp rt.o rt_b.o")));
    writeFile("a.spec", "match = halide_\nexport-prefix = rtA_\n"
                        "internal-prefix = rtAi_\nruntime = rt_a.o\n"
                        "kernel = k_a.o\n");
    writeFile("b.spec", "match = halide_\nexport-prefix = rtB_\n"
                        "internal-prefix = rtBi_\nruntime = rt_b.o\n"
                        "kernel = k_b.o\n");
    ASSERT_TRUE(exitedZero(
        run(binPath("linkd-lld") +
            " rewrite --match halide_ --export-prefix rtA_ --internal-prefix "
            "rtAi_ --runtime rt_a.o --kernel k_a.o --out-dir A && " +
            binPath("linkd-lld") +
            " rewrite --match halide_ --export-prefix rtB_ --internal-prefix "
            "rtBi_ --runtime rt_b.o --kernel k_b.o --out-dir B && clang-19 "
            "--ld-path=" +
            tools::ldLld.path +
            " main.o A/rt_a.o A/k_a.o B/rt_b.o B/k_b.o -o " + "stock")));
  }

  std::string link(const std::string &out, const std::string &extra = "") {
    return "clang-19 --ld-path=" + binPath("ld.linkd") +
           " -Wl,--linkd-rewrite=a.spec -Wl,--linkd-rewrite=b.spec " + extra +
           " main.o rt_a.o k_a.o rt_b.o k_b.o -o " + out;
  }
};

TEST_F(TwoRewriteSpecs, BothCopiesStayIndependentAndMatchStock) {
  ASSERT_EQ(run("./stock").exitCode, 42);
  RunResult first = run(link("p"));
  ASSERT_TRUE(exitedZero(first));
  EXPECT_TRUE(sameBytes("stock", "p"));
  EXPECT_EQ(run("./p").exitCode, 42);
  // Four rewritten objects (two per spec) went to the store.
  waitForStat("rewrites_stored", 4);
  EXPECT_EQ(cacheStats()["rewrites_stored"], 4);

  // The same link again: a hit of the whole link.
  ASSERT_TRUE(exitedZero(run("rm p && " + link("p"))));
  EXPECT_TRUE(sameBytes("stock", "p"));
  EXPECT_EQ(cacheStats()["hits"], 1);

  // A change to the second spec alone misses (the key covers every spec);
  // the first spec's objects come from the rewritten-object cache.
  writeFile("b.spec", "match = halide_\nexport-prefix = rtB_\n"
                      "internal-prefix = rtBj_\nruntime = rt_b.o\n"
                      "kernel = k_b.o\n");
  ASSERT_TRUE(exitedZero(run(link("p2"))));
  EXPECT_EQ(run("./p2").exitCode, 42);
  auto s = cacheStats();
  EXPECT_EQ(s["hits"], 1);
  EXPECT_EQ(s["rewrites_cached"], 2);

  // Without a daemon: the same bytes.
  writeFile("b.spec", "match = halide_\nexport-prefix = rtB_\n"
                      "internal-prefix = rtBi_\nruntime = rt_b.o\n"
                      "kernel = k_b.o\n");
  ASSERT_TRUE(exitedZero(run("LINKD_DISABLE=1 " + link("local"))));
  EXPECT_TRUE(sameBytes("stock", "local"));
}

TEST_F(TwoRewriteSpecs, AFileNamedByBothSpecsIsRefused) {
  writeFile("b.spec", "match = halide_\nexport-prefix = rtB_\n"
                      "internal-prefix = rtBi_\nruntime = rt_a.o\n"
                      "kernel = k_b.o\n");
  for (const char *prefix : {"", "LINKD_DISABLE=1 "}) {
    RunResult r = run(prefix + link("p"));
    EXPECT_EQ(r.exitCode, 1) << prefix;
    EXPECT_NE(r.err.find("rt_a.o: an input of two rewrite specs"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(exists("p"));
  }
}

} // namespace
} // namespace linkd::e2e
