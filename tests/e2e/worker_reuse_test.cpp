// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Reusable link workers (daemon/linkd-lld/link_worker.h): one process runs
// ELF links one after another. Every link must still be byte-identical to
// stock ld.lld, with the same diagnostics, whatever ran in the worker
// before it; links that could leave state behind must get a fresh process,
// and the worker after them too. The log's `pid=` (the link's process) and
// `reused=` (links that process ran before) say which process ran a link.
#include "harness.h"

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace linkd::e2e {
namespace {

class WorkerReuse : public E2eTest {
protected:
  // Objects the links below use: C with TLS, a constructor and a shared
  // library's worth of exports, an i386 one, an AArch64 one.
  void compileObjects() {
    writeFile("main.c", R"(#include <stdio.h>
extern int lib_value(void);
static __thread int counter = 3;
__attribute__((constructor)) static void early(void) { counter += 1; }
int main(void) {
  printf("main %d %d\n", counter, lib_value());
  return 0;
}
)");
    writeFile("lib.c", R"(int lib_hidden_helper(int x) { return x * 7; }
int lib_value(void) { return lib_hidden_helper(6); }
__attribute__((weak)) int lib_weak = 5;
)");
    writeFile("start.s", R"(.globl _start
.section .text._start,"ax",@progbits
_start:
  xor %edi, %edi
  mov $60, %eax
  syscall
.section .text.unused,"ax",@progbits
unused:
  ret
.section .data.keep,"aw",@progbits
.quad _start
)");
    writeFile("start32.s", ".globl _start\n_start:\n  ret\n");
    writeFile("vers.map", "LIBX_1 { global: lib_value; local: *; };\n");
    writeFile("script.ld", R"(SECTIONS {
  . = 0x400000 + SIZEOF_HEADERS;
  .text : { *(.text*) }
  .data : { *(.data*) }
  /DISCARD/ : { *(.comment) }
}
)");
    ASSERT_TRUE(exitedZero(run(
        "clang-19 -O2 -fPIC -c main.c lib.c && clang-19 -c start.s -o start.o "
        "&& clang-19 --target=i386-linux-gnu -c start32.s -o start32.o "
        "&& clang-19 --target=aarch64-linux-gnu -O2 -fPIC -c lib.c "
        "-o lib_arm.o")));
  }
};

// Links that differ in what LLD's state would remember, one after another
// through one daemon, twice in opposite orders: each must match stock.
TEST_F(WorkerReuse, DiverseLinksInSequenceMatchStock) {
  compileObjects();
  const std::vector<std::pair<std::string, std::string>> links = {
      {"shared", "-shared -soname libx.so.1 -rpath /opt/x/lib "
                 "--version-script vers.map -z now -z relro lib.o -o lib.so"},
      {"gc", "--gc-sections --icf=all -Map=gc.map start.o -o gc"},
      {"relr", "-pie --pack-dyn-relocs=relr -z separate-code start.o -o relr"},
      {"retpoline", "-z retpolineplt -z now -shared lib.o -o retpoline.so"},
      {"ibt", "-z force-ibt -z ibtplt -shared lib.o -o ibt.so"},
      {"script", "-T script.ld --build-id=sha1 start.o -o script"},
      {"reloc", "-r lib.o start.o -o reloc.o"},
      {"defsym", "--export-dynamic --defsym=alias=_start --hash-style=sysv "
                 "start.o -o defsym"},
      {"i386", "-m elf_i386 start32.o -o i386"},
      {"static", "-static -e _start start.o -o static"},
  };
  for (bool reverse : {false, true}) {
    std::vector<std::pair<std::string, std::string>> order = links;
    if (reverse)
      std::reverse(order.begin() + 1, order.end()); // lib.so stays first
    for (const auto &[name, args] : order) {
      std::vector<std::string> outputs;
      std::smatch m;
      std::regex_search(args, m, std::regex("-o (\\S+)$"));
      outputs.push_back(m[1]);
      if (name == "gc")
        outputs.push_back("gc.map");
      EXPECT_TRUE(linkBoth(elfLinkers(),
                           "LINKD_NOCACHE=1 {ld} " + args, outputs))
          << name << (reverse ? " (second round)" : "");
    }
  }
  // The dynamic program built from the shared library runs.
  ASSERT_TRUE(linkBoth(
      elfLinkers(),
      "LINKD_NOCACHE=1 clang-19 --ld-path={ld} main.o ./lib.so -o main "
      "-Wl,-rpath," + dir,
      {"main"}));
  RunResult r = run("ln -sf lib.so libx.so.1 && ./main");
  EXPECT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_EQ(r.out, "main 4 42\n");
  // Most of these ran in a used worker (not all: the first, and any that
  // came while the worker was still cleaning up).
  auto lines = logLines(" reused=");
  size_t reused = 0;
  for (const std::string &l : lines)
    if (l.find(" reused=0 ") == std::string::npos)
      ++reused;
  EXPECT_GE(reused, lines.size() / 2) << lines.size() << " links";
}

// A link that may leave state (an LLVM option, an LTO input, an AArch64
// target, an error) runs in no used worker, and its process serves no
// other link.
TEST_F(WorkerReuse, LinksThatMayLeaveStateGetAProcessOfTheirOwn) {
  compileObjects();
  writeFile("lto.c", "int lto_fn(int x) { return x + 1; }\n");
  writeFile("undef.c", "int missing(void); int _start(void) { return missing(); }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -flto -fPIC -c lto.c && "
                             "clang-19 -O2 -c undef.c")));
  auto plain = [&](const std::string &out) {
    EXPECT_TRUE(linkBoth(elfLinkers(),
                         "LINKD_NOCACHE=1 {ld} -shared lib.o -o " + out,
                         {out}));
    return lastLinkServed();
  };
  plain("warm1.so");
  LinkServed warm = plain("warm2.so");
  EXPECT_GE(warm.reused, 1) << "two plain links in a row: the second "
                               "should run in the first one's worker";
  struct Case {
    std::string name, args;
    bool fails = false;
  };
  const std::vector<Case> cases = {
      {"mllvm", "-mllvm -debug-pass=Structure -shared lib.o -o mllvm.so"},
      {"lto", "-shared lto.o -o lto.so"},
      {"aarch64", "-shared lib_arm.o -o arm.so"},
      {"undefined", "undef.o -o undef", true},
  };
  for (const Case &c : cases) {
    if (c.fails)
      EXPECT_TRUE(sameDiagnostics(elfLinkers(), c.args)) << c.name;
    else
      EXPECT_TRUE(linkBoth(elfLinkers(), "LINKD_NOCACHE=1 {ld} " + c.args,
                           {c.args.substr(c.args.rfind(' ') + 1)}))
          << c.name;
    LinkServed odd = lastLinkServed();
    LinkServed next = plain("after-" + c.name + ".so");
    EXPECT_NE(next.pid, odd.pid)
        << c.name << ": the link after it ran in its process";
    if (c.name == "mllvm")
      EXPECT_EQ(odd.reused, 0) << "an -mllvm link ran in a used worker";
  }
}

// LLD keeps symbols like _GLOBAL_OFFSET_TABLE_, __rela_iplt_* and _end in
// static pointers it sets only when a link has them (the worker clears
// them before each link: lld_entry.cpp). Without that, the second link of
// each pair below reads the first one's, freed: an extra .got.plt, a crash
// in -r, writes to freed memory.
TEST_F(WorkerReuse, StaticPointersOfOneLinkDoNotReachTheNext) {
  writeFile("got_ref.s", ".globl _start\n_start:\n"
                         "  leaq _GLOBAL_OFFSET_TABLE_(%rip), %rax\n  ret\n");
  writeFile("plain.s", ".globl _start\n_start:\n  movl $60, %eax\n"
                       "  syscall\n.data\n.quad 1\n");
  writeFile("iplt_ref.s", ".globl _start\n_start:\n  ret\n"
                          ".weak __rela_iplt_start\n.weak __rela_iplt_end\n"
                          ".data\n.quad __rela_iplt_start\n"
                          ".quad __rela_iplt_end\n.quad _end\n");
  writeFile("pie.s", ".globl _start\n_start:\n  ret\n.data\np: .quad _start\n");
  writeFile("script.lds", "SECTIONS { . = 0x10000; .text : { *(.text) } "
                          ".data : { *(.data) } }\n");
  for (const char *f : {"got_ref", "plain", "iplt_ref", "pie"})
    ASSERT_TRUE(exitedZero(run(std::string("clang-19 -c ") + f + ".s")));
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"got_ref.o -o got1", "plain.o -o plain"},
      {"got_ref.o -o got2", "-r plain.o -o plain_r.o"},
      {"-static iplt_ref.o -o static1", "-pie pie.o -o pie"},
      {"-static iplt_ref.o -o static2", "plain.o -T script.lds -o script"},
  };
  size_t reusedSeconds = 0;
  for (const auto &pair : pairs)
    for (int i = 0; i < 2; ++i) {
      const std::string &args = i == 0 ? pair.first : pair.second;
      std::string out = args.substr(args.rfind(' ') + 1);
      EXPECT_TRUE(linkBoth(elfLinkers(), "LINKD_NOCACHE=1 {ld} " + args,
                           {out}))
          << args;
      if (i == 1 && lastLinkServed().reused > 0)
        ++reusedSeconds;
    }
  // The stock link before each runs long enough for the worker to be back.
  EXPECT_GE(reusedSeconds, 3u) << "the second links did not run in a used "
                                  "worker: the test proves nothing";
}

// --color-diagnostics=always sets LLVM's stream state; the next link's
// diagnostics are stock's again.
TEST_F(WorkerReuse, ColourSettingsDoNotCarryOver) {
  compileObjects();
  for (const char *colour : {"--color-diagnostics=always", "", "--color-diagnostics=never", ""}) {
    std::string args = std::string(colour) +
                       " --warn-common -z unknown-keyword -shared lib.o -o w.so";
    EXPECT_TRUE(linkBoth(elfLinkers(), "LINKD_NOCACHE=1 {ld} " + args,
                         {"w.so"}))
        << colour;
  }
}

} // namespace
} // namespace linkd::e2e

namespace linkd::e2e {
namespace {

// The 8-byte guard of LLD's `static Undefined dummy` in
// postScanRelocations() (lld_entry.cpp) in process `pid`, read through
// /proc/PID/mem at its address in linkd-lld; nullopt if it cannot be read.
std::optional<uint64_t>
tlsDummyGuard(pid_t pid,
              const std::function<RunResult(const std::string &)> &sh) {
  const char *name = "_ZGVZN3lld3elf19postScanRelocationsEvE5dummy";
  RunResult nm = sh(tools::nm.path + " " + binPath("linkd-lld") + " | grep ' " +
                    name + "$'");
  std::istringstream sym(nm.out);
  std::string value;
  if (!(sym >> value))
    return std::nullopt;
  uint64_t addr = std::stoull(value, nullptr, 16);
  std::string exe = sh("readlink /proc/" + std::to_string(pid) + "/exe").out;
  exe = exe.substr(0, exe.find('\n'));
  // PIE: the symbol's value is relative to the first mapping of the file.
  if (sh(tools::readelf.path + " -h " + binPath("linkd-lld")).out.find("DYN") !=
      std::string::npos) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    uint64_t base = 0;
    while (std::getline(maps, line))
      if (line.size() > exe.size() &&
          line.compare(line.size() - exe.size(), exe.size(), exe) == 0) {
        base = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
        break;
      }
    if (!base)
      return std::nullopt;
    addr += base;
  }
  std::ifstream mem("/proc/" + std::to_string(pid) + "/mem", std::ios::binary);
  mem.seekg(static_cast<std::streamoff>(addr));
  uint64_t guard = 0;
  if (!mem.read(reinterpret_cast<char *>(&guard), sizeof(guard)))
    return std::nullopt;
  return guard;
}

// LLD builds the static TLS-index symbol of postScanRelocations() in the
// first link with a local-dynamic TLS reference (here an x86-64 -shared
// library) from that link's internal file, which the link's clean-up frees.
// The worker resets its guard before every link, so the next link starts
// as in a fresh process (the reset link does not reach it: guard 0).
TEST_F(WorkerReuse, TheTlsIndexStaticOfOneLinkIsResetForTheNext) {
  // Two variables: with one, clang makes the access general-dynamic.
  writeFile("ld_tls.c", "static __thread int t, u;\n"
                        "void set_t(int a, int b) { t = a; u = b; }\n"
                        "int get_t(void) { return t + u; }\n");
  writeFile("plain.s", ".globl _start\n_start:\n  ret\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O1 -fPIC -ftls-model=local-dynamic "
                             "-c ld_tls.c && clang-19 -c plain.s")));
  ASSERT_NE(run(tools::readelf.path + " -r ld_tls.o").out.find("TLSLD"),
            std::string::npos);
  auto sh = [this](const std::string &c) { return run(c); };
  bool proved = false;
  for (int attempt = 0; attempt < 5 && !proved; ++attempt) {
    std::string n = std::to_string(attempt);
    ASSERT_TRUE(
        linkBoth(elfLinkers(),
                 "LINKD_NOCACHE=1 {ld} -shared ld_tls.o -o libt" + n + ".so",
                 {"libt" + n + ".so"}));
    LinkServed first = lastLinkServed();
    std::optional<uint64_t> before = tlsDummyGuard(first.pid, sh);
    if (!before)
      continue; // that process did not stay for another link
    ASSERT_NE(*before, 0u) << "the local-dynamic link did not build it";
    ASSERT_TRUE(linkBoth(elfLinkers(),
                         "LINKD_NOCACHE=1 {ld} plain.o -o plain" + n,
                         {"plain" + n}));
    LinkServed second = lastLinkServed();
    if (second.pid != first.pid || second.reused <= first.reused)
      continue; // another process ran it: try again
    std::optional<uint64_t> after = tlsDummyGuard(second.pid, sh);
    if (!after)
      continue;
    EXPECT_EQ(*after, 0u) << "the guard kept the first link's symbol";
    proved = true;
  }
  EXPECT_TRUE(proved) << "the second link never ran in the first one's "
                         "worker: the test proves nothing";
}

} // namespace
} // namespace linkd::e2e
