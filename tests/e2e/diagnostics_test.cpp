// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Failing links must fail exactly as stock LLD does (same stderr text, same
// exit status), and a failed link, even one that ends in fatal() on corrupt
// input, must not cost the daemon: the next link is served by the same
// daemon process.
#include "harness.h"

#include <random>

namespace linkd::e2e {
namespace {

class Diagnostics : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure())
      return;
    writeFile("ok.c", "void _start(void) {}\n");
    writeFile("main.c", R"(int foo(void);
void _start(void) { foo(); }
)");
    writeFile("foo.c", "int foo(void) { return 1; }\n");
    writeFile("foo_again.c", "int foo(void) { return 2; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -c ok.c main.c foo.c foo_again.c")));
  }

  // One good link through ld.linkd; returns the daemon serving it.
  DaemonStatus goodLink(const std::string &output) {
    RunResult r = run(binPath("ld.linkd") + " ok.o -o " + output);
    EXPECT_TRUE(exitedZero(r));
    EXPECT_EQ(r.err, "") << describe(r);
    auto st = daemonStatus();
    EXPECT_TRUE(st.has_value()) << "no daemon after a link";
    return st.value_or(DaemonStatus{});
  }

  // The comparison, bracketed by good links that must reach the same daemon.
  void expectSameDiagnosticsAndDaemonSurvives(const std::string &args) {
    DaemonStatus before = goodLink("before");
    EXPECT_TRUE(sameDiagnostics(elfLinkers(), args));
    DaemonStatus after = goodLink("after");
    EXPECT_EQ(after.pid, before.pid)
        << "the daemon was replaced\nbefore: " << before.json
        << "after: " << after.json;
    EXPECT_EQ(after.linksTotal, before.linksTotal + 2) << after.json;
    EXPECT_EQ(after.linksFailed, before.linksFailed + 1) << after.json;
    EXPECT_TRUE(sameBytes("before", "after"));
    EXPECT_TRUE(logLines("stopped").empty());
  }
};

TEST_F(Diagnostics, MissingInputFile) {
  expectSameDiagnosticsAndDaemonSurvives("ok.o no-such-file.o -o out");
}

TEST_F(Diagnostics, UndefinedSymbol) {
  expectSameDiagnosticsAndDaemonSurvives("main.o -o out");
}

TEST_F(Diagnostics, DuplicateSymbols) {
  expectSameDiagnosticsAndDaemonSurvives("main.o foo.o foo_again.o -o out");
}

TEST_F(Diagnostics, CorruptObjectFile) {
  // A valid ELF header followed by noise (fixed seed: reproducible).
  std::string bytes = readFile("foo.o").substr(0, 64);
  std::mt19937 rng(20261130);
  for (int i = 0; i < 8192; ++i)
    bytes.push_back(static_cast<char>(rng() & 0xff));
  writeFile("corrupt.o", bytes);
  expectSameDiagnosticsAndDaemonSurvives("main.o foo.o corrupt.o -o out");
}

TEST_F(Diagnostics, TruncatedObjectFile) {
  // Cut inside the section data: LLD's fatal() path rather than error().
  std::string whole = readFile("foo.o");
  writeFile("truncated.o", whole.substr(0, whole.size() / 3));
  expectSameDiagnosticsAndDaemonSurvives("main.o truncated.o -o out");
}

TEST_F(Diagnostics, ForcedColors) {
  expectSameDiagnosticsAndDaemonSurvives(
      "--color-diagnostics=always main.o -o out");
}

TEST_F(Diagnostics, ProgramNamePrefixesPerFlavor) {
  // Each client name prints the stock tool's name: ld.lld:, lld-link:,
  // ld64.lld:, wasm-ld:.
  EXPECT_TRUE(sameDiagnostics(elfLinkers(), "no-such-file.o -o out"));
  EXPECT_TRUE(sameDiagnostics(coffLinkers(), "no-such-file.obj /out:out.exe"));
  EXPECT_TRUE(sameDiagnostics(machoLinkers(),
                              "-arch arm64 -platform_version macos 11.0 11.0 "
                              "no-such-file.o -o out"));
  EXPECT_TRUE(sameDiagnostics(wasmLinkers(), "no-such-file.o -o out.wasm"));
  RunResult coff = run(binPath("lld-link.linkd") + " no-such-file.obj");
  EXPECT_EQ(coff.err.rfind("lld-link: error: ", 0), 0u) << describe(coff);
}

TEST_F(Diagnostics, SymlinksNamedLikeLldTools) {
  // A symlink to ld.linkd with one of LLD's names behaves as that tool, down
  // to the program name in its messages.
  ASSERT_TRUE(exitedZero(run("mkdir mine stock")));
  const std::pair<const char *, std::string> names[] = {
      {"ld", tools::ldLld.path},
      {"x86_64-linux-gnu-ld.lld", tools::ldLld.path},
      {"lld-link", tools::lldLink.path},
      {"wasm-ld", tools::wasmLd.path}};
  for (const auto &[name, stock] : names) {
    SCOPED_TRACE(name);
    std::string n = name;
    ASSERT_TRUE(exitedZero(run("ln -s " + binPath("ld.linkd") + " mine/" + n +
                               " && ln -s " + stock + " stock/" + n)));
    EXPECT_TRUE(sameDiagnostics({path("mine/" + n), path("stock/" + n)},
                                "no-such-file.o -o out"));
  }
}

TEST_F(Diagnostics, VersionOutput) {
  RunResult stock = run(tools::ldLld.path + " --version");
  RunResult mine = run(binPath("ld.linkd") + " --version");
  ASSERT_TRUE(exitedZero(stock));
  ASSERT_TRUE(exitedZero(mine));
  EXPECT_EQ(mine.out, stock.out);
  EXPECT_EQ(mine.err, stock.err);
}

} // namespace
} // namespace linkd::e2e
