// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Attacks on reusable link workers (daemon/linkd-lld/link_worker.h): links
// run after others in one process must still be stock ld.lld's, byte for
// byte and diagnostic for diagnostic, and nothing of one link (its target,
// its files, its client) may reach the next. Each test found a difference
// between a used worker and a fresh ld.lld, or guards a sequence the audit
// (docs/lld19-reuse-audit.md) singled out; the log's `reused=` (links the
// process ran before) proves a link ran in a used worker.
#include "harness.h"

#include <signal.h>

#include <algorithm>
#include <map>
#include <regex>
#include <thread>

namespace linkd::e2e {
namespace {

class WorkerReuseAttack : public E2eTest {
protected:
  ::testing::AssertionResult link(const std::string &args,
                                  const std::string &out) {
    return linkBoth(elfLinkers(), "LINKD_NOCACHE=1 {ld} " + args, {out});
  }
};

// LLD builds each target's object once per process, and its base class
// takes the GOT entry size from the word size of the link that built it.
// AMDGPU has both classes (r600 code objects are ELF32) and sets no size of
// its own: after an r600 link, an amdgcn link in the same worker got 4-byte
// GOT entries (.got aligned to 4, the second entry at +4, the kernel loading
// half a pointer). x86-64 sets 8 itself, so x32 and x86-64 may share a
// worker in either order; the links below check that too.
TEST_F(WorkerReuseAttack, AmdgpuGotEntrySizeIsNotTheFirstLinksWordSize) {
  writeFile("r600.cl", "__kernel void inc(__global int *a) { a[0] += 1; }\n");
  writeFile("got.cl", R"(__global int gvar = 1;
extern __global int evar;
__kernel void k(__global int *o) { o[0] = gvar + evar; }
)");
  writeFile("plt.c", R"(extern int ext_fn(int);
extern int ext_data;
int call(int x) { return ext_fn(x) + ext_data; }
)");
  writeFile("ext.c", "int ext_data = 3;\nint ext_fn(int x) { return x; }\n");
  ASSERT_TRUE(exitedZero(run(
      "clang-19 -x cl --target=r600 -mcpu=cypress -nogpulib -c r600.cl "
      "&& clang-19 -x cl -cl-std=CL2.0 --target=amdgcn-amd-amdhsa "
      "-mcpu=gfx90a -nogpulib -fvisibility=default -c got.cl "
      "&& for t in x86_64-linux-gnu x86_64-linux-gnux32; do "
      "clang-19 --target=$t -O2 -fPIC -c plt.c -o plt-$t.o && "
      "clang-19 --target=$t -O2 -fPIC -c ext.c -o ext-$t.o; done")));
  // The daemon's first link, so its worker has built no AMDGPU target yet.
  ASSERT_TRUE(link("-shared r600.o -o r600.so", "r600.so"));
  LinkServed r600 = lastLinkServed();
  EXPECT_TRUE(link("-shared got.o -o got.so", "got.so"))
      << "an amdgcn link after an r600 one";
  LinkServed amdgcn = lastLinkServed();
  EXPECT_NE(amdgcn.pid, r600.pid) << "the amdgcn link ran in the worker "
                                     "that built the target for ELF32";
  // x86-64 and x32 alternate in one worker; each GOT as stock's.
  size_t reused = 0;
  for (const char *m : {"elf_x86_64", "elf32_x86_64", "elf_x86_64",
                        "elf32_x86_64"}) {
    std::string t = std::string(m) == "elf_x86_64" ? "x86_64-linux-gnu"
                                                   : "x86_64-linux-gnux32";
    std::string so = std::string("lib-") + m + ".so";
    EXPECT_TRUE(link("-m " + std::string(m) + " -shared ext-" + t + ".o -o " +
                         so,
                     so));
    std::string out = std::string("plt-") + m + ".so";
    EXPECT_TRUE(link("-m " + std::string(m) + " -shared -z now plt-" + t +
                         ".o " + so + " -o " + out,
                     out))
        << m;
    reused += lastLinkServed().reused > 0 ? 1 : 0;
  }
  EXPECT_GE(reused, 3u) << "the x86-64/x32 links did not run in a used "
                           "worker: they prove nothing";
}

// lld::elf::target is chosen only once a link has read its inputs, and LLD
// tests it for null before then: a linker script's PHDRS FLAGS(...) is
// evaluated while the script is parsed, and CONSTANT(COMMONPAGESIZE) there
// is "unable to calculate page size". In a used worker the previous link's
// target was still there: no error, a different one later (here, the
// undefined __real_ symbol stock never gets to).
TEST_F(WorkerReuseAttack, TargetOfThePreviousLinkIsNotThereWhileParsing) {
  writeFile("start.s", ".globl _start\n_start:\n  ret\n");
  writeFile("wrap.c", "int __real_f(void);\nint __wrap_f(void) { return "
                      "__real_f(); }\nint main(void) { return __wrap_f(); }\n");
  writeFile("flags.ld", R"(PHDRS { text PT_LOAD FILEHDR PHDRS FLAGS(CONSTANT(COMMONPAGESIZE) & 5); }
SECTIONS { . = 0x10000 + SIZEOF_HEADERS; .text : { *(.text*) } :text }
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -c start.s && clang-19 -c wrap.c")));
  size_t reused = 0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(link("-shared start.o -o warm.so", "warm.so"));
    EXPECT_TRUE(sameDiagnostics(elfLinkers(),
                                "-T flags.ld wrap.o -e main -o flags"));
    reused += lastLinkServed().reused > 0 ? 1 : 0;
  }
  EXPECT_GE(reused, 1u) << "the script links did not run in a used worker: "
                           "the test proves nothing";
}

// A client that goes away mid-link (killed, or interrupted) takes its link
// along: the daemon signals the link's process, which must then be gone,
// not back in the pool, and the next link runs elsewhere and is stock's.
// The link is held mid-link by a FIFO among its inputs.
TEST_F(WorkerReuseAttack, ClientGoneMidLinkTakesItsWorkerAlong) {
  writeFile("lib.c", "int lib_value(void) { return 42; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c lib.c && mkfifo slow.o")));
  for (int sig : {SIGKILL, SIGINT}) {
    ASSERT_TRUE(link("-shared lib.o -o warm1.so", "warm1.so"));
    ASSERT_TRUE(link("-shared lib.o -o warm2.so", "warm2.so"));
    LinkServed warm = lastLinkServed();
    auto st = daemonStatus();
    ASSERT_TRUE(st.has_value());
    Background client = start("LINKD_NOCACHE=1 exec " + binPath("ld.linkd") +
                              " -shared lib.o slow.o -o killed.so");
    bool inWorker = false;
    for (int i = 0; i < 500 && !inWorker; ++i) {
      auto kids = linkChildrenOf(static_cast<pid_t>(st->zygotePid));
      inWorker = std::count(kids.begin(), kids.end(), warm.pid) == 1;
      if (!inWorker)
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(inWorker) << "the held link did not run in worker "
                          << warm.pid << " (signal " << sig << ")";
    std::this_thread::sleep_for(50ms); // blocked opening the FIFO by now
    ASSERT_EQ(kill(client.pid, sig), 0);
    RunResult r = wait(client, 20s);
    EXPECT_NE(r.exitCode, 0) << describe(r);
    EXPECT_TRUE(waitUntilGone(static_cast<pid_t>(warm.pid), 10s))
        << "the worker of a link whose client left is still there";
    EXPECT_TRUE(link("-shared lib.o -o after.so", "after.so"));
    EXPECT_NE(lastLinkServed().pid, warm.pid);
    RunResult left = run("ls killed.so* 2>/dev/null | wc -l");
    EXPECT_EQ(left.out, "0\n") << "temporaries left behind";
  }
}

// Runs that write no ELF output (--version, -v, --help, -o -, -o /dev/null,
// an output that is a directory) in a used worker: each as stock's, and the
// link after each as stock's too.
TEST_F(WorkerReuseAttack, RunsWithoutAnOutputFileLeaveTheNextLinkStock) {
  writeFile("lib.c", "int lib_value(void) { return 42; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c lib.c && mkdir outdir")));
  const std::vector<std::string> runs = {
      "--version", "-v", "-shared lib.o -o - | cat > stdout.so",
      "-shared lib.o -o /dev/null", "-shared lib.o --Map=- -o mapped.so"};
  size_t reused = 0;
  for (const std::string &args : runs) {
    ASSERT_TRUE(link("-shared lib.o -o warm.so", "warm.so"));
    std::vector<std::string> outs;
    if (args.find("stdout.so") != std::string::npos)
      outs.push_back("stdout.so");
    if (args.find("mapped.so") != std::string::npos)
      outs.push_back("mapped.so");
    EXPECT_TRUE(
        linkBoth(elfLinkers(), "LINKD_NOCACHE=1 {ld} " + args, outs))
        << args;
    reused += lastLinkServed().reused > 0 ? 1 : 0;
    EXPECT_TRUE(link("-shared lib.o -o after.so", "after.so")) << args;
  }
  EXPECT_TRUE(sameDiagnostics(elfLinkers(), "-shared lib.o -o outdir"));
  EXPECT_TRUE(link("-shared lib.o -o after.so", "after.so"));
  EXPECT_GE(reused, 3u) << "the runs did not run in a used worker";
}

// 300 C++ hello-world links, back to back: the workers serve them (a few
// processes, not one each) and their memory stays bounded (LLD's
// thread-local arenas keep what each link allocated: ~45 KiB per link
// here; a worker retires at 384 MiB resident or 1,000 links).
TEST_F(WorkerReuseAttack, HundredsOfLinksKeepTheWorkersSmall) {
  writeFile("hello.cpp",
            "#include <iostream>\nint main() { std::cout << \"hello\\n\"; }\n");
  ASSERT_TRUE(exitedZero(run("clang++-19 -O1 -c hello.cpp")));
  // The driver's link line, run through ld.linkd without the driver.
  RunResult line = run("clang++-19 -### hello.o -o hello 2>&1 | tail -1");
  ASSERT_TRUE(exitedZero(line));
  std::string args = line.out.substr(line.out.find("\" ") + 2);
  writeFile("link.sh", "exec " + binPath("ld.linkd") + " " + args);
  RunResult loop = run("for i in $(seq 300); do LINKD_NOCACHE=1 sh link.sh "
                       "|| exit 1; done",
                       60s);
  ASSERT_TRUE(exitedZero(loop));
  auto lines = logLines(" reused=");
  ASSERT_GE(lines.size(), 300u);
  std::map<long, std::pair<long, long>> rssByPid; // pid -> first, last
  long most = 0;
  for (const std::string &l : lines) {
    std::smatch m;
    if (!std::regex_search(l, m,
                           std::regex("flavor=elf pid=(\\d+) .*rss_kib=(\\d+)"
                                      " .* reused=(\\d+) ")))
      continue;
    long pid = std::stol(m[1]), rss = std::stol(m[2]);
    most = std::max(most, std::stol(m[3]));
    auto [it, fresh] = rssByPid.try_emplace(pid, rss, rss);
    it->second.second = rss;
  }
  EXPECT_GE(most, 50) << "no worker served 50 links: " << rssByPid.size()
                       << " processes";
  for (const auto &[pid, rss] : rssByPid)
    EXPECT_LT(rss.second - rss.first, 32 << 10)
        << "worker " << pid << ": " << rss.first << " -> " << rss.second
        << " KiB";
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "LINKD_NOCACHE=1 clang++-19 --ld-path={ld} hello.o "
                       "-o hello",
                       {"hello"}));
  RunResult hello = run("./hello");
  EXPECT_EQ(hello.out, "hello\n") << describe(hello);
}

// gcc drives its linker with its LTO plugin's options (-plugin,
// -plugin-opt=.../lto-wrapper, -plugin-opt=-fresolution=...,
// -plugin-opt=-pass-through=...), which LLD ignores: such links may run in
// a used worker like any other (before, none of them ever did) and stay
// stock's.
TEST_F(WorkerReuseAttack, GccDrivenLinksRunInAUsedWorker) {
  ASSERT_TRUE(haveTool(tools::gcc));
  writeFile("hello.c", "#include <stdio.h>\nint main(void) { puts(\"gcc\"); "
                       "return 0; }\n");
  writeFile("f.c", "int f(int x) { return x + 1; }\n");
  ASSERT_TRUE(exitedZero(run("gcc -O2 -fPIC -c hello.c f.c && mkdir stock-ld "
                             "&& ln -s " + tools::ldLld.path + " stock-ld/ld")));
  LinkerPair viaB{binDir() + "/gcc/", path("stock-ld/")};
  size_t reused = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(linkBoth(viaB, "LINKD_NOCACHE=1 gcc -B{ld} hello.o -o hello",
                         {"hello"}));
    reused += lastLinkServed().reused > 0 ? 1 : 0;
    EXPECT_TRUE(linkBoth(viaB,
                         "LINKD_NOCACHE=1 gcc -B{ld} -shared f.o -o libf.so",
                         {"libf.so"}));
    reused += lastLinkServed().reused > 0 ? 1 : 0;
  }
  EXPECT_GE(reused, 4u) << "gcc's links did not run in a used worker";
  RunResult r = run("./hello");
  EXPECT_EQ(r.out, "gcc\n") << describe(r);
}

} // namespace
} // namespace linkd::e2e
