// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// liblinkd end to end (docs/kernels.md): a C driver (kernels/klink.c),
// compiled here against the built library, links kernels compiled here by
// clang-19 from memory through the daemon's blob socket; outputs are
// compared byte for byte with stock LLD, run where they can be (dlopen, Node),
// and the daemon's kernel_* counters checked. Also the Python module.
#include "harness.h"

#include <filesystem>
#include <regex>
#include <set>

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
  // a.o, a gfx90a kernel, and a.stock, stock ld.lld's `-shared a.o`.
  void kernelAndStock() {
    amdgpu("a.o", "gfx90a");
    ASSERT_TRUE(
        exitedZero(run("/usr/lib/llvm-19/bin/ld.lld -shared a.o -o a.stock")));
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
  void aloneCopy();
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
  ASSERT_NO_FATAL_FAILURE(kernelAndStock());
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
  EXPECT_NE(lastReport().find("status=LINKD_LINK_FAILED"), std::string::npos)
      << lastReport();
  ASSERT_NO_FATAL_FAILURE(kernelAndStock());
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

// The library a wheel carries: a copy with no linkd binaries beside it
// (no linkd-lld, no daemon to start), and klink built against that copy.
void KernelLibrary::aloneCopy() {
  fs::create_directories(path("alone/lib"));
  ASSERT_TRUE(exitedZero(run("cp -L " + binDir() +
                             "/../lib/liblinkd.so.1 alone/lib/liblinkd.so.1")));
  ASSERT_TRUE(exitedZero(
      run("clang-19 -O1 -I" + std::string(LINKD_E2E_SOURCE_DIR) + "/include " +
          LINKD_E2E_SOURCE_DIR +
          "/tests/e2e/kernels/klink.c -o klink-alone alone/lib/liblinkd.so.1 "
          "-Wl,-rpath," +
          path("alone/lib") + " -lpthread")));
}

// How each call was served, as a status and a served value a caller can
// switch on: miss, hit, not stored (and why), LLD's failure, a refusal
// before linking, a local link.
TEST_F(KernelLibrary, StatusAndServed) {
  amdgpu("a.o", "gfx90a");
  std::string link = "--in k.o=a.o -- -shared k.o -o k.hsaco";
  ASSERT_TRUE(exitedZero(klink(link)));
  EXPECT_NE(lastReport().find("status=LINKD_OK served=2 uncacheable=[] "
                              "names=[k.hsaco]"),
            std::string::npos)
      << lastReport();
  ASSERT_TRUE(exitedZero(klink(link)));
  EXPECT_NE(lastReport().find("hit=1 "), std::string::npos) << lastReport();
  EXPECT_NE(lastReport().find("status=LINKD_OK served=1 "), std::string::npos);
  ASSERT_TRUE(exitedZero(klink("--no-cache " + link)));
  EXPECT_NE(lastReport().find("served=3 uncacheable=[the caller asked for no "
                              "cache]"),
            std::string::npos)
      << lastReport();
  EXPECT_EQ(klink("--in k.o=a.o -- -shared k.o nope.o -o x").exitCode, 1);
  EXPECT_NE(lastReport().find("rc=1 "), std::string::npos) << lastReport();
  EXPECT_NE(lastReport().find("status=LINKD_LINK_FAILED served="),
            std::string::npos)
      << lastReport();
  EXPECT_EQ(klink("--in ../k.o=a.o -- -shared ../k.o -o x").exitCode, 5);
  EXPECT_NE(lastReport().find("rc=-1 "), std::string::npos) << lastReport();
  EXPECT_NE(lastReport().find("status=LINKD_BAD_ARGUMENT served=0"),
            std::string::npos)
      << lastReport();
  EXPECT_EQ(klink("--struct-size 4 " + link).exitCode, 5);
  EXPECT_NE(lastReport().find("status=LINKD_BAD_ARGUMENT"), std::string::npos)
      << lastReport();
  EXPECT_NE(lastReport().find("struct_size is 4"), std::string::npos);
  ASSERT_TRUE(exitedZero(klink("--local " + link)));
  EXPECT_NE(lastReport().find("local=1 "), std::string::npos) << lastReport();
  EXPECT_NE(lastReport().find("status=LINKD_OK served=4"), std::string::npos);
  auto st = cacheStats();
  EXPECT_EQ(st["kernel_hits"], 1);
}

// A JIT process in a fresh container can keep the library from starting a
// daemon, and from linking without one.
TEST_F(KernelLibrary, NoAutostartAndNoFallback) {
  ASSERT_NO_FATAL_FAILURE(kernelAndStock());
  std::string link = "--in k.o=a.o -- -shared k.o -o k.hsaco";
  ASSERT_TRUE(exitedZero(klink("--no-autostart " + link)));
  EXPECT_NE(lastReport().find("local=1 "), std::string::npos) << lastReport();
  EXPECT_TRUE(sameBytes("a.stock", "k.hsaco"));
  EXPECT_FALSE(daemonStatus()) << "LINKD_NO_AUTOSTART started a daemon";
  ASSERT_TRUE(exitedZero(run("rm k.hsaco")));
  EXPECT_EQ(klink("--no-autostart --no-fallback " + link).exitCode, 5);
  EXPECT_NE(lastReport().find("rc=-1 "), std::string::npos) << lastReport();
  EXPECT_NE(lastReport().find("status=LINKD_NO_DAEMON"), std::string::npos)
      << lastReport();
  EXPECT_NE(lastReport().find("LINKD_NO_FALLBACK"), std::string::npos);
  EXPECT_FALSE(exists("k.hsaco"));
  EXPECT_FALSE(daemonStatus());
}

// A timeout of 1 ms, through the daemon and locally: LINKD_TIMEOUT, no
// output, nothing left in the temporary directory, and the daemon serves
// the next link.
TEST_F(KernelLibrary, OneMillisecondTimeout) {
  amdgpu("a.o", "gfx90a");
  fs::create_directories(path("tmp"));
  std::string link = "--in k.o=a.o -- -shared k.o -o k.hsaco";
  for (const std::string mode : {"", "--local "}) {
    RunResult r =
        klink("--timeout 1 --no-cache " + mode + link, "TMPDIR=" + path("tmp"));
    EXPECT_EQ(r.exitCode, 5) << mode << describe(r);
    EXPECT_NE(lastReport().find("status=LINKD_TIMEOUT served=0"),
              std::string::npos)
        << mode << lastReport();
    EXPECT_FALSE(exists("k.hsaco")) << mode;
    EXPECT_TRUE(fs::is_empty(path("tmp"))) << mode << ": a stray file";
  }
  ASSERT_TRUE(exitedZero(klink(link)));
  EXPECT_NE(lastReport().find("status=LINKD_OK served=2"), std::string::npos)
      << lastReport();
}

// No daemon and no linkd-lld (the wheel's case): a stock LLD from the
// option, LINKD_FALLBACK_LINKER or PATH links in a private directory with
// stock's bytes and diagnostics; with none anywhere, LINKD_NO_LINKER names
// every place it looked.
TEST_F(KernelLibrary, StockLinkerWithoutDaemon) {
  aloneCopy();
  ASSERT_NO_FATAL_FAILURE(kernelAndStock());
  fs::create_directories(path("stockbin"));
  fs::create_directories(path("tmp"));
  fs::create_symlink("/usr/lib/llvm-19/bin/lld", path("stockbin/lld"));
  std::string link = "--in k.o=a.o -- -shared k.o -o k.hsaco";
  std::string env = "TMPDIR=" + path("tmp") + " KLINK_REPORT=" + report + " ";
  for (const std::string &how :
       {std::string("LINKD_FALLBACK_LINKER=/usr/lib/llvm-19/bin/ld.lld "
                    "./klink-alone "),
        std::string("./klink-alone --fallback-linker "
                    "/usr/lib/llvm-19/bin/ld.lld "),
        "PATH=" + path("stockbin") + " ./klink-alone "}) {
    RunResult r = run(env + how + link);
    ASSERT_TRUE(exitedZero(r)) << how;
    EXPECT_TRUE(sameBytes("a.stock", "k.hsaco")) << how;
    EXPECT_NE(lastReport().find("status=LINKD_OK served=4"), std::string::npos)
        << how << lastReport();
    ASSERT_TRUE(exitedZero(run("rm k.hsaco")));
    // LLD's own error, as stock prints it.
    RunResult bad = run(env + how + "--in k.o=a.o -- -shared k.o nope.o -o x");
    RunResult stock =
        run("/usr/lib/llvm-19/bin/ld.lld -shared a.o nope.o -o x");
    EXPECT_EQ(bad.exitCode, 1) << how;
    EXPECT_EQ(bad.err, replaceAll(stock.err, "a.o", "k.o")) << how;
  }
  EXPECT_FALSE(daemonStatus());
  RunResult none =
      run(env + "PATH=" + path("empty") + " ./klink-alone " + link);
  EXPECT_EQ(none.exitCode, 5) << describe(none);
  std::string rep = lastReport();
  EXPECT_NE(rep.find("status=LINKD_NO_LINKER"), std::string::npos) << rep;
  for (const char *named :
       {"LINKD_FALLBACK_LINKER", "ld.lld", "lld on PATH", "linkd-lld"})
    EXPECT_NE(rep.find(named), std::string::npos) << named << ": " << rep;
  RunResult wrong = run(env +
                        "LINKD_FALLBACK_LINKER=/nonexistent/ld.lld "
                        "./klink-alone " +
                        link);
  EXPECT_EQ(wrong.exitCode, 5);
  EXPECT_NE(lastReport().find("/nonexistent/ld.lld"), std::string::npos);
  EXPECT_FALSE(exists("k.hsaco"));
  EXPECT_TRUE(fs::is_empty(path("tmp"))) << "a stray file";
}

// One meaning in both modes (daemon and local): an output named absolutely,
// or above the link's working directory, in any spelling, is the same
// refusal, and nothing is written there; an input name the link was not
// given is LLD's same error; outputs in a subdirectory come back by name.
TEST_F(KernelLibrary, BothModesAgreeOnNames) {
  amdgpu("a.o", "gfx90a");
  fs::create_directories(path("w"));
  auto inW = [&](const std::string &args) {
    return run("cd w && KLINK_REPORT=" + report + " ../klink --out . " + args);
  };
  auto errorOf = [](const std::string &line) {
    size_t at = line.find(" error=");
    return at == std::string::npos ? line : line.substr(at);
  };
  const std::vector<std::pair<std::string, std::string>> escapes = {
      {"-o ../escape.hsaco", "escape.hsaco"},
      {"-o sub/../../escape.hsaco", "escape.hsaco"},
      {"-o " + path("abs.hsaco"), "abs.hsaco"},
      {"-o" + path("joined.hsaco"), "joined.hsaco"},
      {"--output=" + path("long.hsaco"), "long.hsaco"},
      {"-o k.hsaco -Map=" + path("abs.map"), "abs.map"},
      {"-o k.hsaco --Map ../up.map", "up.map"},
      {"-o k.hsaco --dependency-file=../dep.d", "dep.d"},
  };
  for (const auto &[args, written] : escapes) {
    std::string link = "--in k.o=../a.o -- -shared k.o " + args;
    RunResult daemon = inW(link);
    std::string viaDaemon = lastReport();
    RunResult local = inW("--local " + link);
    std::string viaLocal = lastReport();
    EXPECT_EQ(daemon.exitCode, 5) << args << describe(daemon);
    EXPECT_EQ(local.exitCode, 5) << args << describe(local);
    EXPECT_NE(viaDaemon.find("status=LINKD_BAD_ARGUMENT"), std::string::npos)
        << args << ": " << viaDaemon;
    EXPECT_NE(viaLocal.find("local=0 "), std::string::npos) << viaLocal;
    EXPECT_EQ(errorOf(viaDaemon), errorOf(viaLocal)) << args;
    EXPECT_NE(viaDaemon.find("working directory"), std::string::npos)
        << viaDaemon;
    EXPECT_FALSE(exists(written)) << args << " wrote " << written;
    EXPECT_FALSE(exists("w/k.hsaco")) << args;
  }
  EXPECT_EQ(cacheStats()["kernel_links"], 0) << "a refusal reached the daemon";
  // Not an input: LLD's error, the same in both modes.
  RunResult d = inW("--in k.o=../a.o -- -shared k.o other.o -o k.hsaco");
  RunResult l =
      inW("--local --in k.o=../a.o -- -shared k.o other.o -o k.hsaco");
  EXPECT_EQ(d.exitCode, 1) << describe(d);
  EXPECT_EQ(l.exitCode, d.exitCode) << describe(l);
  EXPECT_EQ(l.err, d.err);
  EXPECT_NE(d.err.find("other.o"), std::string::npos) << d.err;
  // Inside the directory: bytes by the same name, however it is spelled
  // (the daemon's view resolves "." and ".." as the local kernel does).
  const std::vector<std::pair<std::string, std::string>> inside = {
      {"k.o -o k.hsaco", "k.hsaco"},
      {"k.o -o k2.hsaco", "k2.hsaco"},
      {"k.o -o ./k3.hsaco", "k3.hsaco"},
      {"k.o -o .//./k4.hsaco", "k4.hsaco"},
      {"lib/k.o -o lib/../k5.hsaco", "k5.hsaco"},
      {"lib/k.o -o lib/./k6.hsaco", "lib/k6.hsaco"},
  };
  for (const auto &[args, name] : inside) {
    std::string in = args.starts_with("lib/") ? "lib/k.o" : "k.o";
    std::string link = "--in " + in + "=../a.o -- -shared " + args;
    RunResult d = inW(link);
    ASSERT_TRUE(exitedZero(d)) << describe(d);
    std::string viaDaemon = lastReport();
    RunResult l = inW("--local " + link);
    ASSERT_TRUE(exitedZero(l)) << describe(l);
    std::string viaLocal = lastReport();
    size_t n = viaDaemon.find(" names=");
    EXPECT_EQ(viaDaemon.substr(n), viaLocal.substr(viaLocal.find(" names=")))
        << args;
    EXPECT_NE(viaDaemon.find(" names=[" + name + "]"), std::string::npos)
        << args << ": " << viaDaemon;
  }
  // A directory that does not exist, on the way down or taken back with
  // "..": the kernel's error for a local link, the same through the daemon.
  for (const std::string out : {"sub/k.hsaco", "nosub/../k.hsaco"}) {
    std::string link = "--in k.o=../a.o -- -shared k.o -o " + out;
    RunResult d = inW(link);
    RunResult l = inW("--local " + link);
    EXPECT_EQ(d.exitCode, 1) << describe(d);
    EXPECT_EQ(l.exitCode, d.exitCode) << describe(l);
    EXPECT_EQ(l.err, d.err) << out;
    EXPECT_NE(d.err.find("cannot open output file " + out), std::string::npos)
        << d.err;
  }
}

// Inputs named absolutely (Python's temp names) are read at those names in
// both modes: the daemon's view places them there, linkd-lld's local view
// reads the library's copy at that name (never written there). The name
// shadows a file the machine has at that path, and a directory above it
// that does not exist is one. A relative path above the working directory
// is absent in both modes, even where the machine has the file.
TEST_F(KernelLibrary, BothModesReadAbsolutelyNamedInputs) {
  ASSERT_NO_FATAL_FAILURE(kernelAndStock());
  fs::create_directories(path("w"));
  fs::create_directories(path("shadow"));
  fs::create_directories(path("tmp"));
  writeFile("shadow/k.o", "not an object: the input's bytes are read");
  std::string env = "TMPDIR=" + path("tmp") + " KLINK_REPORT=" + report + " ";
  auto inW = [&](const std::string &args) {
    return run("cd w && " + env + "../klink --out . " + args);
  };
  const std::string missingDir =
      "/nonexistent-linkd-" + std::to_string(getpid()) + "/sub/k.o";
  for (const std::string &name :
       {path("shadow/k.o"), missingDir, path("shadow") + "/./k.o"}) {
    std::string link = "--in " + path("shadow/k.o") + "=../a.o -- -shared " +
                       name + " -o k.hsaco";
    if (name == missingDir)
      link = "--in " + missingDir + "=../a.o -- -shared " + name +
             " -o k.hsaco";
    for (const std::string mode : {"", "--local "}) {
      RunResult r = inW(mode + link);
      ASSERT_TRUE(exitedZero(r)) << mode << name << describe(r);
      EXPECT_NE(lastReport().find(" names=[k.hsaco]"), std::string::npos)
          << lastReport();
      EXPECT_NE(lastReport().find(mode.empty() ? "local=0" : "local=1"),
                std::string::npos)
          << lastReport();
      EXPECT_TRUE(sameBytes("a.stock", "w/k.hsaco")) << mode << name;
      fs::remove(path("w/k.hsaco"));
    }
  }
  EXPECT_EQ(readFile("shadow/k.o"),
            "not an object: the input's bytes are read");
  EXPECT_FALSE(fs::exists(fs::path(missingDir).parent_path().parent_path()));
  // An absolute name that is not an input: the machine's file, in both
  // modes (here not an object: LLD's same error).
  for (const std::string mode : {"", "--local "}) {
    RunResult r = inW(mode + "--in k.o=../a.o -- -shared k.o " +
                      path("shadow/k.o") + " -o k.hsaco");
    EXPECT_EQ(r.exitCode, 1) << mode << describe(r);
    EXPECT_NE(r.err.find(path("shadow/k.o")), std::string::npos) << r.err;
  }
  // ".." in an absolute path is the file system's in both modes (it may
  // cross a link): here the machine's file, not the input.
  std::string dotdot;
  for (const std::string mode : {"", "--local "}) {
    RunResult r = inW(mode + "--in " + path("shadow/k.o") +
                      "=../a.o -- -shared " + path("shadow") +
                      "/../shadow/k.o -o k.hsaco");
    EXPECT_EQ(r.exitCode, 1) << mode << describe(r);
    EXPECT_NE(r.err.find("unknown directive: not"), std::string::npos)
        << r.err;
    if (mode.empty())
      dotdot = r.err;
    else
      EXPECT_EQ(r.err, dotdot);
  }
  // Above the working directory: TMPDIR/linkd-kernel.X/work/../../../a.o is
  // this test's a.o on the machine, absent for both.
  std::string above;
  for (const std::string mode : {"", "--local "}) {
    RunResult r = inW(mode + "--in k.o=../a.o -- -shared k.o ../../../a.o "
                             "../view/0 -o k.hsaco");
    EXPECT_EQ(r.exitCode, 1) << mode << describe(r);
    EXPECT_NE(r.err.find("cannot open ../../../a.o: No such file or directory"),
              std::string::npos)
        << mode << r.err;
    EXPECT_NE(r.err.find("cannot open ../view/0: No such file or directory"),
              std::string::npos)
        << mode << r.err;
    if (mode.empty())
      above = r.err;
    else
      EXPECT_EQ(r.err, above);
  }
  EXPECT_FALSE(exists("w/k.hsaco"));
  EXPECT_TRUE(fs::is_empty(path("tmp"))) << "a stray file";
  // With a stock linker as the fallback, no view: the clear refusal.
  RunResult stock = inW("--local --fallback-linker /usr/lib/llvm-19/bin/ld.lld "
                        "--in " +
                        missingDir + "=../a.o -- -shared " + missingDir +
                        " -o k.hsaco");
  EXPECT_EQ(stock.exitCode, 5) << describe(stock);
  EXPECT_NE(lastReport().find("status=LINKD_BAD_ARGUMENT"), std::string::npos)
      << lastReport();
  EXPECT_NE(lastReport().find("absolute name"), std::string::npos)
      << lastReport();
}

// Kernel links run in reusable workers (daemon/linkd-lld/link_worker.h):
// one confined process links kernel after kernel, each byte-identical to
// stock, a failed link and an r600 (ELF32) one end theirs; an ordinary link
// in between never runs in a process a kernel link confined, and the
// kernel link after it still finds a confined worker.
TEST_F(KernelLibrary, KernelLinksRunInConfinedReusableWorkers) {
  const int n = 6;
  for (int i = 0; i < n; ++i) {
    amdgpu("k" + std::to_string(i) + ".o", "gfx90a",
           "-DK=" + std::to_string(i + 2));
    ASSERT_TRUE(exitedZero(run("/usr/lib/llvm-19/bin/ld.lld -shared k" +
                               std::to_string(i) + ".o -o k" +
                               std::to_string(i) + ".stock")));
  }
  writeFile("lib.c", "int lib_value(void) { return 42; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c lib.c")));
  writeFile("r600.c", "__attribute__((amdgpu_kernel)) void k(int *p) { *p = 1; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 --target=r600 -mcpu=cypress -O2 -c "
                             "r600.c -o r600.o && /usr/lib/llvm-19/bin/ld.lld "
                             "-shared r600.o -o r600.stock")));
  fs::create_directories(path("out"));
  long ordinaryPid = -1;
  for (int i = 0; i < n; ++i) {
    std::string k = "k" + std::to_string(i);
    RunResult r = klink("--out out --in k.o=" + k + ".o -- -shared k.o -o " + k);
    ASSERT_TRUE(exitedZero(r)) << describe(r);
    EXPECT_TRUE(sameBytes(k + ".stock", "out/" + k)) << k;
    if (i == 2) { // an ordinary link through the client, then others
      EXPECT_TRUE(linkBoth(elfLinkers(),
                           "LINKD_NOCACHE=1 {ld} -shared lib.o -o lib.so",
                           {"lib.so"}));
      ordinaryPid = lastLinkServed().pid;
      RunResult bad =
          klink("--out out --in k.o=k0.o -- -shared k.o missing.o -o x");
      EXPECT_EQ(bad.exitCode, 1) << describe(bad);
      RunResult r600 =
          klink("--out out --in r.o=r600.o -- -shared r.o -o r600");
      ASSERT_TRUE(exitedZero(r600)) << describe(r600);
      EXPECT_TRUE(sameBytes("r600.stock", "out/r600"));
    }
  }
  std::set<long> kernelPids;
  size_t reused = 0, lines = 0;
  for (const std::string &l : logLines("kernel link id=")) {
    std::smatch m;
    if (!std::regex_search(l, m, std::regex(" pid=(\\d+) reused=(\\d+) ")))
      continue;
    ++lines;
    kernelPids.insert(std::stol(m[1]));
    reused += std::stol(m[2]) > 0;
  }
  EXPECT_EQ(lines, static_cast<size_t>(n + 2));
  EXPECT_GE(reused, 4u) << "kernel links did not run in used workers: "
                         << testing::PrintToString(logLines("kernel link id="));
  EXPECT_GT(ordinaryPid, 0);
  EXPECT_EQ(kernelPids.count(ordinaryPid), 0u)
      << "an ordinary link ran in a process a kernel link used";
  // Every thread of a waiting kernel worker, LLD's pool included, was
  // started after the confinement (no_new_privs is per thread and set with
  // it; a pool started before would show 0).
  size_t threads = 0;
  for (long pid : kernelPids) {
    std::string task = "/proc/" + std::to_string(pid) + "/task";
    if (!fs::exists(task))
      continue; // that process ended (the failed link's, r600's)
    for (const auto &t : fs::directory_iterator(task)) {
      std::string status = readFile((t.path() / "status").string());
      if (status.empty())
        continue;
      ++threads;
      EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos)
          << t.path() << " of kernel worker " << pid << " is unconfined";
    }
  }
  EXPECT_GE(threads, 2u) << "no waiting kernel worker with LLD's pool";
}

// A daemon killed mid-link leaves its scratch directory in its lane; the
// next daemon removes those of daemons that ended, unused for an hour, and
// leaves a live process's, a recent one and other names alone.
TEST_F(KernelLibrary, ScratchAnEndedDaemonLeftIsRemovedAtStart) {
  kernelAndStock();
  RunResult gone = run("sh -c 'echo $$'");
  ASSERT_TRUE(exitedZero(gone));
  std::string dead = std::to_string(std::stol(gone.out));
  std::string lane = "cache/kernels/links/lane0";
  std::string deadDir = lane + "/" + dead + "-k7";
  std::string liveDir = lane + "/" + std::to_string(getpid()) + "-k1";
  std::string otherDir = lane + "/notes";
  fs::create_directories(path(deadDir + "/out/sub"));
  writeFile(deadDir + "/out/sub/k.hsaco", "half");
  writeFile(deadDir + "/empty.o", "");
  fs::create_directories(path(liveDir + "/out"));
  fs::create_directories(path(otherDir));
  std::string recentDir = lane + "/" + dead + "-k8"; // in use elsewhere?
  fs::create_directories(path(recentDir + "/out"));
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  for (const std::string &d : {deadDir, deadDir + "/out", liveDir, otherDir})
    fs::last_write_time(path(d), old);
  fs::create_directories(path("out"));
  RunResult r = klink("--out out --in a.o=a.o -- -shared a.o -o a");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_TRUE(sameBytes("a.stock", "out/a"));
  EXPECT_FALSE(exists(deadDir)) << "an ended daemon's scratch stayed";
  EXPECT_TRUE(exists(liveDir + "/out")) << "a live process's went";
  EXPECT_TRUE(exists(otherDir));
  EXPECT_TRUE(exists(recentDir + "/out")) << "one used within the hour went";
  EXPECT_EQ(
      logLines("removed 1 kernel scratch directories an ended daemon left")
          .size(),
      1u);
}

// What a wheel may carry: the soname is the file's name, every export is
// versioned LINKD_1.0, and nothing is NEEDED beyond glibc and the compiler
// runtime (no libcrypto).
TEST_F(KernelLibrary, LibraryAbiShape) {
  std::string lib = binDir() + "/../lib/liblinkd.so.1";
  ASSERT_TRUE(fs::exists(lib) && !fs::is_symlink(lib)) << lib;
  RunResult d = run(tools::readelf.path + " -d " + lib);
  ASSERT_TRUE(exitedZero(d));
  EXPECT_NE(d.out.find("Library soname: [liblinkd.so.1]"), std::string::npos)
      << d.out;
  for (const std::string &line : linesStartingWith(
           replaceAll(d.out, " 0x0000000000000001 (NEEDED)", "NEEDED"),
           "NEEDED")) {
    bool allowed = false;
    for (const char *ok : {"[libc.so.6]", "[libm.so.6]", "[libgcc_s.so.1]",
                           "[libstdc++.so.6]", "[ld-linux-x86-64.so.2]"})
      allowed |= line.find(ok) != std::string::npos;
    EXPECT_TRUE(allowed) << line;
  }
  RunResult syms =
      run(tools::readelf.path + " --dyn-syms -W " + lib + " | grep ' linkd_'");
  ASSERT_TRUE(exitedZero(syms));
  size_t n = 0;
  for (size_t at = 0; (at = syms.out.find(" linkd_", at)) != std::string::npos;
       ++at)
    ++n;
  EXPECT_GE(n, 7u) << syms.out;
  size_t versioned = 0;
  for (size_t at = 0;
       (at = syms.out.find("@@LINKD_1.0", at)) != std::string::npos; ++at)
    ++versioned;
  EXPECT_EQ(versioned, n) << syms.out;
}

TEST_F(KernelLibrary, PythonModule) {
  if (access("/usr/bin/python3", X_OK) != 0)
    GTEST_SKIP() << "python3 is not installed";
  ASSERT_NO_FATAL_FAILURE(kernelAndStock());
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
r = linkd.link_result(["-shared", "k.o", "-o", "k.hsaco"], inputs={"k.o": obj})
assert r.served == "hit" and r.status == linkd.OK, vars(r)
for call, cls in [
        (dict(inputs={"../k.o": obj}), linkd.BadArgument),
        (dict(inputs={"k.o": obj}, timeout_ms=1, no_cache=True), linkd.Timeout),
        (dict(inputs={"k.o": obj}, timeout_ms=1, no_cache=True,
              local_only=True), linkd.Timeout)]:
    try:
        linkd.link(["-shared", "k.o", "-o", "y"], **call)
        sys.exit("no %s for %r" % (cls.__name__, call))
    except cls as e:
        assert isinstance(e, linkd.Error) and e.error, e
print("ok", linkd.version())
)");
  RunResult r = run("PYTHONPATH=" + binDir() + "/../lib/python python3 t.py");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out.substr(0, 3), "ok ");
}

// A link without a daemon writes only in its private directory, whatever
// names the output: `-o /abs` inside a response file, or
// a linker script's OUTPUT(/abs), are inputs no check of the arguments
// reads. The view refuses the write (EACCES), LLD says so, and nothing
// appears at the name; the daemon's view refuses the same links.
TEST_F(KernelLibrary, NoDaemonLinksWriteOnlyInTheirDirectory) {
  if (access("/usr/bin/python3", X_OK) != 0)
    GTEST_SKIP() << "python3 is not installed";
  writeFile("k.c", "int counter; int bump(void) { return ++counter; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c k.c -o k.o")));
  ASSERT_TRUE(exitedZero(run("mkdir -m 700 tmp")));
  // The private directory is kept between links: the last name starts in
  // it and climbs out with '..'.
  writeFile("t.py", R"(import glob, os, sys, linkd
obj = open("k.o", "rb").read()
def show(argv, inputs, out):
    r = linkd.link_result(argv, inputs=inputs, local_only=True)
    print(r.exit_code, "refused" if "cannot open output file " + out +
          ": Permission denied" in r.diagnostics else r.diagnostics)
rsp, script = sys.argv[1], sys.argv[2]
show(["-shared", "k.o", "@a.rsp"],
     {"k.o": obj, "a.rsp": b"-o " + rsp.encode() + b"\n"}, rsp)
show(["-shared", "s.ld"],
     {"k.o": obj, "s.ld": b"OUTPUT(" + script.encode() + b")\nINPUT(k.o)\n"},
     script)
d = glob.glob(os.environ["TMPDIR"] + "/linkd-kernel.%d.*" % os.getpid())[0]
dots = d + "/work/../../escaped-by-dots"
show(["-shared", "s.ld"],
     {"k.o": obj, "s.ld": b"OUTPUT(" + dots.encode() + b")\nINPUT(k.o)\n"},
     dots)
)");
  RunResult r = run("TMPDIR=" + path("tmp") + " PYTHONPATH=" + binDir() +
                    "/../lib/python python3 t.py " + path("escaped-by-rsp") +
                    " " + path("escaped-by-script"));
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_EQ(r.out, "1 refused\n1 refused\n1 refused\n");
  EXPECT_FALSE(exists("escaped-by-rsp"));
  EXPECT_FALSE(exists("escaped-by-script"));
  EXPECT_FALSE(exists("tmp/escaped-by-dots"));
}

// Local links reuse their private directories (client/liblinkd/
// private_dirs.h): a JIT loop keeps one, a failed or timed-out link leaves
// it empty, threads get one each, a forked child makes its own and leaves
// its parent's alone, and nothing is left in TMPDIR once the process ends.
TEST_F(KernelLibrary, LocalLinksReuseTheirPrivateDirectories) {
  if (access("/usr/bin/python3", X_OK) != 0)
    GTEST_SKIP() << "python3 is not installed";
  ASSERT_NO_FATAL_FAILURE(kernelAndStock());
  fs::create_directories(path("tmp"));
  writeFile("t.py", R"(import os, sys, threading
import linkd
obj = open("a.o", "rb").read()
stock = open("a.stock", "rb").read()
tmp = os.environ["TMPDIR"]
def link(name="k.o", **kw):
    return linkd.link(["-shared", name, "-o", "k.hsaco"], inputs={name: obj},
                      local_only=True, **kw)["k.hsaco"]
def dirs():
    return sorted(d for d in os.listdir(tmp) if d.startswith("linkd-kernel."))
def contents(d):
    out = []
    for root, subdirs, files in os.walk(os.path.join(tmp, d)):
        out += [os.path.relpath(os.path.join(root, f), tmp) for f in files]
    return out
for i in range(5):
    assert link() == stock
    assert link("sub/k.o") == stock
one = dirs()
assert len(one) == 1, one
for bad in [dict(timeout_ms=1), dict(name="missing/../k.o")]:
    try:
        link(**bad)
    except linkd.Error:
        pass
assert dirs() == one and contents(one[0]) == [], (dirs(), contents(one[0]))
results = []
threads = [threading.Thread(target=lambda: results.append(link() == stock))
           for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
assert results == [True] * 4, results
assert 1 <= len(dirs()) <= 4, dirs()
pid = os.fork()
if pid == 0:
    ok = link() == stock and all(os.path.isdir(os.path.join(tmp, d))
                                 for d in one)
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
assert status == 0, status
assert set(one) <= set(dirs()), (one, dirs())
assert link() == stock
print("ok", len(dirs()))
)");
  std::string env = "TMPDIR=" + path("tmp") + " PYTHONPATH=" + binDir() +
                    "/../lib/python ";
  RunResult r = run(env + "python3 t.py");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_EQ(r.out.substr(0, 3), "ok ") << r.out;
  // The child left through os._exit: its own directory is the one thing
  // a process that skips its exit handlers leaves (empty but for its
  // layout); the parent's are gone.
  size_t left = 0;
  for (const auto &e : fs::directory_iterator(path("tmp"))) {
    ++left;
    EXPECT_TRUE(fs::is_empty(e.path() / "work")) << e.path();
  }
  EXPECT_LE(left, 1u);
  // Once unused for an hour, the next process's first local link removes
  // it; a directory of a live process it leaves alone.
  fs::create_directories(path("tmp/linkd-kernel.1.keepme/work"));
  std::string sweep =
      env + "python3 -c 'import linkd; "
            "linkd.link([\"-shared\", \"k.o\", \"-o\", "
            "\"k\"], inputs={\"k.o\": open(\"a.o\", "
            "\"rb\").read()}, local_only=True)'";
  ASSERT_TRUE(exitedZero(run(sweep)));
  EXPECT_EQ(static_cast<size_t>(std::distance(
                fs::directory_iterator(path("tmp")), fs::directory_iterator())),
            left + 1)
      << "a directory used within the hour was removed";
  ASSERT_TRUE(exitedZero(run("touch -d '2 hours ago' " + path("tmp") +
                             "/linkd-kernel.*/work " + path("tmp") +
                             "/linkd-kernel.*.*/view")));
  ASSERT_TRUE(exitedZero(run(sweep)));
  std::vector<std::string> after;
  for (const auto &e : fs::directory_iterator(path("tmp")))
    after.push_back(e.path().filename());
  EXPECT_EQ(after, std::vector<std::string>{"linkd-kernel.1.keepme"})
      << "pid 1 is alive: its directory stays";
}

} // namespace
} // namespace linkd::e2e
