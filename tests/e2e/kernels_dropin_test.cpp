// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The client as a drop-in for LLD's generic driver, the way GPU and JIT
// compilers call it (docs/kernels.md): `lld -flavor gnu ...` and
// `ld.lld -flavor gnu ...` through a PATH symlink, for AMDGPU code objects
// compiled here by clang-19, compared byte for byte (and with
// `llvm-readelf --notes`) with stock /usr/lib/llvm-19/bin/lld; and the
// generic driver's own diagnostics and exit status for a missing or unknown
// flavor, through the daemon and in the local fallback.
#include "harness.h"

#include <filesystem>

namespace linkd::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kStockLld = "/usr/lib/llvm-19/bin/lld";

constexpr std::string_view kKernelA = R"(
__attribute__((amdgpu_kernel)) void scale(float *p, float f) {
  p[__builtin_amdgcn_workitem_id_x()] *= f;
}
)";
constexpr std::string_view kKernelB = R"(
extern __attribute__((visibility("hidden"))) int helper(int);
__attribute__((amdgpu_kernel)) void add_one(int *p) {
  p[__builtin_amdgcn_workitem_id_x()] = helper(p[0]);
}
)";
constexpr std::string_view kHelper = R"(
__attribute__((visibility("hidden"))) int helper(int x) { return x + 1; }
)";

class KernelDropIn : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    fs::create_directories(path("bin"));
    fs::create_directories(path("stock"));
    for (const char *name : {"lld", "ld.lld"})
      fs::create_symlink(binPath("ld.linkd"), path("bin/") + name);
    // The stock pair, reached through PATH as well (same argv[0]).
    fs::create_symlink(kStockLld, path("stock/lld"));
    fs::create_symlink(kStockLld, path("stock/ld.lld"));
  }
  // linkd's `lld`/`ld.lld` first on PATH, or stock's.
  LinkerPair throughPath(const std::string &tool) {
    return {"PATH=" + path("bin") + ":$PATH " + tool,
            "PATH=" + path("stock") + ":$PATH " + tool};
  }
  void compile(std::string_view name, std::string_view src,
               const std::string &cpu) {
    std::string c = std::string(name) + ".c";
    writeFile(c, src);
    ASSERT_TRUE(exitedZero(
        run("clang-19 --target=amdgcn-amd-amdhsa -mcpu=" + cpu +
            " -nogpulib -O2 -c " + c + " -o " + std::string(name) + ".o")));
  }
  // `llvm-readelf --notes` of both outputs, the same and naming `kernel`.
  void sameNotes(const std::string &out, const std::string &kernel) {
    RunResult a = run(tools::readelf.path + " --notes " + out);
    RunResult b = run(tools::readelf.path + " --notes " + out + ".stock");
    ASSERT_TRUE(exitedZero(a));
    ASSERT_TRUE(exitedZero(b));
    EXPECT_EQ(a.out, b.out);
    EXPECT_NE(a.out.find(".symbol:         " + kernel + ".kd"),
              std::string::npos)
        << a.out;
  }
};

TEST_F(KernelDropIn, GenericDriverDiagnostics) {
  for (const std::string args :
       {"", "-flavor", "-flavor foo", "-flavor elf x.o",
        "--version -flavor gnu", "-flavor gnu", "-flavor gnu missing.o"}) {
    EXPECT_TRUE(sameDiagnostics(throughPath("lld"), args))
        << "[" << args << "]";
    EXPECT_TRUE(
        sameDiagnostics(throughPath("ld.lld"), args.empty() ? "x.o" : args))
        << "[" << args << "]";
  }
  // Accepted flavors, any case, print what the chosen driver prints.
  for (const char *args :
       {"-flavor gnu --version", "-flavor GNU --version",
        "-flavor ld --version", "-flavor wasm --version",
        "-flavor darwin --version", "-flavor link --version"}) {
    RunResult a = run(throughPath("lld").linkd + " " + args);
    RunResult b = run(throughPath("lld").stock + " " + args);
    EXPECT_EQ(a.exitCode, b.exitCode) << args << describe(a);
    EXPECT_EQ(a.out, b.out) << args;
    EXPECT_EQ(a.err, b.err) << args;
  }
}

TEST_F(KernelDropIn, GenericDriverDiagnosticsWithoutDaemon) {
  setenv("LINKD_DISABLE", "1", 1);
  compile("a", kKernelA, "gfx90a");
  for (const char *args :
       {"", "-flavor", "-flavor foo", "-flavor gnu missing.o"})
    EXPECT_TRUE(sameDiagnostics(throughPath("lld"), args))
        << "[" << args << "]";
  EXPECT_TRUE(linkBoth(throughPath("lld"),
                       "{ld} -flavor gnu -shared --no-undefined a.o -o a.hsaco",
                       {"a.hsaco"}, /*throughDaemon=*/false));
  unsetenv("LINKD_DISABLE");
}

TEST_F(KernelDropIn, AmdgpuOneObject) {
  if (!haveTool(tools::readelf))
    GTEST_SKIP() << haveTool(tools::readelf).message();
  for (const std::string cpu : {"gfx90a", "gfx1100"}) {
    compile("a_" + cpu, kKernelA, cpu);
    for (const std::string tool : {"lld", "ld.lld"}) {
      std::string out = "a_" + cpu + "_" + tool + ".hsaco";
      ASSERT_TRUE(linkBoth(throughPath(tool),
                           "{ld} -flavor gnu -shared --no-undefined a_" + cpu +
                               ".o -o " + out,
                           {out}));
      sameNotes(out, "scale");
    }
  }
}

TEST_F(KernelDropIn, AmdgpuSeveralObjects) {
  for (const std::string cpu : {"gfx90a", "gfx1100"}) {
    compile("a_" + cpu, kKernelA, cpu);
    compile("b_" + cpu, kKernelB, cpu);
    compile("h_" + cpu, kHelper, cpu);
    std::string out = "ab_" + cpu + ".hsaco";
    ASSERT_TRUE(linkBoth(throughPath("lld"),
                         "{ld} -flavor gnu -shared --no-undefined a_" + cpu +
                             ".o b_" + cpu + ".o h_" + cpu + ".o -o " + out,
                         {out}));
    sameNotes(out, "add_one");
  }
  // An undefined helper: the same error, the same status.
  compile("b", kKernelB, "gfx90a");
  EXPECT_TRUE(sameDiagnostics(
      throughPath("lld"), "-flavor gnu -shared --no-undefined b.o -o b.hsaco"));
}

// Triton's make_hsaco: [lld, '-flavor', 'gnu', '-shared', tmp_in, '-o',
// tmp_out] with two NamedTemporaryFiles, and `ld.lld --version` for its
// cache key. IREE: `lld -flavor gnu -shared kernel-*.o -o kernel-*.hsaco`
// with LLD_VERSION=IREE as the whole environment.
TEST_F(KernelDropIn, TritonAndIreeCommandLines) {
  compile("k", kKernelA, "gfx90a");
  fs::create_directories(path("t"));
  ASSERT_TRUE(exitedZero(run("cp k.o t/tmpa8w3_9qz")));
  ASSERT_TRUE(
      linkBoth(throughPath("lld"),
               "{ld} -flavor gnu -shared t/tmpa8w3_9qz -o t/tmpx1c7d2kp",
               {"t/tmpx1c7d2kp"}));
  RunResult v = run(throughPath("ld.lld").linkd + " --version");
  RunResult vs = run(throughPath("ld.lld").stock + " --version");
  EXPECT_EQ(v.out, vs.out);
  EXPECT_EQ(v.exitCode, 0);

  ASSERT_TRUE(exitedZero(run("cp k.o kernel-5c2f1a.o")));
  std::string env = "env -i LLD_VERSION=IREE LINKD_SOCKET=\"$LINKD_SOCKET\" "
                    "LINKD_STATE_DIR=\"$LINKD_STATE_DIR\" "
                    "LINKD_CACHE_DIR=\"$LINKD_CACHE_DIR\" "
                    "LINKD_CONFIG=\"$LINKD_CONFIG\" ";
  LinkerPair iree{env + path("bin/lld"), env + path("stock/lld")};
  ASSERT_TRUE(linkBoth(iree,
                       "{ld} -flavor gnu -shared kernel-5c2f1a.o -o "
                       "kernel-5c2f1a.hsaco",
                       {"kernel-5c2f1a.hsaco"}));
}

} // namespace
} // namespace linkd::e2e
