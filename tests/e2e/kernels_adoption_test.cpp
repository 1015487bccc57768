// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Adopting linkd the way GPU and JIT compilers would (docs/kernels.md,
// "Adopting linkd"), through their own code paths: the wheel installed
// offline into a fresh venv of Debian's python3, with no linkd daemon
// installed (a stock LLD links in a private directory) and with one; a
// Python JIT loop on the module; Triton's make_hsaco (two temp files and a
// subprocess of TRITON_HIP_LLD_PATH, pointed at linkd.lld_path()). Outputs
// are compared byte for byte with stock LLD, counters checked.
#include "harness.h"

#include <filesystem>

namespace linkd::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kPython = "/usr/bin/python3";

// N distinct kernels: k<i>.o, each scaling by its own constant.
constexpr std::string_view kKernel = R"(
__attribute__((amdgpu_kernel)) void scale(float *p, float f) {
  p[__builtin_amdgcn_workitem_id_x()] *= f * K;
}
)";

// Triton 3.3's make_hsaco (third_party/amd/backend/compiler.py), as it
// runs: the linker from TRITON_HIP_LLD_PATH, two NamedTemporaryFiles, a
// subprocess; then ours: the module in a loop. Prints the count of outputs
// equal to stock's (k<i>.stock).
constexpr std::string_view kCallers = R"(import os, subprocess, sys, tempfile
import linkd
n, mode = int(sys.argv[1]), sys.argv[2]

def make_hsaco(src):
    lld = os.environ["TRITON_HIP_LLD_PATH"]
    with tempfile.NamedTemporaryFile() as tmp_out:
        with tempfile.NamedTemporaryFile() as tmp_in:
            with open(tmp_in.name, "wb") as fd_in:
                fd_in.write(src)
            subprocess.check_call([lld, "-flavor", "gnu", "-shared",
                                   tmp_in.name, "-o", tmp_out.name])
        with open(tmp_out.name, "rb") as fd_out:
            return fd_out.read()

good = 0
served = {}
for i in range(n):
    obj = open("k%d.o" % i, "rb").read()
    stock = open("k%d.stock" % i, "rb").read()
    if mode == "triton":
        out = make_hsaco(obj)
    else:
        r = linkd.link_result(["-shared", "k.o", "-o", "k.hsaco"],
                              inputs={"k.o": obj})
        assert r.status == linkd.OK, (r.status, r.error, r.diagnostics)
        served[r.served] = served.get(r.served, 0) + 1
        out = r.outputs["k.hsaco"]
    good += out == stock
print(good, " ".join("%s=%d" % kv for kv in sorted(served.items())))
)";

class KernelAdoption : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (access(kPython.c_str(), X_OK) != 0)
      GTEST_SKIP() << "needs python3 (Debian's)";
    writeFile("k.c", kKernel);
    writeFile("callers.py", kCallers);
  }
  void kernels(int n) {
    ASSERT_TRUE(exitedZero(
        run("for i in $(seq 0 " + std::to_string(n - 1) +
            "); do clang-19 --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib "
            "-O2 -DK=$i.5f -c k.c -o k$i.o && /usr/lib/llvm-19/bin/ld.lld "
            "-shared k$i.o -o k$i.stock || exit 1; done")));
  }
  // The wheel, written as `cmake --build build --target wheel` writes it,
  // installed offline into a fresh venv.
  void installWheel() {
    std::string build = binDir() + "/..";
    ASSERT_TRUE(exitedZero(
        run(kPython + " " + LINKD_E2E_SOURCE_DIR +
            "/deploy/wheel/make_wheel.py --version 0.1.0 --module " +
            LINKD_E2E_SOURCE_DIR + "/client/liblinkd/python/linkd --library " +
            build + "/lib/liblinkd.so.1 --client " + binPath("ld.linkd") +
            " --license " + LINKD_E2E_SOURCE_DIR + "/LICENSE --out dist")));
    RunResult v = run(kPython + " -m venv v && v/bin/pip install -q "
                                "--no-index --no-cache-dir dist/linkd-*.whl",
                      300s);
    ASSERT_TRUE(exitedZero(v));
  }
  // A shell prefix: the venv's python with no linkd installed anywhere it
  // looks (PATH holds stock LLD's directory only, or `path`).
  std::string noLinkd(const std::string &path) {
    return "env -u LINKD_BIN PATH=" + path + " TMPDIR=" + this->path("tmp") +
           " ";
  }
};

TEST_F(KernelAdoption, WheelInAFreshVenv) {
  kernels(4);
  installWheel();
  fs::create_directories(path("tmp"));
  // What the wheel holds and needs.
  RunResult info = run("v/bin/python -c 'import linkd, os; "
                       "print(os.path.dirname(linkd.__file__))'");
  ASSERT_TRUE(exitedZero(info));
  std::string pkg = info.out.substr(0, info.out.size() - 1);
  EXPECT_TRUE(fs::exists(pkg + "/liblinkd.so.1"));
  RunResult needed =
      run(tools::readelf.path + " -d " + pkg + "/liblinkd.so.1 " + pkg +
          "/bin/ld.linkd | grep NEEDED");
  for (const std::string &line : linesStartingWith(
           replaceAll(needed.out, " 0x0000000000000001 ", ""), "(NEEDED)"))
    EXPECT_TRUE(line.find("[libc.so.6]") != std::string::npos ||
                line.find("[libm.so.6]") != std::string::npos ||
                line.find("[libgcc_s.so.1]") != std::string::npos ||
                line.find("[libstdc++.so.6]") != std::string::npos)
        << line;
  RunResult meta = run("cat v/lib/python3*/site-packages/linkd-0.1.0.dist-info/"
                       "METADATA");
  EXPECT_NE(meta.out.find("License-Expression: Apache-2.0 WITH LLVM-exception"),
            std::string::npos)
      << meta.out;
  EXPECT_TRUE(fs::exists(pkg + "/../linkd-0.1.0.dist-info/licenses/LICENSE"));

  // No daemon installed: stock ld.lld from PATH, in a private directory.
  RunResult jit =
      run(noLinkd("/usr/lib/llvm-19/bin") + "v/bin/python callers.py 4 module");
  ASSERT_TRUE(exitedZero(jit));
  EXPECT_EQ(jit.out, "4 local=4\n");
  EXPECT_EQ(jit.err, "");
  EXPECT_FALSE(daemonStatus()) << "a daemon was started";
  // Triton's make_hsaco with TRITON_HIP_LLD_PATH at the wheel's client.
  RunResult triton =
      run(noLinkd("/usr/lib/llvm-19/bin:/usr/bin:/bin") +
          "TRITON_HIP_LLD_PATH=$(v/bin/python -c 'import linkd; "
          "print(linkd.lld_path())') v/bin/python callers.py 4 triton");
  ASSERT_TRUE(exitedZero(triton));
  EXPECT_EQ(triton.out, "4 \n");
  EXPECT_EQ(triton.err, "");
  // No linker at all: the error names what it looked for; nothing left.
  fs::create_directories(path("empty"));
  writeFile("none.py", R"(import linkd
try:
    linkd.link(["-shared", "k.o", "-o", "k.hsaco"],
               inputs={"k.o": open("k0.o", "rb").read()})
except linkd.NoLinker as e:
    print("NoLinker", e)
)");
  RunResult none = run(noLinkd(path("empty")) + "v/bin/python none.py");
  ASSERT_TRUE(exitedZero(none));
  EXPECT_NE(none.out.find("NoLinker"), std::string::npos) << none.out;
  for (const char *named : {"LINKD_FALLBACK_LINKER", "ld.lld", "lld on PATH"})
    EXPECT_NE(none.out.find(named), std::string::npos) << none.out;
  EXPECT_TRUE(fs::is_empty(path("tmp"))) << "a stray file in TMPDIR";

  // linkd installed (its daemon found on PATH, as the .deb's is): the
  // wheel's module links through it and hits on the second process.
  std::string withLinkd = "PATH=" + binDir() + ":/usr/bin:/bin ";
  RunResult miss = run(withLinkd + "v/bin/python callers.py 4 module");
  ASSERT_TRUE(exitedZero(miss));
  EXPECT_EQ(miss.out, "4 miss=4\n");
  RunResult hit = run(withLinkd + "v/bin/python callers.py 4 module");
  ASSERT_TRUE(exitedZero(hit));
  EXPECT_EQ(hit.out, "4 hit=4\n");
  auto st = cacheStats();
  EXPECT_EQ(st["kernel_hits"], 4);
  EXPECT_EQ(st["kernel_misses"], 4);
  // And Triton's subprocess path through the wheel's client and the daemon.
  RunResult viaDaemon =
      run(withLinkd + "TRITON_HIP_LLD_PATH=$(v/bin/python -c 'import linkd; "
                      "print(linkd.lld_path())') v/bin/python callers.py 4 "
                      "triton");
  ASSERT_TRUE(exitedZero(viaDaemon));
  EXPECT_EQ(viaDaemon.out, "4 \n");
  EXPECT_GE(cacheStats()["misses"] + cacheStats()["hits"], 4);
}

} // namespace
} // namespace linkd::e2e
