// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The client as a drop-in for LLD's generic driver, the way GPU and JIT
// compilers call it (docs/kernels.md): `lld -flavor gnu ...` and
// `ld.lld -flavor gnu ...` through a PATH symlink, for AMDGPU code objects
// compiled here by clang-19, compared byte for byte (and with
// `llvm-readelf --notes`) with stock /usr/lib/llvm-19/bin/lld; and the
// generic driver's own diagnostics and exit status for a missing or unknown
// flavor, through the daemon and in the local fallback.
#include "harness.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

// IREE's environment (LLD_VERSION only; `env -i` likewise) in a mount
// namespace where /run and the uid's home from the password database are
// this test's directories: the client finds the user's runtime directory
// and home the way it would on a real session, and the real user's daemon,
// config and cache stay out of reach.
class StrippedEnvironment : public KernelDropIn {
protected:
  void SetUp() override {
    // One at a time across the suite's processes (ctest -j): TearDown looks
    // for daemons carrying LLD_VERSION=IREE machine-wide, which another
    // test's own daemon also is.
    serial = open("/tmp/linkd-e2e-stripped-environment.lock",
                  O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(serial, 0);
    ASSERT_EQ(flock(serial, LOCK_EX), 0);
    KernelDropIn::SetUp();
    if (!exitedZero(run("unshare --user --map-current-user --mount true")))
      GTEST_SKIP() << "no user and mount namespaces here (unshare failed)";
    passwd *pw = getpwuid(getuid());
    ASSERT_NE(pw, nullptr);
    home = pw->pw_dir;
    if (!fs::is_directory(home) || dir.starts_with(home + "/"))
      GTEST_SKIP() << "the password database's home " << home
                   << " cannot be covered here";
    std::string uid = std::to_string(getuid());
    runtime = path("ns/run/user/") + uid;
    fs::create_directories(runtime + "/linkd");
    fs::create_directories(path("ns/home"));
    for (const std::string &d : {runtime, runtime + "/linkd"})
      ASSERT_EQ(chmod(d.c_str(), 0700), 0) << d;
    // The user's daemon is the one at <runtime dir>/linkd/linkd.sock: this
    // test's own (harness.h's teardown stops and reaps it).
    socketPath = runtime + "/linkd/linkd.sock";
    setenv("LINKD_SOCKET", socketPath.c_str(), 1);
    compile("k", kKernelA, "gfx90a");
  }
  void TearDown() override {
    // A daemon the stripped client started somewhere else (the defect this
    // guards against) carries LLD_VERSION=IREE and no LINKD_SOCKET.
    // The daemon at the user's socket (which a stripped client may start)
    // is not a second one; the harness stops it.
    std::optional<DaemonStatus> users = daemonStatus();
    for (pid_t pid : processesWithEnvironment("LLD_VERSION=IREE"))
      if (commandLine(pid).find(" serve") != std::string::npos &&
          !(users && users->pid == pid)) {
        kill(pid, SIGKILL);
        ADD_FAILURE() << "a second daemon was started: " << commandLine(pid);
      }
    KernelDropIn::TearDown();
    if (serial >= 0)
      close(serial); // and with it the lock
  }
  // `cmd` run by /bin/sh in the test directory with only LLD_VERSION=IREE.
  std::string stripped(const std::string &cmd) {
    return "unshare --user --map-current-user --mount sh -c 'mount --bind " +
           path("ns/run") + " /run && mount --bind " + path("ns/home") + " " +
           home + " && cd " + dir + " && exec env -i LLD_VERSION=IREE " + cmd +
           "'";
  }
  std::string home, runtime;
  int serial = -1;
};

// IREE's link reaches the daemon the user's shell reaches (its cache, its
// counters), not a second daemon of its own.
TEST_F(StrippedEnvironment, ClientReachesTheUsersDaemon) {
  // The user's daemon, started by an ordinary link (no LLD_VERSION).
  ASSERT_TRUE(exitedZero(
      run(path("bin/lld") + " -flavor gnu -shared k.o -o warm.hsaco")));
  // The same link with IREE's environment, told the socket explicitly: a
  // miss that stores what the stripped client must then hit (the variables
  // LLD reads are part of the key, so both have the same few).
  std::string link = " -flavor gnu -shared k.o -o k.hsaco";
  ASSERT_TRUE(exitedZero(run("env -i LLD_VERSION=IREE LINKD_SOCKET=" +
                             socketPath + " " + path("bin/lld") + link)));
  ASSERT_TRUE(exitedZero(run("mv k.hsaco k.first")));
  auto before = cacheStats();
  RunResult r = run(stripped(path("bin/lld") + link));
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.err, "");
  auto after = cacheStats();
  EXPECT_EQ(after["hits"], before["hits"] + 1) << "not served by the daemon";
  ASSERT_TRUE(exitedZero(
      run("env -i LLD_VERSION=IREE " + kStockLld + link + ".stock")));
  EXPECT_TRUE(sameBytes("k.hsaco.stock", "k.hsaco"));
  EXPECT_TRUE(sameBytes("k.first", "k.hsaco"));
}

// With no daemon running, the stripped client starts the user's: at the
// runtime directory's socket, with the config file in the home the password
// database names, so its cache is the one the user configured.
TEST_F(StrippedEnvironment, AutostartReadsTheUsersConfig) {
  fs::create_directories(path("ns/home/.config/linkd"));
  writeFile("ns/home/.config/linkd/linkd.conf",
            "cache_dir = " + path("usercache") + "\n");
  std::string link = " -flavor gnu -shared k.o -o k.hsaco";
  RunResult first = run(stripped(path("bin/lld") + link));
  ASSERT_TRUE(exitedZero(first));
  EXPECT_EQ(first.err, "");
  ASSERT_TRUE(daemonStatus()) << "no daemon at " << socketPath;
  RunResult second = run(stripped(path("bin/lld") + link));
  ASSERT_TRUE(exitedZero(second));
  auto stats = cacheStats();
  EXPECT_EQ(stats["misses"], 1);
  EXPECT_EQ(stats["hits"], 1);
  EXPECT_FALSE(fs::is_empty(path("usercache"))) << "the config's cache_dir";
  EXPECT_TRUE(fs::exists(path("ns/home/.local/state/linkd/linkd.log")));
  ASSERT_TRUE(exitedZero(
      run("env -i LLD_VERSION=IREE " + kStockLld + link + ".stock")));
  EXPECT_TRUE(sameBytes("k.hsaco.stock", "k.hsaco"));
}

} // namespace
} // namespace linkd::e2e
