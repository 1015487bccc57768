// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The archivers end to end: ar.linkd, ranlib.linkd and lib.linkd (and
// symlinks with the stock names) against llvm-ar-19, llvm-ranlib-19 and
// llvm-lib-19 on the same inputs. Every comparison runs the same shell
// commands twice, in two copies of the inputs: once with the stock tools
// first in PATH under a name, once with linkd's clients under the same name,
// so even diagnostics that carry the program name must match byte for byte,
// as must stdout, the exit status and every file. The cache is checked
// through `linkd stats --json` (archive requests have counters of their own).
#include "harness.h"

#include <sys/stat.h>

#include <filesystem>

namespace linkd::e2e {
namespace {

namespace fs = std::filesystem;

const Tool kLlvmAr{"/usr/lib/llvm-19/bin/llvm-ar", "llvm-19"};
const Tool kLlvmLib{"/usr/lib/llvm-19/bin/llvm-lib", "llvm-19"};
const Tool kLlvmRanlib{"/usr/lib/llvm-19/bin/llvm-ranlib", "llvm-19"};

constexpr std::string_view kWarning = "linkd: warning: ";

class Archiver : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure())
      return;
    for (const Tool *t : {&kLlvmAr, &kLlvmLib, &kLlvmRanlib})
      ASSERT_TRUE(haveTool(*t));
    for (const char *name : {"ar.linkd", "ranlib.linkd", "lib.linkd"})
      ASSERT_EQ(access(binPath(name).c_str(), X_OK), 0)
          << binPath(name) << " is missing: build linkd first";
    // Two directories of tools with the same names: stock and linkd.
    struct Name {
      const char *name;
      const Tool &stock;
      const char *client;
    };
    const Name names[] = {{"ar", kLlvmAr, "ar.linkd"},
                          {"llvm-ar", kLlvmAr, "ar.linkd"},
                          {"ranlib", kLlvmRanlib, "ranlib.linkd"},
                          {"llvm-ranlib", kLlvmRanlib, "ranlib.linkd"},
                          {"lib", kLlvmLib, "lib.linkd"},
                          {"llvm-lib", kLlvmLib, "lib.linkd"},
                          {"lld-link", tools::lldLink, "lld-link.linkd"}};
    fs::create_directories(path("stockbin"));
    fs::create_directories(path("linkdbin"));
    for (const Name &n : names) {
      fs::create_symlink(n.stock.path, path(std::string("stockbin/") + n.name));
      fs::create_symlink(binPath(n.client),
                         path(std::string("linkdbin/") + n.name));
    }
    compileInputs();
  }

  // Inputs in in/: ELF C and C++ objects, Mach-O, COFF, LLVM bitcode (with
  // module inline asm, whose symbols need the targets' asm parsers), a
  // truncated object and a corrupt archive.
  void compileInputs() {
    fs::create_directories(path("in/sub"));
    writeFile("in/a.c", "int fa(void) { return 1; }\nint ga = 3;\n"
                        "static int hidden(void) { return 2; }\n"
                        "int use(void) { return hidden(); }\n");
    writeFile("in/b.c", "int fb(void) { return 2; }\n");
    writeFile("in/b_new.c", "int fb(void) { return 22; }\n");
    writeFile("in/c.cpp", R"(#include <string>
std::string cs(int x) { return std::to_string(x); }
template <class T> struct W { static T v; virtual ~W() {} };
template <class T> T W<T>::v;
int &wi = W<int>::v;
W<long> wl;
)");
    writeFile("in/asm.c", "__asm__(\".globl asm_sym\\nasm_sym:\\n ret\\n\");\n"
                          "int fbc(void) { return 7; }\n");
    writeFile("in/text.txt", "plain text member\n");
    ASSERT_TRUE(exitedZero(run(
        "cd in && clang-19 -O1 -c a.c b.c && clang++-19 -O1 -c c.cpp && "
        "clang-19 -O1 -c b_new.c && cp a.o sub/a.o && "
        "clang-19 --target=x86_64-apple-macos11 -c a.c -o ma.o && "
        "clang-19 --target=x86_64-apple-macos11 -c b.c -o mb.o && "
        "clang-19 --target=x86_64-pc-windows-msvc -c a.c -o wa.obj && "
        "clang-19 --target=x86_64-pc-windows-msvc -c b.c -o wb.obj && "
        "clang-19 -flto -O1 -c a.c -o bca.o && "
        "clang-19 -flto=thin -O1 -c asm.c -o bcasm.o && "
        "clang-19 --target=x86_64-pc-windows-msvc -flto -c b.c -o wbc.obj && "
        "head -c 300 a.o > corrupt.o && printf '!<arch>\\ngarbage' > bad.a")));
  }

  // Runs `commands` (shell, in order) in a fresh copy of in/ named `name`
  // twice: with the stock tools and with linkd's, under the same names.
  // Checks each command's status, stdout and stderr, that linkd's ran
  // through the daemon, and that the copies end with the same files (same
  // bytes, same mode bits).
  ::testing::AssertionResult
  sameAsStock(const std::string &name, const std::vector<std::string> &commands,
              const std::string &env = "TZ=UTC") {
    std::vector<RunResult> results[2];
    const char *kinds[2] = {"stock", "linkd"};
    long long requestsBefore = 0;
    for (int k = 0; k < 2; ++k) {
      std::string d = name + "." + kinds[k];
      if (!exitedZero(run("rm -rf " + d + " && cp -a in " + d)))
        return ::testing::AssertionFailure() << "cannot copy the inputs";
      if (k == 1)
        requestsBefore = cacheStats()["archive_requests"];
      for (const std::string &c : commands)
        results[k].push_back(run("cd " + d + " && export PATH=" +
                                 path(std::string(kinds[k]) + "bin") +
                                 ":$PATH " + env + " && " + c));
    }
    for (size_t i = 0; i < commands.size(); ++i) {
      const RunResult &s = results[0][i], &l = results[1][i];
      if (s.exitCode != l.exitCode || s.out != l.out || s.err != l.err)
        return ::testing::AssertionFailure()
               << "step " << i << " differs from stock\nlinkd:\n"
               << describe(l) << "stock:\n"
               << describe(s);
    }
    if (cacheStats()["archive_requests"] <= requestsBefore)
      return ::testing::AssertionFailure()
             << "the daemon counted no archive request: they ran elsewhere";
    return sameTrees(name + ".stock", name + ".linkd");
  }

  // Same files, bytes and permission bits in both trees.
  ::testing::AssertionResult sameTrees(const std::string &a,
                                       const std::string &b) {
    std::vector<std::string> names[2];
    for (int k = 0; k < 2; ++k)
      for (const auto &e : fs::recursive_directory_iterator(path(k ? b : a)))
        if (!e.is_directory())
          names[k].push_back(fs::relative(e.path(), path(k ? b : a)).string());
    std::sort(names[0].begin(), names[0].end());
    std::sort(names[1].begin(), names[1].end());
    if (names[0] != names[1]) {
      auto f = ::testing::AssertionFailure() << "different files:";
      for (int k = 0; k < 2; ++k) {
        f << "\n  " << (k ? b : a) << ":";
        for (const auto &n : names[k])
          f << " " << n;
      }
      return f;
    }
    for (const std::string &n : names[0]) {
      if (auto same = sameBytes(a + "/" + n, b + "/" + n); !same)
        return same;
      if (fs::status(path(a + "/" + n)).permissions() !=
          fs::status(path(b + "/" + n)).permissions())
        return ::testing::AssertionFailure() << n << ": mode bits differ";
    }
    return ::testing::AssertionSuccess();
  }

  // The archive counters' change over `fn`.
  std::map<std::string, long long>
  archiveCounts(const std::function<void()> &fn) {
    auto before = cacheStats();
    fn();
    auto after = cacheStats();
    std::map<std::string, long long> d;
    for (const char *k : {"archive_requests", "archive_hits", "archive_misses",
                          "archive_uncacheable", "archive_errors", "requests"})
      d[k] = after[k] - before[k];
    return d;
  }
};

TEST_F(Archiver, CreateCAndCxxArchivesLikeLlvmAr) {
  EXPECT_TRUE(
      sameAsStock("rcs", {"llvm-ar rcs x.a a.o b.o c.o", "ar rcs y.a c.o a.o",
                          "llvm-ar t x.a", "ar rcsv z.a a.o b.o"}));
  // Without `c` llvm-ar warns that it creates the archive.
  EXPECT_TRUE(sameAsStock("warn", {"llvm-ar r x.a a.o", "ar q y.a b.o"}));
}

TEST_F(Archiver, QuickAppendThenRanlib) {
  // CMake's way: qc, then ranlib (a no-op: qc wrote a symbol table), and
  // with S a ranlib that has to add the symbol table.
  EXPECT_TRUE(sameAsStock(
      "qc", {"llvm-ar qc x.a a.o b.o c.o", "llvm-ranlib x.a", "ranlib x.a"}));
  EXPECT_TRUE(sameAsStock("qcS", {"llvm-ar qcS x.a a.o b.o c.o",
                                  "llvm-ar qcS y.a a.o", "llvm-ranlib x.a y.a",
                                  "llvm-ar qcS z.a b.o", "llvm-ar s z.a"}));
}

TEST_F(Archiver, ReplaceDeleteAndMoveMembers) {
  EXPECT_TRUE(sameAsStock(
      "update",
      {"llvm-ar rcs x.a a.o b.o c.o", "cp b_new.o b.o && llvm-ar r x.a b.o",
       "llvm-ar rv x.a text.txt", "llvm-ar d x.a a.o", "llvm-ar t x.a",
       "llvm-ar ma c.o x.a b.o", "llvm-ar ri b.o x.a a.o", "llvm-ar t x.a",
       "llvm-ar qc y.a a.o b.o a.o a.o", "llvm-ar dN 2 y.a a.o",
       "llvm-ar tO y.a", "llvm-ar rcsP z.a a.o sub/a.o",
       "llvm-ar dP z.a sub/a.o", "llvm-ar t z.a",
       "llvm-ar rb nothere.o x.a a.o"}));
}

TEST_F(Archiver, ThinArchives) {
  EXPECT_TRUE(sameAsStock(
      "thin",
      {"llvm-ar rcs --thin x.a a.o sub/a.o", "llvm-ar t x.a",
       "llvm-ar rcsT y.a b.o c.o", "llvm-ar rcs y.a a.o", "llvm-ar t y.a",
       "mkdir -p lib && cd lib && llvm-ar rcsT z.a "
       "../a.o ../sub/a.o && llvm-ar tv z.a",
       "llvm-ar rcsT in.a a.o b.o && llvm-ar rcsT w.a in.a c.o && "
       "llvm-ar t w.a",
       "llvm-ar x x.a", "llvm-ar rcs r.a a.o && llvm-ar rcsT r.a b.o"}));
}

TEST_F(Archiver, DarwinFormatWithMachOMembers) {
  EXPECT_TRUE(sameAsStock(
      "darwin", {"llvm-ar rcs --format=darwin x.a ma.o mb.o",
                 "llvm-ar rcs y.a ma.o mb.o", "llvm-ar tv y.a",
                 "mkdir -p d && cp mb.o d/ma.o && llvm-ar qc z.a ma.o d/ma.o",
                 "llvm-ar tv z.a", "llvm-ar rcs --format=bsd w.a a.o",
                 "llvm-ar rs w.a ma.o"}));
}

TEST_F(Archiver, CoffAndBitcodeMembers) {
  EXPECT_TRUE(sameAsStock(
      "coff", {"llvm-ar rcs x.a wa.obj wb.obj", "llvm-ar t x.a",
               "llvm-ar rcs --format=coff y.a a.o wb.obj",
               "llvm-ar rcS z.a text.txt && llvm-ar rs z.a wa.obj"}));
  EXPECT_TRUE(sameAsStock("bitcode",
                          {"llvm-ar rcs x.a bca.o bcasm.o a.o",
                           "llvm-ar rcs y.a wbc.obj wa.obj", "llvm-ar t x.a"}));
}

TEST_F(Archiver, MriScripts) {
  EXPECT_TRUE(sameAsStock(
      "mri",
      {"printf 'create x.a\\naddmod a.o\\naddmod b.o\\nsave\\nend\\n' | "
       "llvm-ar -M",
       "llvm-ar rcs in.a a.o b.o",
       "printf '* comment\\nCREATE y.a ; c\\nADDLIB in.a\\nADDMOD \"c.o\"\\n"
       "DELETE a.o\\n\\nSAVE\\n' | llvm-ar -M",
       "printf 'createthin z.a\\naddmod sub/a.o\\nsave\\n' | llvm-ar -M",
       "printf 'create w.a\\nfoo bar\\n' | llvm-ar -M",
       "printf 'addmod a.o\\n' | ar -M", "llvm-ar t y.a"}));
  // The script travels with the request: a second run is a hit, another
  // script a miss.
  std::string script = "printf 'create m.a\\naddmod in/a.o\\nsave\\n' | " +
                       binPath("ar.linkd") + " -M";
  auto first = archiveCounts([&] { ASSERT_TRUE(exitedZero(run(script))); });
  EXPECT_EQ(first["archive_misses"], 1);
  waitForStored(1);
  auto again = archiveCounts([&] { ASSERT_TRUE(exitedZero(run(script))); });
  EXPECT_EQ(again["archive_hits"], 1);
  auto other = archiveCounts([&] {
    ASSERT_TRUE(exitedZero(run(replaceAll(script, "in/a.o", "in/b.o"))));
  });
  EXPECT_EQ(other["archive_misses"], 1);
}

TEST_F(Archiver, LibExeLikeLlvmLib) {
  writeFile("in/foo.def", "LIBRARY foo.dll\nEXPORTS\n  f1\n  f2 @3\n");
  EXPECT_TRUE(sameAsStock(
      "lib", {"llvm-lib /out:x.lib wa.obj wb.obj", "llvm-lib /list x.lib",
              "lib wa.obj wb.obj", "llvm-lib /out:y.lib wbc.obj wa.obj",
              "llvm-lib /def:foo.def /machine:x64 /out:foo.lib",
              "llvm-ar t foo.lib", "llvm-lib /out:z.lib wa.obj a.o",
              "llvm-lib /machine:x86 /out:z.lib wa.obj",
              "llvm-lib /out:z.lib nope.obj", "llvm-lib"}));
}

TEST_F(Archiver, LldLinkLibModeIsAnArchiveRequest) {
  // `lld-link /lib` (and -lib, any case) runs llvm-lib: the same bytes and
  // diagnostics as stock lld-link, including its "lib failed" on an error
  // (before, a timestamped COFF link, never cached).
  EXPECT_TRUE(sameAsStock(
      "lldlib",
      {"lld-link /lib /out:x.lib wa.obj wb.obj", "lld-link -lib /list x.lib",
       "lld-link /LIB wa.obj wb.obj", "lld-link -LIB /out:y.lib wbc.obj wa.obj",
       "lld-link /lib /out:z.lib nope.obj", "lld-link /lib"}));
  // Counted and cached as archive requests: a second identical request
  // hits, and a changed member misses.
  ASSERT_TRUE(exitedZero(run("rm -rf again && cp -a in again")));
  auto lib = [&](const std::string &args) {
    return run("cd again && " + path("linkdbin/lld-link") + " /lib " + args);
  };
  long long stored = cacheStats()["results_stored"];
  auto first = archiveCounts(
      [&] { ASSERT_TRUE(exitedZero(lib("/out:k.lib wa.obj wb.obj"))); });
  EXPECT_EQ(first["archive_requests"], 1);
  EXPECT_EQ(first["archive_misses"], 1);
  waitForStored(stored + 1);
  ASSERT_TRUE(exitedZero(run("mv again/k.lib again/k.first")));
  auto second = archiveCounts(
      [&] { ASSERT_TRUE(exitedZero(lib("/out:k.lib wa.obj wb.obj"))); });
  EXPECT_EQ(second["archive_hits"], 1);
  EXPECT_TRUE(sameBytes("again/k.first", "again/k.lib"));
  ASSERT_TRUE(exitedZero(run("cp in/b.o again/wb.obj")));
  auto changed = archiveCounts([&] { lib("/out:k.lib wa.obj wb.obj"); });
  EXPECT_EQ(changed["archive_misses"] + changed["archive_errors"], 1);
}

TEST_F(Archiver, ListPrintAndExtractLikeLlvmAr) {
  // x.a keeps real dates, modes and owners (U), but no symbol table: under
  // U its header would carry the time it was written.
  EXPECT_TRUE(sameAsStock(
      "read",
      {"touch -d '2001-07-01 10:00:00' a.o b.o && chmod 750 b.o && "
       "llvm-ar rcSU x.a a.o b.o text.txt && llvm-ar rcs y.a c.o a.o",
       "llvm-ar t x.a", "llvm-ar tv x.a", "TZ=America/New_York llvm-ar tv x.a",
       "llvm-ar tO y.a", "llvm-ar t y.a a.o nothere.o",
       "llvm-ar p x.a text.txt", "llvm-ar pv x.a text.txt",
       "mkdir out && cd out && llvm-ar xv ../x.a && stat -c '%n %a %s' *",
       "llvm-ar xo --output=dated x.a b.o && stat -c '%a %Y' dated/b.o",
       "llvm-ar x y.a nothere.o"}));
}

TEST_F(Archiver, ProgramNamesInDiagnostics) {
  // Under a stock name the diagnostics carry that name, as stock's do.
  EXPECT_TRUE(sameAsStock("names", {"ar z x.a a.o", "llvm-ar --version",
                                    "ranlib nothere.a", "llvm-ranlib -Q x.a",
                                    "ar -h", "ranlib --help"}));
  // ar.linkd speaks as llvm-ar (ranlib.linkd as llvm-ranlib).
  RunResult stock = run("cd in && " + path("stockbin/llvm-ar") + " z x.a");
  RunResult ours = run("cd in && " + binPath("ar.linkd") + " z x.a");
  EXPECT_EQ(ours.exitCode, 1);
  EXPECT_EQ(ours.err, replaceAll(stock.err, path("stockbin/llvm-ar"),
                                 binDir() + "/llvm-ar"));
  EXPECT_EQ(ours.out, replaceAll(stock.out, path("stockbin/llvm-ar"),
                                 binDir() + "/llvm-ar"));
}

TEST_F(Archiver, ColouredDiagnosticsOnATerminal) {
  // On a terminal llvm-ar colours "error:"; the child's stderr is a pipe,
  // but the client's terminal decides. `script` gives both a terminal.
  const Tool script{"/usr/bin/script", "bsdutils"};
  ASSERT_TRUE(haveTool(script));
  std::string both[2];
  long long before = cacheStats()["archive_requests"];
  for (int k = 0; k < 2; ++k) {
    RunResult r = run(std::string("cd in && TERM=xterm script -qec 'PATH=") +
                      path(k ? "linkdbin" : "stockbin") +
                      ":$PATH llvm-ar rcs x.a nope.o' /dev/null");
    both[k] = r.out;
  }
  EXPECT_NE(both[0].find("\x1b["), std::string::npos) << both[0];
  EXPECT_EQ(both[1], both[0]);
  EXPECT_EQ(cacheStats()["archive_requests"], before + 1);
}

TEST_F(Archiver, SecondIdenticalBuildHitsAndAChangedMemberMisses) {
  // CMake's recipe for a static library, through the clients.
  std::string recipe = "cd in && rm -f lib.a && " + binPath("ar.linkd") +
                       " qc lib.a a.o b.o c.o && " + binPath("ranlib.linkd") +
                       " lib.a";
  ASSERT_TRUE(exitedZero(
      run("cd in && llvm-ar-19 qc stock.a a.o b.o c.o && llvm-ranlib-19 "
          "stock.a")));
  auto first = archiveCounts([&] { ASSERT_TRUE(exitedZero(run(recipe))); });
  EXPECT_EQ(first["archive_requests"], 2);
  EXPECT_EQ(first["archive_misses"], 2);
  EXPECT_EQ(first["requests"], 0) << "archive requests counted as links";
  EXPECT_TRUE(sameBytes("in/stock.a", "in/lib.a"));
  waitForStored(2);

  auto second = archiveCounts([&] { ASSERT_TRUE(exitedZero(run(recipe))); });
  EXPECT_EQ(second["archive_hits"], 2);
  EXPECT_EQ(second["archive_misses"], 0);
  EXPECT_TRUE(sameBytes("in/stock.a", "in/lib.a"));

  // Touched, not changed: still a hit.
  ASSERT_TRUE(exitedZero(run("touch in/b.o")));
  EXPECT_EQ(archiveCounts(
                [&] { ASSERT_TRUE(exitedZero(run(recipe))); })["archive_hits"],
            2);

  // One member's content changes: both steps miss (ranlib sees a new
  // archive), and the result is stock's for the new member.
  ASSERT_TRUE(exitedZero(run("cd in && cp b_new.o b.o && rm stock.a && "
                             "llvm-ar-19 qc stock.a a.o b.o c.o && "
                             "llvm-ranlib-19 stock.a")));
  auto changed = archiveCounts([&] { ASSERT_TRUE(exitedZero(run(recipe))); });
  EXPECT_EQ(changed["archive_misses"], 2);
  EXPECT_EQ(changed["archive_hits"], 0);
  EXPECT_TRUE(sameBytes("in/stock.a", "in/lib.a"));
}

TEST_F(Archiver, UpdatesAreKeyedOnTheArchiveTheyUpdate) {
  std::string ar = binPath("ar.linkd");
  ASSERT_TRUE(exitedZero(run("cd in && llvm-ar-19 rcs s1.a a.o b.o && "
                             "cp s1.a s2.a && llvm-ar-19 r s2.a c.o && "
                             "llvm-ar-19 rcs s3.a b.o && cp s3.a s4.a && "
                             "llvm-ar-19 r s4.a c.o")));
  ASSERT_TRUE(exitedZero(run("cd in && cp s1.a x.a && " + ar + " r x.a c.o")));
  EXPECT_TRUE(sameBytes("in/s2.a", "in/x.a"));
  waitForStored(1);
  // The same archive again: a hit.
  auto hit = archiveCounts([&] {
    ASSERT_TRUE(
        exitedZero(run("cd in && cp s1.a x.a && " + ar + " r x.a c.o")));
  });
  EXPECT_EQ(hit["archive_hits"], 1);
  EXPECT_TRUE(sameBytes("in/s2.a", "in/x.a"));
  // Same command, another archive at that path: a miss with its own result.
  auto miss = archiveCounts([&] {
    ASSERT_TRUE(
        exitedZero(run("cd in && cp s3.a x.a && " + ar + " r x.a c.o")));
  });
  EXPECT_EQ(miss["archive_misses"], 1);
  EXPECT_TRUE(sameBytes("in/s4.a", "in/x.a"));
}

TEST_F(Archiver, ReadOnlyAndTimeDependentRequestsAreNotCached) {
  std::string ar = binPath("ar.linkd");
  ASSERT_TRUE(exitedZero(run("cd in && " + ar + " rcs x.a a.o b.o")));
  auto counts = archiveCounts([&] {
    ASSERT_TRUE(exitedZero(run("cd in && " + ar + " t x.a && " + ar +
                               " p x.a a.o >/dev/null && " + ar +
                               " rcsU y.a a.o && " + ar + " ru x.a b.o")));
  });
  EXPECT_EQ(counts["archive_uncacheable"], 4);
  EXPECT_EQ(counts["archive_hits"] + counts["archive_misses"], 0);
}

TEST_F(Archiver, BadInputFailsLikeLlvmArAndTheDaemonServesOn) {
  ASSERT_TRUE(
      exitedZero(run("cd in && " + binPath("ar.linkd") + " rcs first.a a.o")));
  auto before = daemonStatus();
  EXPECT_TRUE(sameAsStock(
      "bad",
      {"llvm-ar rcs x.a a.o corrupt.o", "llvm-ar rcs y.a a.o nope.o",
       "llvm-ar rcs z.a a.o && cp z.a z.orig && llvm-ar rcs z.a b.o "
       "nope.o; cmp z.a z.orig",
       "llvm-ar r bad.a a.o", "llvm-ar t bad.a", "llvm-ranlib a.o",
       "llvm-ar z x.a a.o", "llvm-ar rq x.a a.o", "llvm-ar xN 0 x.a",
       "llvm-ar --format=foo rcs x.a a.o", "llvm-ar t nothere.a", "ls"}));
  // Failures are never stored: the same failure again runs again.
  auto again = archiveCounts([&] {
    RunResult r =
        run("cd in && " + binPath("ar.linkd") + " rcs x.a a.o corrupt.o");
    EXPECT_EQ(r.exitCode, 1);
  });
  EXPECT_EQ(again["archive_hits"], 0);
  EXPECT_FALSE(exists("in/x.a"));
  // The same daemon serves the next archive.
  ASSERT_TRUE(exitedZero(run("cd in && " + binPath("ar.linkd") +
                             " rcs ok.a a.o && llvm-ar-19 rcs ok.stock a.o")));
  EXPECT_TRUE(sameBytes("in/ok.stock", "in/ok.a"));
  auto after = daemonStatus();
  ASSERT_TRUE(before && after);
  EXPECT_EQ(before->pid, after->pid);
  EXPECT_EQ(after->linksCrashed, 0u);
}

// A reader that stops early (`| head`) ends llvm-ar with EX_IOERR (74), not
// death by SIGPIPE; the client replaying the daemon's stdout and the local
// fallback must end the same way.
TEST_F(Archiver, ClosedStdoutEndsLikeLlvmAr) {
  const std::string big = "/usr/lib/llvm-19/lib/libLLVMCore.a"; // MBs of p
  auto statusOf = [&](const std::string &command) {
    RunResult r = run("(" + command + " p " + big +
                      "; echo $? >status) | head -c 10 >/dev/null; cat status");
    EXPECT_TRUE(exitedZero(r));
    return r.out;
  };
  std::string stock = statusOf(kLlvmAr.path);
  EXPECT_EQ(stock, "74\n");
  EXPECT_EQ(statusOf(binPath("ar.linkd")), stock) << "through the daemon";
  EXPECT_EQ(statusOf("LINKD_DISABLE=1 " + binPath("ar.linkd")), stock)
      << "locally";
}

TEST_F(Archiver, WithoutADaemonTheArchiveIsMadeLocally) {
  ASSERT_EQ(mkdir(path("shared").c_str(), 0755), 0);
  ASSERT_EQ(chmod(path("shared").c_str(), 0755), 0);
  std::string env = "LINKD_SOCKET=" + path("shared/linkd.sock") + " ";
  std::string ar = binPath("ar.linkd");
  RunResult made = run("cd in && " + env + ar + " rcs x.a a.o b.o c.o");
  ASSERT_TRUE(exitedZero(made));
  EXPECT_EQ(linesStartingWith(made.err, kWarning).size(), 1u) << made.err;
  EXPECT_NE(made.err.find("; archiving locally"), std::string::npos)
      << made.err;
  // The MRI script the client read is the local run's stdin.
  RunResult mri = run("cd in && printf 'create m.a\\naddmod a.o\\nsave\\n' | " +
                      env + ar + " -M");
  ASSERT_TRUE(exitedZero(mri));
  RunResult failed = run("cd in && " + env + ar + " rcs y.a nope.o");
  ASSERT_TRUE(exitedZero(
      run("cd in && llvm-ar-19 rcs x.stock a.o b.o c.o && "
          "printf 'create m.stock\\naddmod a.o\\nsave\\n' | llvm-ar-19 -M")));
  RunResult stockFailed = run("cd in && " + kLlvmAr.path + " rcs y.a nope.o");
  EXPECT_TRUE(sameBytes("in/x.stock", "in/x.a"));
  EXPECT_TRUE(sameBytes("in/m.stock", "in/m.a"));
  EXPECT_EQ(failed.exitCode, stockFailed.exitCode);
  // The directory's mode lasts: every command says so (apart from that
  // line, the stock diagnostics).
  EXPECT_EQ(linesStartingWith(failed.err, kWarning),
            linesStartingWith(made.err, kWarning));
  EXPECT_EQ(replaceAll(withoutLinesStartingWith(failed.err, kWarning),
                       binDir() + "/llvm-ar", "AR"),
            replaceAll(stockFailed.err, kLlvmAr.path, "AR"));
  EXPECT_TRUE(daemonProcesses().empty());
}

} // namespace
} // namespace linkd::e2e
