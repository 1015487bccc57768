// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// liblinkd end to end (docs/kernels.md): a C driver (kernels/klink.c),
// compiled here against the built library, links kernels compiled here by
// clang-19 from memory through the daemon's blob socket; outputs are
// compared byte for byte with stock LLD, run where they can be (dlopen, Node),
// and the daemon's kernel_* counters checked. Also the Python module.
#include "harness.h"

#include <filesystem>

namespace linkd::e2e {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kKernel = R"(
#ifndef K
#define K 1
#endif
__attribute__((amdgpu_kernel)) void scale(float *p, float f) {
  p[__builtin_amdgcn_workitem_id_x()] *= f * K;
}
)";

class KernelLibrary : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    std::string lib = binDir() + "/../lib";
    ASSERT_TRUE(fs::exists(lib + "/liblinkd.so")) << "build linkd_shared";
    ASSERT_TRUE(
        exitedZero(run("clang-19 -O1 -I" + std::string(LINKD_E2E_SOURCE_DIR) +
                       "/include " + LINKD_E2E_SOURCE_DIR +
                       "/tests/e2e/kernels/klink.c -o "
                       "klink -L" +
                       lib + " -llinkd -Wl,-rpath," + lib + " -lpthread")));
    report = path("report.txt");
  }
  void amdgpu(const std::string &obj, const std::string &cpu,
              const std::string &defines = "") {
    writeFile("k.c", kKernel);
    ASSERT_TRUE(
        exitedZero(run("clang-19 --target=amdgcn-amd-amdhsa -mcpu=" + cpu +
                       " -nogpulib -O2 " + defines + " -c k.c -o " + obj)));
  }
  // ./klink with the report file; returns its last report line.
  RunResult klink(const std::string &args, const std::string &env = "") {
    return run(env + " KLINK_REPORT=" + report + " ./klink " + args);
  }
  std::string lastReport() {
    std::string all = readFile("report.txt");
    if (all.empty())
      return "";
    all.pop_back();
    return all.substr(all.rfind('\n') + 1);
  }
  std::string report;
};

TEST_F(KernelLibrary, AmdgpuByteIdenticalToStock) {
  for (const std::string cpu : {"gfx90a", "gfx1100"}) {
    amdgpu("a.o", cpu);
    amdgpu("b.o", cpu, "-DK=2 -Dscale=scale2");
    ASSERT_TRUE(exitedZero(run("/usr/lib/llvm-19/bin/lld -flavor gnu -shared "
                               "--no-undefined a.o -o one.stock")));
    ASSERT_TRUE(exitedZero(run("/usr/lib/llvm-19/bin/ld.lld -shared "
                               "--no-undefined a.o b.o -o two.stock")));
    fs::create_directories(path("out"));
    ASSERT_TRUE(exitedZero(klink("--out out --tool lld --in a.o=a.o -- -flavor "
                                 "gnu -shared --no-undefined a.o -o one")));
    EXPECT_TRUE(sameBytes("one.stock", "out/one")) << cpu;
    ASSERT_TRUE(exitedZero(klink("--out out --in a.o=a.o --in b.o=b.o -- "
                                 "-shared --no-undefined a.o b.o -o two")));
    EXPECT_TRUE(sameBytes("two.stock", "out/two")) << cpu;
    RunResult n1 = run(tools::readelf.path + " --notes out/two");
    RunResult n2 = run(tools::readelf.path + " --notes two.stock");
    EXPECT_EQ(n1.out, n2.out);
    EXPECT_NE(n1.out.find("scale2.kd"), std::string::npos);
  }
  // An error of LLD's: its message, its status, no output.
  amdgpu("a.o", "gfx90a");
  RunResult stock =
      run("/usr/lib/llvm-19/bin/ld.lld -shared a.o missing.o -o x");
  RunResult mine =
      klink("--out out --in a.o=a.o -- -shared a.o missing.o -o x");
  EXPECT_NE(stock.exitCode, 0);
  EXPECT_EQ(mine.exitCode, stock.exitCode);
  EXPECT_EQ(mine.err, stock.err);
  EXPECT_FALSE(exists("out/x"));
}

TEST_F(KernelLibrary, CpuKernelIsDlopenedAndCalled) {
  writeFile("kern.c", "int kernel_add(int a, int b) { return a + b + 100; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c kern.c -o kern.o")));
  ASSERT_TRUE(
      exitedZero(klink("--in kern.o=kern.o -- -shared kern.o -o kern.so")));
  ASSERT_TRUE(exitedZero(
      run("/usr/lib/llvm-19/bin/ld.lld -shared kern.o -o kern.stock")));
  EXPECT_TRUE(sameBytes("kern.stock", "kern.so"));
  writeFile("host.c", R"(#include <dlfcn.h>
#include <stdio.h>
int main(void) {
  void *h = dlopen("./kern.so", RTLD_NOW);
  if (!h) { puts(dlerror()); return 1; }
  int (*f)(int, int) = (int (*)(int, int))dlsym(h, "kernel_add");
  printf("%d\n", f(20, 3));
  return 0;
}
)");
  ASSERT_TRUE(exitedZero(run("clang-19 host.c -o host -ldl")));
  RunResult r = run("./host");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "123\n");
}

// A library the argv finds on the daemon's file system (-L, -l) is read
// there, as in a normal link; the result is right and not stored (the key
// names only the inputs), so the next call links again.
TEST_F(KernelLibrary, DaemonFilesAreReadButNotCached) {
  writeFile(
      "kern.c",
      "int helper(int);\nint kernel_run(int a) { return helper(a) * 2; }\n");
  writeFile("helper.c", "int helper(int a) { return a + 1; }\n");
  ASSERT_TRUE(
      exitedZero(run("clang-19 -O2 -fPIC -c kern.c helper.c && mkdir -p "
                     "libs && llvm-ar-19 rc libs/libhelper.a helper.o")));
  std::string args =
      "-shared kern.o -L" + path("libs") + " -lhelper -o kern.so";
  ASSERT_TRUE(exitedZero(run("/usr/lib/llvm-19/bin/ld.lld " + args +
                             " && mv kern.so kern.stock")));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(exitedZero(klink("--in kern.o=kern.o -- " + args)));
    EXPECT_TRUE(sameBytes("kern.stock", "kern.so"));
    EXPECT_NE(lastReport().find("hit=0 local=0"), std::string::npos)
        << lastReport();
  }
  auto st = cacheStats();
  EXPECT_EQ(st["kernel_uncacheable"], 2);
  EXPECT_EQ(st["kernel_hits"], 0);
}

TEST_F(KernelLibrary, WasmModuleRunsInNode) {
  ASSERT_TRUE(haveTool(tools::node));
  writeFile("m.c", "int mul(int a, int b) { return a * b; }\n");
  ASSERT_TRUE(
      exitedZero(run("clang-19 --target=wasm32 -nostdlib -O2 -c m.c -o m.o")));
  // wasm-ld names the module after its output: the same name for both.
  ASSERT_TRUE(
      exitedZero(run("/usr/lib/llvm-19/bin/wasm-ld --no-entry "
                     "--export-all m.o -o m.wasm && mv m.wasm m.stock")));
  ASSERT_TRUE(exitedZero(klink("--tool wasm-ld --in m.o=m.o -- --no-entry "
                               "--export-all m.o -o m.wasm")));
  EXPECT_TRUE(sameBytes("m.stock", "m.wasm"));
  writeFile(
      "run.js",
      "const fs = require('fs');\n"
      "WebAssembly.instantiate(fs.readFileSync('m.wasm'))"
      ".then(({instance}) => console.log(instance.exports.mul(6, 7)));\n");
  RunResult r = run(tools::node.path + " run.js");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "42\n");
}

TEST_F(KernelLibrary, SixteenThreadsSixtyFourKernels) {
  setenv("LINKD_JOBS", "4", 1);
  std::string compile;
  writeFile("k.c", kKernel);
  for (int i = 0; i < 64; ++i)
    compile += "clang-19 --target=amdgcn-amd-amdhsa -mcpu=gfx90a -nogpulib -O2 "
               "-DK=" +
               std::to_string(i + 1) + " -c k.c -o k" + std::to_string(i) +
               ".o && /usr/lib/llvm-19/bin/ld.lld -shared "
               "k" +
               std::to_string(i) + ".o -o k" + std::to_string(i) + ".stock && ";
  ASSERT_TRUE(exitedZero(run(compile + "true", 300s)));
  fs::create_directories(path("out"));
  ASSERT_TRUE(exitedZero(run("./klink --threads 16 --each 4 --out out "
                             "--in k%d.o=k%d.o -- -shared k%d.o -o k%d.hsaco",
                             300s)));
  for (int i = 0; i < 64; ++i)
    EXPECT_TRUE(sameBytes("k" + std::to_string(i) + ".stock",
                          "out/k" + std::to_string(i) + ".hsaco"));
  auto st = cacheStats();
  EXPECT_EQ(st["kernel_links"], 64);
  EXPECT_EQ(st["kernel_misses"], 64);
  EXPECT_GE(st["kernel_peak_concurrent"], 2) << "links ran one at a time";
  unsetenv("LINKD_JOBS");
}

TEST_F(KernelLibrary, ForkedChildLinks) {
  amdgpu("a.o", "gfx90a");
  ASSERT_TRUE(
      exitedZero(run("/usr/lib/llvm-19/bin/ld.lld -shared a.o -o a.stock")));
  RunResult r =
      klink("--fork --no-cache --in a.o=a.o -- -shared a.o -o a.hsaco");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_TRUE(sameBytes("a.stock", "a.hsaco"));
  std::string all = readFile("report.txt");
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 2) << all;
  EXPECT_EQ(all.find("local=1"), std::string::npos) << all;
}

TEST_F(KernelLibrary, MalformedInputThenTheNextLink) {
  // An ELF header, then noise.
  ASSERT_TRUE(
      exitedZero(run("printf '\\177ELF\\002\\001\\001' > bad.o && head -c 300 "
                     "/dev/urandom >> bad.o")));
  RunResult stock = run("/usr/lib/llvm-19/bin/ld.lld -shared bad.o -o bad.so");
  RunResult mine = klink("--in bad.o=bad.o -- -shared bad.o -o bad.so");
  EXPECT_NE(stock.exitCode, 0);
  EXPECT_EQ(mine.exitCode, stock.exitCode) << describe(mine);
  EXPECT_EQ(mine.err, stock.err);
  EXPECT_NE(mine.err.find("bad.o"), std::string::npos);
  EXPECT_NE(lastReport().find("local=0"), std::string::npos) << lastReport();
  amdgpu("a.o", "gfx90a");
  ASSERT_TRUE(
      exitedZero(run("/usr/lib/llvm-19/bin/ld.lld -shared a.o -o a.stock")));
  ASSERT_TRUE(exitedZero(klink("--in a.o=a.o -- -shared a.o -o a.hsaco")));
  EXPECT_TRUE(sameBytes("a.stock", "a.hsaco"));
  EXPECT_NE(lastReport().find("local=0"), std::string::npos) << lastReport();
}

TEST_F(KernelLibrary, NoDaemonLinksInAChildProcess) {
  amdgpu("a.o", "gfx90a");
  ASSERT_TRUE(exitedZero(run("/usr/lib/llvm-19/bin/ld.lld -shared "
                             "--no-undefined a.o -o a.stock")));
  ASSERT_TRUE(
      exitedZero(klink("--in a.o=a.o -- -shared --no-undefined a.o -o a.hsaco",
                       "LINKD_BIN=/bin/false")));
  EXPECT_TRUE(sameBytes("a.stock", "a.hsaco"));
  EXPECT_NE(lastReport().find("local=1"), std::string::npos) << lastReport();
  EXPECT_FALSE(daemonStatus()) << "a daemon was started";
  // LLD's diagnostics from the child, too.
  RunResult stock = run("/usr/lib/llvm-19/bin/ld.lld -shared a.o nope.o -o x");
  RunResult mine =
      klink("--in a.o=a.o -- -shared a.o nope.o -o x", "LINKD_BIN=/bin/false");
  EXPECT_EQ(mine.exitCode, stock.exitCode);
  EXPECT_EQ(mine.err, stock.err);
}

TEST_F(KernelLibrary, SecondProcessHitsWithoutUpload) {
  amdgpu("a.o", "gfx90a");
  ASSERT_TRUE(exitedZero(klink("--in k.o=a.o -- -shared k.o -o k.hsaco")));
  EXPECT_NE(lastReport().find("hit=0 local=0 uploaded=1"), std::string::npos)
      << lastReport();
  ASSERT_TRUE(exitedZero(run("mv k.hsaco first.hsaco")));
  ASSERT_TRUE(exitedZero(klink("--in k.o=a.o -- -shared k.o -o k.hsaco")));
  EXPECT_NE(lastReport().find("hit=1 local=0 uploaded=0"), std::string::npos)
      << lastReport();
  EXPECT_TRUE(sameBytes("first.hsaco", "k.hsaco"));
  auto st = cacheStats();
  EXPECT_EQ(st["kernel_hits"], 1);
  EXPECT_EQ(st["kernel_misses"], 1);
  EXPECT_EQ(st["kernel_blobs_uploaded"], 1);
  // Another name for the same bytes is another request (names are part of
  // it), but the content is already there: no upload.
  ASSERT_TRUE(
      exitedZero(klink("--in other.o=a.o -- -shared other.o -o o.hsaco")));
  EXPECT_NE(lastReport().find("hit=0 local=0 uploaded=0"), std::string::npos)
      << lastReport();
  EXPECT_TRUE(sameBytes("first.hsaco", "o.hsaco"));
}

// The second process asks the moment the first has its answer, while the
// daemon is still writing the result to its store: a hit all the same.
TEST_F(KernelLibrary, BackToBackProcessesHit) {
  for (int i = 0; i < 5; ++i) {
    amdgpu("a.o", "gfx1100", "-DK=" + std::to_string(i + 2));
    std::string link = " ./klink --in k.o=a.o -- -shared k.o -o k.hsaco";
    ASSERT_TRUE(exitedZero(run("KLINK_REPORT=" + report + link +
                               " && KLINK_REPORT=" + report + link)));
    EXPECT_NE(lastReport().find("hit=1 local=0 uploaded=0"), std::string::npos)
        << readFile("report.txt");
  }
}

TEST_F(KernelLibrary, PythonModule) {
  if (access("/usr/bin/python3", X_OK) != 0)
    GTEST_SKIP() << "python3 is not installed";
  amdgpu("a.o", "gfx90a");
  ASSERT_TRUE(
      exitedZero(run("/usr/lib/llvm-19/bin/ld.lld -shared a.o -o a.stock")));
  writeFile("t.py", R"(import sys
import linkd
obj = open("a.o", "rb").read()
out = linkd.link(["-shared", "k.o", "-o", "k.hsaco"], inputs={"k.o": obj})
assert out["k.hsaco"] == open("a.stock", "rb").read(), "bytes differ"
try:
    linkd.link(["-shared", "k.o", "missing.o", "-o", "x"], inputs={"k.o": obj})
    sys.exit("no LinkError")
except linkd.LinkError as e:
    assert e.exit_code == 1, e.exit_code
    assert "missing.o" in e.diagnostics, e.diagnostics
h = linkd.health()
assert h["lld_version"].startswith("Debian LLD 19"), h
print("ok", linkd.version())
)");
  RunResult r = run("PYTHONPATH=" + binDir() + "/../lib/python python3 t.py");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out.substr(0, 3), "ok ");
}

} // namespace
} // namespace linkd::e2e
