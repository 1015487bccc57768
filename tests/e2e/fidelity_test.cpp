// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Drop-in fidelity: what a user sees of a link through linkd is what stock
// LLD shows, byte for byte, with stdout and stderr going to one file (`> out
// 2>&1`), a pipe or a terminal: the order of the two streams, live and from
// the cache; the environment the link reads (the client's, not the daemon's);
// and a crash (the same report, the same status, run once).
//
// Both tools are invoked by the name `ld.lld` (or `ld64.lld`) found on PATH:
// stock from /usr/lib/llvm-19/bin, linkd from a directory of symlinks to its
// clients in front of it. So the program name in diagnostics and in a crash's
// "Program arguments" is the same, and both find the same llvm-symbolizer.
#include "harness.h"

#include <csignal>
#include <regex>
#include <sstream>

#include <unistd.h>

namespace linkd::e2e {
namespace {

constexpr int kRepetitions = 20;

class Fidelity : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure())
      return;
    ASSERT_TRUE(exitedZero(run("mkdir -p clients && ln -s " +
                               binPath("ld.linkd") + " clients/ld.lld && ln -s " +
                               binPath("ld64.linkd") + " clients/ld64.lld")));
  }

  // Shell prefixes that make `ld.lld` the linkd client or the stock tool.
  std::string linkd() const {
    return "PATH=" + path("clients") + ":/usr/lib/llvm-19/bin:$PATH ";
  }
  static std::string stock() { return "PATH=/usr/lib/llvm-19/bin:$PATH "; }

  // How a command ended, for comparing two of them.
  static std::string ending(const RunResult &r) {
    return "exit " + std::to_string(r.exitCode) + " signal " +
           std::to_string(r.termSignal);
  }

  // Runs `linkd() + command` kRepetitions times; each time `outFile` must
  // equal `expectedFile` and the command end as `expected` did. Returns how
  // many runs differed.
  int repeatAndCompare(const std::string &command, const std::string &outFile,
                       const std::string &expectedFile,
                       const RunResult &expected) {
    int differed = 0;
    std::string want = readFile(expectedFile);
    for (int i = 0; i < kRepetitions; ++i) {
      RunResult r = run(linkd() + command);
      std::string got = readFile(outFile);
      if (got != want || ending(r) != ending(expected)) {
        if (differed == 0)
          ADD_FAILURE() << "run " << i << ": " << ending(r) << " vs stock "
                        << ending(expected) << "\n--- linkd:\n"
                        << got << "--- stock:\n"
                        << want;
        ++differed;
      }
    }
    return differed;
  }

  long long stat(const std::string &name) {
    auto s = cacheStats();
    auto it = s.find(name);
    return it == s.end() ? -1 : it->second;
  }
};

// A crash report with what must differ taken out: addresses, module paths
// and file:line of each frame, and the frames from the tool's own main on
// (stock's lld_main and main, the link child's linkd:: frames and zygote).
std::string normalizedCrash(const std::string &text) {
  static const std::regex frame(R"(^ *#[0-9]+ 0x[0-9a-f]+ ?(.*)$)");
  static const std::regex module(R"( ?\(/[^ ]*\+0x[0-9a-f]+\)$)");
  static const std::regex fileLine(R"( [^ ]*:[0-9]+(:[0-9]+)?$)");
  std::istringstream in(text);
  std::ostringstream out;
  std::string line;
  bool belowMain = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, frame)) {
      out << line << "\n";
      continue;
    }
    std::string fn = std::regex_replace(m[1].str(), module, "");
    fn = std::regex_replace(fn, fileLine, "");
    belowMain = belowMain || fn.starts_with("lld_main(") || fn == "main" ||
                fn.starts_with("linkd::");
    if (!belowMain)
      out << "#frame " << fn << "\n";
  }
  return out.str();
}

TEST_F(Fidelity, MapThenErrorInOneFile) {
  // LLD writes the map, flushes it, then reports that .text overflows
  // (ELF/Writer.cpp): stock's file has the map first, every time.
  writeFile("i.s", "nop\n");
  writeFile("t.script", "SECTIONS { .text : { . = 0xffffffff; *(.text*); } }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -target i686-linux-gnu -c i.s -o i.o")));
  std::string cmd = "ld.lld -T t.script i.o -M -o /dev/null";
  RunResult s = run(stock() + cmd + " > stock.out 2>&1");
  ASSERT_EQ(s.exitCode, 1) << describe(s);
  ASSERT_LT(readFile("stock.out").find("VMA"),
            readFile("stock.out").find("error:"))
      << readFile("stock.out");
  EXPECT_EQ(repeatAndCompare(cmd + " > out 2>&1", "out", "stock.out", s), 0);
}

TEST_F(Fidelity, WarningThenMapLiveAndFromCache) {
  writeFile("x.c", "void _start(void) {}\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c x.c")));
  std::string cmd = "ld.lld -z foo x.o -M -o h.out > o 2>&1";
  RunResult s = run(stock() + cmd);
  ASSERT_TRUE(exitedZero(s));
  ASSERT_EQ(readFile("o").find("ld.lld: warning: unknown -z value: foo"), 0u);
  ASSERT_TRUE(exitedZero(run("mv o stock.o && mv h.out h.stock")));
  // Live: 20 links that neither look up nor store.
  EXPECT_EQ(repeatAndCompare("ld.lld --linkd-no-cache -z foo x.o -M -o h.out "
                             "> o 2>&1",
                             "o", "stock.o", s),
            0);
  EXPECT_TRUE(sameBytes("h.stock", "h.out"));
  // One link stores the result (after answering: wait for it), then 20 hits
  // replay the order.
  ASSERT_TRUE(exitedZero(run(linkd() + cmd)));
  ASSERT_EQ(statReaching("results_stored", 1), 1);
  EXPECT_EQ(repeatAndCompare(cmd, "o", "stock.o", s), 0);
  EXPECT_TRUE(sameBytes("h.stock", "h.out"));
  EXPECT_EQ(stat("hits"), kRepetitions);
}

// --trace names each input on stdout as LLD reads it, and each of c0.o ...
// c7.o defines the common symbol x again: --warn-common warns on stderr
// right after the file's name, so the streams alternate within
// microseconds; then -y's line, one -z force-ibt warning per file, the map.
class TraceInterleaving : public Fidelity {
protected:
  void SetUp() override {
    Fidelity::SetUp();
    if (HasFatalFailure())
      return;
    writeFile("a.c", "void _start(void) {}\n");
    std::string objects = "a.o";
    for (int i = 0; i < 8; ++i) {
      std::string c = "c" + std::to_string(i);
      writeFile(c + ".c", "int x; int f" + std::to_string(i) +
                              "(void) { return x; }\n");
      ASSERT_TRUE(exitedZero(run("clang-19 -fcommon -c " + c + ".c")));
      objects += " " + c + ".o";
    }
    ASSERT_TRUE(exitedZero(run("clang-19 -c a.c")));
    args = "ld.lld -z foo --trace -y x --warn-common -z force-ibt " + objects +
           " -M -o t.out";
  }
  std::string args;
};

TEST_F(TraceInterleaving, OnAPipe) {
  // A daemon (and its link children) on one CPU and never preempting on a
  // wakeup (SCHED_BATCH), as on a busy machine: the child writes both
  // streams before the daemon reads either (two pipes lose the order 20 of
  // 20 times then).
  RunResult started =
      run(linkd() + "taskset -c 0 chrt --batch 0 ld.lld --version");
  ASSERT_TRUE(exitedZero(started)) << describe(started);
  RunResult s = run(stock() + args + " 2>&1 | cat > stock.out");
  ASSERT_TRUE(exitedZero(s));
  EXPECT_EQ(repeatAndCompare(args + " 2>&1 | cat > out", "out", "stock.out", s),
            0);
}

TEST_F(TraceInterleaving, OnATerminal) {
  // script(1) runs the link on a pseudo-terminal (stdout and stderr both the
  // terminal: LLVM's stdout is unbuffered there, and diagnostics coloured)
  // and copies what it shows to a file.
  std::string term = "TERM=xterm script -qefc '" + args + "' /dev/null";
  RunResult s = run(stock() + term + " > stock.out");
  ASSERT_TRUE(exitedZero(s)) << describe(s);
  ASSERT_NE(readFile("stock.out").find("\x1b["), std::string::npos)
      << "no colours: not a terminal?";
  EXPECT_EQ(repeatAndCompare(term + " > out", "out", "stock.out", s), 0);
}

TEST_F(Fidelity, MachOOsoPrefixTildeIsTheClientsHome) {
  ASSERT_TRUE(haveTool(tools::ld64Lld));
  writeFile("t.c", "int f(void) { return 1; }\n");
  ASSERT_TRUE(exitedZero(
      run("clang-19 -g -target x86_64-apple-macos11 -c t.c -o t.o")));
  std::string args = "ld64.lld -arch x86_64 -platform_version macos 11.0 11.0 "
                     "-dylib t.o -oso_prefix '~' -o t.dylib";
  // Two homes in turn: the key holds HOME for this link, so the second is
  // not served the first one's bytes.
  for (std::string home : {dir, dir + "/clients"}) {
    SCOPED_TRACE("HOME=" + home);
    RunResult s = run("HOME=" + home + " " + stock() + args + " > stock.out 2>&1");
    ASSERT_TRUE(exitedZero(s)) << readFile("stock.out");
    ASSERT_TRUE(exitedZero(run("mv t.dylib t.stock && " + tools::nm.path +
                               " -a t.stock | grep OSO > oso.stock")));
    RunResult r = run("HOME=" + home + " " + linkd() + args + " > out 2>&1");
    ASSERT_TRUE(exitedZero(r)) << readFile("out");
    EXPECT_EQ(readFile("out"), readFile("stock.out"));
    EXPECT_TRUE(sameBytes("t.stock", "t.dylib"));
    ASSERT_TRUE(exitedZero(
        run(tools::nm.path + " -a t.dylib | grep OSO > oso.linkd")));
    EXPECT_EQ(readFile("oso.linkd"), readFile("oso.stock"));
    // The first home is the object's directory: N_OSO keeps only "/t.o".
    if (home == dir)
      EXPECT_NE(readFile("oso.stock").find(" /t.o"), std::string::npos)
          << readFile("oso.stock");
  }
}

// A link child that crashes (LLVM's fatal error: report_fatal_error, then
// abort) prints stock's report and ends as stock ends, and runs once.
class Crash : public Fidelity {
protected:
  void SetUp() override {
    Fidelity::SetUp();
    if (HasFatalFailure())
      return;
    writeFile("lto.c", "int f(void) { return 1; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -flto -c lto.c -o lto.o")));
  }
  const std::string args =
      "ld.lld lto.o --lto-newpm-passes=iamnotapass -shared -o /dev/null";

  // Stock's and linkd's report and ending, compared; the child ran once.
  void expectStockCrash(const std::string &env) {
    RunResult s = run(env + stock() + args + " > stock.err 2>&1");
    ASSERT_TRUE(s.termSignal == SIGABRT || s.exitCode == 128 + SIGABRT)
        << describe(s) << readFile("stock.err");
    auto before = daemonStatus();
    RunResult r = run(env + linkd() + args + " > out.err 2>&1");
    EXPECT_EQ(ending(r), ending(s));
    std::string got = readFile("out.err"), want = readFile("stock.err");
    EXPECT_EQ(normalizedCrash(got), normalizedCrash(want))
        << "--- linkd:\n" << got << "--- stock:\n" << want;
    EXPECT_EQ(linesStartingWith(got, "LLVM ERROR").size(), 1u) << got;
    auto after = daemonStatus();
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->linksCrashed, (before ? before->linksCrashed : 0) + 1)
        << after->json;
    EXPECT_EQ(after->linksTotal, (before ? before->linksTotal : 0) + 1)
        << after->json;
  }
};

TEST_F(Crash, ReportAndStatusAsStockRunOnce) {
  expectStockCrash("");
  // Every frame up to LLD's entry is there, symbolized.
  EXPECT_NE(normalizedCrash(readFile("out.err"))
                .find("#frame lld::elf::BitcodeCompiler::compile()"),
            std::string::npos)
      << readFile("out.err");
}

TEST_F(Crash, DaemonStartedWithATemporaryDirectorySinceRemoved) {
  // The daemon outlives the client that started it (a CI job with a TMPDIR
  // of its own): the crash reporter must use the crashing client's.
  writeFile("ok.c", "void _start(void) {}\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c ok.c && mkdir tmpA")));
  RunResult first =
      run("TMPDIR=" + path("tmpA") + " " + linkd() + "ld.lld ok.o -o ok");
  ASSERT_TRUE(exitedZero(first)) << describe(first);
  ASSERT_TRUE(exitedZero(run("rmdir tmpA")));
  expectStockCrash("");
}

TEST_F(Crash, UnsymbolizedWhenTheClientSaysSo) {
  // The daemon starts from a client without the variable.
  ASSERT_TRUE(exitedZero(run(linkd() + "ld.lld --version")));
  std::string env = "LLVM_DISABLE_SYMBOLIZATION=1 ";
  RunResult s = run(env + stock() + args + " > stock.err 2>&1");
  RunResult r = run(env + linkd() + args + " > out.err 2>&1");
  EXPECT_EQ(ending(r), ending(s));
  std::string got = readFile("out.err"), want = readFile("stock.err");
  // Stock's report down to the frames, which LLVM lists without the
  // symbolizer ("Stack dump without symbol names ...", dladdr's names).
  const std::string unsymbolized = "Stack dump without symbol names";
  auto head = [&](const std::string &t) {
    size_t at = t.find(unsymbolized);
    return at == std::string::npos ? t : t.substr(0, t.find('\n', at));
  };
  ASSERT_NE(want.find(unsymbolized), std::string::npos) << want;
  EXPECT_EQ(head(got), head(want));
}

TEST_F(Crash, ForcedByFORCE_LLD_DIAGNOSTICS_CRASH) {
  writeFile("ok.c", "void _start(void) {}\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c ok.c")));
  std::string cmd = "FORCE_LLD_DIAGNOSTICS_CRASH=1 ld.lld ok.o -o ok";
  RunResult s = run(stock() + cmd + " > stock.err 2>&1");
  ASSERT_TRUE(s.termSignal != 0 || s.exitCode > 128) << describe(s);
  // Twice: the variable is in the key, so a stored link is no answer.
  for (int i = 0; i < 2; ++i) {
    RunResult plain = run(linkd() + "ld.lld ok.o -o ok");
    ASSERT_TRUE(exitedZero(plain)) << describe(plain);
    RunResult r = run(linkd() + cmd + " > out.err 2>&1");
    EXPECT_EQ(ending(r), ending(s));
    EXPECT_EQ(normalizedCrash(readFile("out.err")),
              normalizedCrash(readFile("stock.err")));
  }
}

// LLD's own lit suite runs every tool with LLD_IN_TEST set: stock's main then
// runs the driver that many times (output from the last run only) and
// returns, and the exit flushes the last of stdout. ELF/driver.test checks
// --help's last line, ELF/linkerscript/print-memory-usage.s the table
// --print-memory-usage prints at the very end.
class InTest : public Fidelity, public ::testing::WithParamInterface<int> {
protected:
  std::string env() const {
    return "LLD_IN_TEST=" + std::to_string(GetParam()) + " ";
  }
};

TEST_P(InTest, HelpEndsWithTheSupportedTargets) {
  RunResult s = run(env() + stock() + "ld.lld --help");
  RunResult r = run(env() + linkd() + "ld.lld --help");
  ASSERT_TRUE(exitedZero(s)) << describe(s);
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  ASSERT_NE(s.out.find("supported targets: elf"), std::string::npos);
  EXPECT_EQ(r.out, s.out);
  EXPECT_EQ(r.err, s.err);
}

TEST_P(InTest, PrintMemoryUsageOfALinkerScriptRegion) {
  writeFile("a.s", ".text\n.globl _start\n_start:\n  .zero 256\n"
                   ".data\n  .zero 32\n");
  writeFile("a.lds", "MEMORY {\n  ROM (rx) : ORIGIN = 0x1000, LENGTH = 4K\n"
                     "  RAM (rwx) : ORIGIN = 0x8000, LENGTH = 1K\n}\n"
                     "SECTIONS {\n  .text : { *(.text) } > ROM\n"
                     "  .data : { *(.data) } > RAM\n}\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c a.s -o a.o")));
  std::string link = "ld.lld --print-memory-usage -T a.lds a.o -o ";
  RunResult s = run(env() + stock() + link + "stock.out");
  RunResult r = run(env() + linkd() + link + "linkd.out");
  ASSERT_TRUE(exitedZero(s)) << describe(s);
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  ASSERT_NE(s.out.find("Memory region"), std::string::npos) << s.out;
  EXPECT_EQ(r.out, s.out);
  EXPECT_EQ(r.err, s.err);
  EXPECT_TRUE(sameBytes("stock.out", "linkd.out"));
}

INSTANTIATE_TEST_SUITE_P(LldInTest, InTest, ::testing::Values(1, 2));

} // namespace
} // namespace linkd::e2e
