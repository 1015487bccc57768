// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Incremental relinks through the daemon (docs/incremental.md), driven as a
// build would: clang-19 and gcc link through the client with
// -Wl,--linkd-incremental, one file is edited and recompiled, the program
// is linked again. A patched output must be stock LLD's link of the same
// objects, byte for byte, and run; every other link runs in full and says
// why; without the option nothing changes.
#include "harness.h"

#include <csignal>

namespace linkd::e2e {
namespace {

const char *kCounter = R"(#include <stdio.h>
int g = 3;
static int counter;
static const char *names[] = {"alpha", "beta", "gamma"};
int step(int x) {
  counter += x;
  return x * 7 + g + 11 + (int)names[x % 3][0];
}
void show(void) { printf("%s %d\n", names[counter % 3], counter); }
)";

const char *kMain = R"(#include <stdio.h>
#include <unistd.h>
int step(int);
void show(void);
int main(int argc, char **argv) {
  if (argc > 1)
    sleep(60); // a program that keeps running
  int sum = 1000;
  for (int i = 0; i < 4; ++i)
    sum += step(i);
  printf("%d\n", sum);
  show();
  return 0;
}
)";

class IncrementalTest : public E2eTest {
protected:
  long long stat(const std::string &key) { return cacheStats()[key]; }
  // The daemon's lines about incremental links, for a failure's message.
  std::string incrementalLog() {
    std::string all;
    for (const std::string &l : logLines("incremental:"))
      all += l.substr(l.find("incremental:")) + "\n";
    return all;
  }

  void SetUp() override {
    E2eTest::SetUp();
    writeFile("counter.c", kCounter);
    writeFile("main.c", kMain);
    ASSERT_TRUE(exitedZero(run("clang-19 -O2 -g -c counter.c main.c")));
  }

  // Edits counter.c (`from` -> `to`) and compiles it again.
  void edit(const std::string &from, const std::string &to) {
    std::string text = readFile("counter.c");
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    writeFile("counter.c", text.replace(at, from.size(), to));
    ASSERT_TRUE(exitedZero(run("clang-19 -O2 -g -c counter.c")));
  }

  // Waits (at most 20 s) for the ready spare of the last full link's
  // output and its chunk hashes (incremental/ready_spare.h), which the
  // link's process makes after the client has its answer; whether both
  // came.
  bool readySpareMade() {
    return exitedZero(
        run("for i in $(seq 400); do ls state/incremental/*/ | grep -qE "
            "'^spare[.]ready-[0-9-]+$' && ls state/incremental/*/ | grep -qE "
            "'^spare[.]ready-[0-9-]+[.]chunks$' && exit 0; sleep 0.05; done; "
            "exit 1"));
  }

  // The state's copies of `inputs` (as its manifest names them), each
  // after a space; "" (and a failure) if one is not there.
  std::string stateCopies(const std::vector<std::string> &inputs) {
    RunResult dirs = run("ls state/incremental | grep -v '^result-'");
    std::string state =
        "state/incremental/" + dirs.out.substr(0, dirs.out.find('\n'));
    std::string manifest = readFile(state + "/manifest");
    std::string copies;
    for (const std::string &name : inputs) {
      size_t at = manifest.find("input\t" + name + "\t");
      if (at == std::string::npos) {
        ADD_FAILURE() << name << " is not in the manifest:\n" << manifest;
        return "";
      }
      std::string line = manifest.substr(at, manifest.find('\n', at) - at);
      copies += " " + state + "/" + line.substr(line.rfind('\t') + 1);
    }
    return copies;
  }

  // With slack and verify mode, `build`s and links `inputs` through gcc's
  // driver (its crt files, its PIE default), grows step() in counter.c
  // within its slot (show() after it moves), and links again: a verified
  // patch, which moved symbols.
  void growWithSlackThroughGcc(const std::string &build,
                               const std::string &inputs) {
    writeFile("linkd.conf",
              "incremental_slack = 25%+64\nincremental_verify = true\n");
    gccBuildAndLink(build, inputs);
    growStep();
    gccBuildAndLink(build, inputs);
    EXPECT_EQ(stat("incremental_verified"), 1) << incrementalLog();
    EXPECT_EQ(stat("incremental_verify_differences"), 0);
    auto lines = logLines("incremental: \"verified");
    ASSERT_EQ(lines.size(), 1u) << incrementalLog();
    EXPECT_EQ(lines[0].find(" moved=0"), std::string::npos) << lines[0];
  }

  // growWithSlackThroughGcc with counter.o a member of libcount.a, which
  // `inputs` names: both main.o and the archive are padded, and stock LLD
  // links the state's copies (what LLD read, after the verified patch:
  // the manifest spells the archive libcount.a, as LLD's dependency file
  // does) to the output's bytes.
  void growArchiveMember(const std::string &inputs) {
    writeFile("other.c", "int other_value(void) { return 41; }\n");
    growWithSlackThroughGcc("gcc -O2 -c counter.c main.c other.c && rm -f "
                            "libcount.a && ar rcs libcount.a counter.o "
                            "other.o",
                            inputs);
    EXPECT_EQ(logLines(" padded=2").size(), 1u) << incrementalLog();
    EXPECT_NE(stateCopies({"main.o", "libcount.a"}).find(".padded.a"),
              std::string::npos);
    EXPECT_TRUE(stockLinksTheStatesCopies({"main.o", "libcount.a"}));
  }

  // `build`, then gcc's driver links `inputs` through the client with the
  // option; the program runs.
  void gccBuildAndLink(const std::string &build, const std::string &inputs) {
    ASSERT_TRUE(haveTool(tools::gcc));
    ASSERT_TRUE(exitedZero(run(build)));
    RunResult r = run("gcc -B" + binDir() + "/gcc/ -Wl,--linkd-incremental " +
                      inputs + " -o prog");
    ASSERT_TRUE(exitedZero(r)) << describe(r);
    EXPECT_EQ(r.err, "");
    EXPECT_TRUE(exitedZero(run("./prog")));
  }

  // step() in counter.c grows (within a slot of 25%+64).
  void growStep() {
    std::string text = readFile("counter.c");
    writeFile("counter.c",
              text.replace(text.find("counter += x;"), 13,
                           "counter += x;\n  if (counter > 100 + x)\n    "
                           "counter -= x * 3 + g;"));
  }

  // Stock LLD, through gcc's driver, links the state's copies of `inputs`
  // to the output's bytes: the state holds what LLD read.
  ::testing::AssertionResult
  stockLinksTheStatesCopies(const std::vector<std::string> &inputs) {
    std::string copies = stateCopies(inputs);
    if (copies.empty())
      return ::testing::AssertionFailure() << "no state";
    if (!exitedZero(run("mkdir -p stockgcc && ln -sf " + tools::ldLld.path +
                        " stockgcc/ld")))
      return ::testing::AssertionFailure() << "no stock gcc set-up";
    RunResult r =
        run("gcc -B" + path("stockgcc") + "/" + copies + " -o oracle");
    if (!exitedZero(r))
      return ::testing::AssertionFailure() << describe(r);
    return sameBytes("oracle", "prog");
  }

  // The link through the client with the option, then stock LLD's link of
  // the same objects: the same bytes, and the program runs.
  void linkAndCompare(const std::string &extra = "",
                      const std::string &env = "") {
    RunResult r =
        run(env + "clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
            " -Wl,--linkd-incremental " + extra + " counter.o main.o -o prog");
    ASSERT_TRUE(exitedZero(r));
    EXPECT_EQ(r.err, "");
    ASSERT_TRUE(exitedZero(
        run("clang-19 -fuse-ld=lld " + extra + " counter.o main.o -o stock")));
    EXPECT_TRUE(sameBytes("stock", "prog"));
    RunResult p = run("./prog"), s = run("./stock");
    EXPECT_TRUE(exitedZero(p));
    EXPECT_EQ(p.out, s.out);
  }
};

TEST_F(IncrementalTest, AChangedConstantIsPatchedAndIsStockLldsLink) {
  linkAndCompare();
  EXPECT_EQ(stat("incremental_links"), 1);
  EXPECT_EQ(stat("incremental_full_links"), 1);
  EXPECT_EQ(stat("new_output"), 1) << "incremental_fallbacks";
  edit("+ 11 +", "+ 13 +");
  linkAndCompare();
  EXPECT_EQ(stat("incremental_patches"), 1);
  EXPECT_GT(stat("incremental_patch_micros"), 0);
  // The state follows the patch: the next edit patches the patched output,
  // from a PATH of another length (a variable LLD never reads).
  edit("g = 3", "g = 8");
  linkAndCompare("", "PATH=/usr/local/bin:$PATH ");
  EXPECT_EQ(stat("incremental_patches"), 2) << incrementalLog();
  EXPECT_EQ(stat("incremental_full_links"), 1);
  auto lines = logLines("incremental: \"patched objects=1");
  EXPECT_EQ(lines.size(), 2u);
  // Two objects at once: each patch reads what the one before made.
  edit("g = 8", "g = 5");
  writeFile("main.c", replaceAll(kMain, "sum = 1000", "sum = 2000"));
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -g -c main.c")));
  linkAndCompare();
  EXPECT_EQ(stat("incremental_patches"), 3);
  EXPECT_EQ(logLines("incremental: \"patched objects=2").size(), 1u);
}

TEST_F(IncrementalTest, VerifyModeLinksInFullBesideEachPatch) {
  writeFile("linkd.conf", "incremental_verify = true\n");
  linkAndCompare();
  edit("+ 11 +", "+ 17 +");
  linkAndCompare();
  EXPECT_EQ(stat("incremental_verified"), 1);
  EXPECT_EQ(stat("incremental_verify_differences"), 0);
  EXPECT_EQ(stat("incremental_patches"), 0) << "LLD's output is written";
}

// The same from the daemon's environment (the first client starts it).
TEST_F(IncrementalTest, VerifyModeFromTheVariable) {
  linkAndCompare("", "LINKD_INCREMENTAL_VERIFY=1 ");
  edit("+ 11 +", "+ 17 +");
  linkAndCompare();
  EXPECT_EQ(stat("incremental_verified"), 1);
  EXPECT_EQ(stat("incremental_verify_differences"), 0);
}

TEST_F(IncrementalTest, EditsThatMoveCodeLinkInFullAndSayWhy) {
  linkAndCompare();
  edit("counter += x;", "counter += x * x - 1;");
  linkAndCompare();
  EXPECT_EQ(stat("incremental_patches"), 0);
  EXPECT_EQ(stat("incremental_full_links"), 2);
  auto why = logLines("incremental: \"full kind=");
  ASSERT_EQ(why.size(), 2u);
  // The reason names what moved: a section's size, .eh_frame, a symbol,
  // or (with -g) the location lists the new code needs.
  bool named = false;
  for (const char *kind :
       {"section_resized", "eh_frame_changed", "symbols_moved",
        "symbols_changed", "sections_changed"})
    named = named ||
            why[1].find(std::string("full kind=") + kind) != std::string::npos;
  EXPECT_TRUE(named) << why[1];
  // The full link left fresh state: the next small edit patches.
  edit("+ 11 +", "+ 12 +");
  linkAndCompare();
  EXPECT_EQ(stat("incremental_patches"), 1);
  // A string is a merged piece: a full link.
  edit("\"alpha\"", "\"omega\"");
  linkAndCompare();
  EXPECT_EQ(stat("merged_changed"), 1) << "incremental_fallbacks";
}

// With slack (incremental_slack), a full link hands LLD padded objects:
// its output is stock LLD's link of the padded copies the state keeps,
// byte for byte, and runs as the program of the user's objects does. A
// patch pads the new object to the last slots (verify mode: LLD's link of
// those, beside it); an edit that grows code fits its slot, so the reason
// is what the patch cannot follow yet, never the slot; one past the slot
// is named and gets new room. The padded output is never cached: a plain
// link of the same objects is stock LLD's.
TEST_F(IncrementalTest, WithSlackTheFullLinkHandsLldPaddedObjects) {
  writeFile("linkd.conf",
            "incremental_slack = 25%+64\nincremental_verify = true\n");
  const std::string ours =
      "clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
      " counter.o main.o ";
  auto link = [&] {
    RunResult r = run(ours + "-Wl,--linkd-incremental -o prog");
    ASSERT_TRUE(exitedZero(r)) << describe(r);
    EXPECT_EQ(r.err, "");
    ASSERT_TRUE(
        exitedZero(run("clang-19 -fuse-ld=lld counter.o main.o -o stock")));
    RunResult p = run("./prog");
    EXPECT_TRUE(exitedZero(p));
    EXPECT_EQ(p.out, run("./stock").out);
  };
  // Stock LLD's link of the state's padded copies, in the link's order.
  auto oracle = [&]() -> ::testing::AssertionResult {
    std::string objects = stateCopies({"counter.o", "main.o"});
    if (objects.empty() ||
        objects.find(".padded.o") == objects.rfind(".padded.o"))
      return ::testing::AssertionFailure() << "not padded: " << objects;
    RunResult r = run("clang-19 -fuse-ld=lld" + objects + " -o oracle");
    if (!exitedZero(r))
      return ::testing::AssertionFailure() << describe(r);
    return sameBytes("oracle", "prog");
  };
  link();
  EXPECT_FALSE(sameBytes("stock", "prog")) << "the objects were padded";
  EXPECT_TRUE(oracle());
  EXPECT_EQ(logLines(" padded=2").size(), 1u) << incrementalLog();
  // A changed constant: patched, and LLD's link of the padded new object.
  edit("+ 11 +", "+ 13 +");
  link();
  EXPECT_EQ(stat("incremental_verified"), 1) << incrementalLog();
  EXPECT_EQ(stat("incremental_verify_differences"), 0);
  EXPECT_TRUE(oracle());
  // Grown code fits its slot.
  edit("counter += x;", "counter += x * x - 1;");
  link();
  EXPECT_TRUE(oracle());
  auto why = logLines("incremental: \"full kind=");
  ASSERT_EQ(why.size(), 2u) << incrementalLog();
  EXPECT_EQ(why[1].find("section_outgrew"), std::string::npos) << why[1];
  // Past it: named, then new room.
  std::string big = "int extra(int x) {\n  int t = 0;\n";
  for (int i = 0; i < 64; ++i)
    big += "  t = t * " + std::to_string(i + 3) + " + (x ^ " +
           std::to_string(i * 7919) + ");\n";
  big += "  return t;\n}\n";
  writeFile("counter.c", readFile("counter.c") + big);
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -g -c counter.c")));
  link();
  EXPECT_EQ(stat("section_outgrew"), 1) << "incremental_fallbacks";
  EXPECT_EQ(logLines("counter.o: section .text").size(), 1u)
      << incrementalLog();
  EXPECT_TRUE(oracle());
  // None of it was stored (each link said why); a plain link is stock
  // LLD's, by a miss.
  waitForStat("uncacheable", 4);
  EXPECT_EQ(stat("results_stored"), 0);
  ASSERT_TRUE(exitedZero(run(ours + "-o plain")));
  EXPECT_TRUE(sameBytes("stock", "plain"));
  EXPECT_EQ(stat("hits"), 0);
  // --format=binary takes files' bytes as data: such a link pads nothing.
  writeFile("data.bin", "payload");
  const std::string blob = " -Wl,--format=binary,data.bin,--format=default ";
  ASSERT_TRUE(
      exitedZero(run(ours + "-Wl,--linkd-incremental" + blob + "-o blob")));
  ASSERT_TRUE(exitedZero(
      run("clang-19 -fuse-ld=lld counter.o main.o" + blob + "-o blob.lld")));
  EXPECT_TRUE(sameBytes("blob.lld", "blob"));
}

// With slack, code that grew within its slot moves the functions after
// it. Through gcc's driver (its crt files and PIE default), the patch
// follows them (the symbol table, main.o's calls, .eh_frame and its
// header) and is what LLD links from the same padded objects.
TEST_F(IncrementalTest, WithSlackGrownCodeIsPatchedThroughGcc) {
  growWithSlackThroughGcc("gcc -O2 -c counter.c main.c", "counter.o main.o");
}

// A first call to a function another object calls already (main.c's
// sleep), through gcc's driver: with main.o first on the command line, a
// verified patch that calls it through the same PLT entry, and another
// when the call is removed again; with counter.o first, LLD would meet the
// symbol in counter.o now (or no longer) and order its entries anew: full
// links that say so.
TEST_F(IncrementalTest, WithSlackANewCallToAResolvedFunctionIsPatched) {
  writeFile("linkd.conf",
            "incremental_slack = 25%+64\nincremental_verify = true\n");
  const std::string build = "gcc -O2 -c counter.c main.c";
  auto callSleep = [&] {
    std::string text = kCounter;
    writeFile("counter.c", "#include <unistd.h>\n" +
                               text.replace(text.find("counter += x;"), 13,
                                            "counter += x + (int)sleep(0);"));
  };
  gccBuildAndLink(build, "main.o counter.o");
  callSleep();
  gccBuildAndLink(build, "main.o counter.o");
  EXPECT_EQ(stat("incremental_verified"), 1) << incrementalLog();
  EXPECT_EQ(stat("incremental_verify_differences"), 0);
  // The call removed again: main.o still calls sleep through the same PLT
  // entry, a verified patch too.
  writeFile("counter.c", kCounter);
  gccBuildAndLink(build, "main.o counter.o");
  EXPECT_EQ(stat("incremental_verified"), 2) << incrementalLog();
  EXPECT_EQ(stat("incremental_verify_differences"), 0);

  gccBuildAndLink(build, "counter.o main.o");
  callSleep();
  gccBuildAndLink(build, "counter.o main.o");
  writeFile("counter.c", kCounter);
  gccBuildAndLink(build, "counter.o main.o");
  EXPECT_EQ(stat("incremental_verified"), 2) << incrementalLog();
  auto lines = logLines("new_reference");
  ASSERT_EQ(lines.size(), 2u) << incrementalLog();
  EXPECT_NE(lines[0].find("a new reference to sleep"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("a reference to sleep is gone"), std::string::npos)
      << lines[1];
}

// An archive the command line names (as git's Makefile names libgit.a)
// is padded too: LLD reads a copy whose object members have room, and a
// member that grew within it is patched (verify mode: LLD's link of the
// same padded inputs). The state keeps what LLD read.
TEST_F(IncrementalTest, WithSlackArchiveMembersArePaddedToo) {
  growArchiveMember("main.o libcount.a");
}

// An archive found through -L and -l (as Makefiles name their own
// libraries) is padded as one the command line names: found where LLD
// finds it, a grown member patches, and stock LLD links the state's
// copies to the output's bytes.
TEST_F(IncrementalTest, WithSlackArchivesFoundByLAreToo) {
  growArchiveMember("main.o -L. -lcount");
}

// Without verify mode: each patch of a padded archive's member leaves the
// state's copy what LLD would read next, so the next edit patches again,
// and every output is stock LLD's link of the state's copies.
TEST_F(IncrementalTest, WithSlackAnArchivesCopyFollowsEachPatch) {
  writeFile("linkd.conf", "incremental_slack = 25%+64\n");
  writeFile("other.c", "int other_value(void) { return 41; }\n");
  const std::string build = "gcc -O2 -c counter.c main.c other.c && rm -f "
                            "libcount.a && ar rcs libcount.a counter.o other.o";
  const std::vector<std::string> inputs = {"main.o", "libcount.a"};
  gccBuildAndLink(build, "main.o libcount.a");
  EXPECT_TRUE(stockLinksTheStatesCopies(inputs));
  growStep();
  gccBuildAndLink(build, "main.o libcount.a");
  EXPECT_EQ(stat("incremental_patches"), 1) << incrementalLog();
  EXPECT_TRUE(stockLinksTheStatesCopies(inputs));
  std::string text = readFile("counter.c");
  writeFile("counter.c", text.replace(text.find("+ 11 +"), 6, "+ 19 +"));
  gccBuildAndLink(build, "main.o libcount.a");
  EXPECT_EQ(stat("incremental_patches"), 2) << incrementalLog();
  EXPECT_TRUE(stockLinksTheStatesCopies(inputs));
  // A member the link did not take, with the same definitions.
  writeFile("other.c", "int other_value(void) { return 42; }\n");
  gccBuildAndLink(build, "main.o libcount.a");
  EXPECT_EQ(stat("incremental_patches"), 3) << incrementalLog();
  EXPECT_TRUE(stockLinksTheStatesCopies(inputs));
}

TEST_F(IncrementalTest, OptionsThePatchCannotFollowLinkInFull) {
  // The user's own map: written as LLD writes it, and never patched.
  linkAndCompare("-Wl,-Map,user.map");
  edit("+ 11 +", "+ 13 +");
  linkAndCompare("-Wl,-Map,user.map");
  EXPECT_TRUE(exists("user.map"));
  EXPECT_EQ(stat("incremental_patches"), 0);
  EXPECT_EQ(stat("not_eligible"), 2) << "incremental_fallbacks";
  // A changed option: a full link.
  linkAndCompare("-Wl,-z,now");
  EXPECT_EQ(stat("incremental_patches"), 0);
}

TEST_F(IncrementalTest, WithoutTheOptionNothingChangesAndTheVariableAsks) {
  ASSERT_TRUE(
      exitedZero(run("clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
                     " counter.o main.o -o prog")));
  EXPECT_EQ(stat("incremental_links"), 0);
  EXPECT_FALSE(exists("state/incremental")) << "no state without the option";
  edit("+ 11 +", "+ 13 +");
  linkAndCompare("", "LINKD_INCREMENTAL=1 ");
  edit("+ 13 +", "+ 15 +");
  RunResult r = run("LINKD_INCREMENTAL=1 clang-19 -fuse-ld=lld --ld-path=" +
                    binPath("ld.linkd") + " counter.o main.o -o prog");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(stat("incremental_patches"), 1);
  ASSERT_TRUE(
      exitedZero(run("clang-19 -fuse-ld=lld counter.o main.o -o stock")));
  EXPECT_TRUE(sameBytes("stock", "prog"));
}

TEST_F(IncrementalTest, WithTheDaemonOffTheOptionNeverReachesLld) {
  RunResult r = run(
      "LINKD_DISABLE=1 clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
      " -Wl,--linkd-incremental counter.o main.o -o prog");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  ASSERT_TRUE(
      exitedZero(run("clang-19 -fuse-ld=lld counter.o main.o -o stock")));
  EXPECT_TRUE(sameBytes("stock", "prog"));
}

// Each output's state holds a copy of it: the sixteen most recently linked
// outputs keep theirs.
TEST_F(IncrementalTest, OnlyTheLastSixteenOutputsKeepAState) {
  for (int i = 0; i < 18; ++i)
    ASSERT_TRUE(exitedZero(
        run("clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
            " -Wl,--linkd-incremental counter.o main.o -o "
            "prog" +
            std::to_string(i))));
  EXPECT_EQ(stat("incremental_full_links"), 18);
  RunResult states = run("ls state/incremental | grep -c -v '^result-'");
  EXPECT_EQ(states.out, "16\n");
  // The newest stayed: its next link patches.
  edit("+ 11 +", "+ 13 +");
  ASSERT_TRUE(
      exitedZero(run("clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
                     " -Wl,--linkd-incremental counter.o main.o -o "
                     "prog17")));
  EXPECT_EQ(stat("incremental_patches"), 1);
}

// The state shares the output's file, and a patch writes a spare and
// renames it over the output: after a full link, the copy of its output
// the full link's process made once the client had its answer (the ready
// spare); past the first patch, the output before last. Without a ready
// spare, the first patch copies the output. A file something else can see is
// never written: a program of it still running, a descriptor open on it,
// another name for it. An output written or removed after its link is no
// base for a patch.
TEST_F(IncrementalTest, TheSpareIsWrittenOnlyWhenNothingElseSeesIt) {
  auto written = [&] {
    auto lines = logLines("incremental: \"patched");
    if (lines.empty())
      return std::string("none");
    const std::string &l = lines.back();
    size_t at = l.find("write=") + 6;
    return l.substr(at, l.find(' ', at) - at);
  };
  linkAndCompare();
  ASSERT_TRUE(readySpareMade()) << incrementalLog();
  edit("+ 11 +", "+ 13 +");
  linkAndCompare(); // the ready spare, and its chunk hashes
  EXPECT_EQ(written(), "ready_spare");
  EXPECT_EQ(run("ls state/incremental/*/ | grep -c '^spare[.]ready'").out,
            "0\n");
  edit("+ 13 +", "+ 15 +");
  linkAndCompare(); // LLD's output (no other name, unused) is the spare
  EXPECT_EQ(written(), "spare");
  edit("+ 15 +", "+ 17 +");
  linkAndCompare();
  EXPECT_EQ(written(), "spare");
  EXPECT_EQ(stat("incremental_patches"), 3);

  // A program of the file still runs (ETXTBSY), a descriptor is open on
  // it, a process maps it with no descriptor left (a loaded library): when
  // it is the spare, the output is a copy and the held file keeps its
  // bytes.
  struct Case {
    const char *what, *hold, *check;
  } cases[] = {
      {"running", "exec ./prog --wait",
       "cmp /proc/$(cat held.pid)/exe held.bytes"},
      {"open", "exec 3<prog; exec sleep 60",
       "cmp /proc/$(cat held.pid)/fd/3 held.bytes"},
      {"mapped",
       "exec python3 -c \"import mmap, os, time\n"
       "f = open('prog', 'rb')\n"
       "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
       "f.close()\n"
       "while not os.path.exists('go'): time.sleep(0.02)\n"
       "same = m[:] == open('held.bytes', 'rb').read()\n"
       "open('mapped.result', 'w').write('same' if same else 'differs')\n"
       "time.sleep(60)\"",
       "touch go && for i in $(seq 250); do test -s mapped.result && break; "
       "sleep 0.02; done; grep -qx same mapped.result"},
  };
  int value = 17;
  auto nextEdit = [&] {
    std::string from = "+ " + std::to_string(value) + " +";
    value += 2;
    edit(from, "+ " + std::to_string(value) + " +");
    linkAndCompare();
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_TRUE(exitedZero(run("rm -f held.pid && cp prog held.bytes")));
    Background held = start(std::string("echo $$ > held.pid; ") + c.hold);
    ASSERT_TRUE(exitedZero(run("for i in $(seq 100); do test -s held.pid && "
                               "break; sleep 0.05; done; sleep 0.3")));
    // The held file is the spare after one relink; the next one would
    // write it.
    nextEdit();
    nextEdit();
    EXPECT_EQ(written(), "copy");
    EXPECT_TRUE(exitedZero(run(c.check))) << "the held file was written";
    kill(held.pid, SIGKILL);
    wait(held);
    nextEdit();
    nextEdit();
    EXPECT_EQ(written(), "spare") << "once nothing holds it";
  }
  EXPECT_EQ(stat("incremental_full_links"), 1) << incrementalLog();

  // One name more for the output: its file changed after the link (its
  // link count), a full link; the other name keeps its bytes.
  ASSERT_TRUE(exitedZero(run("ln prog prog.other && cp prog held.bytes")));
  nextEdit();
  EXPECT_EQ(stat("output_changed"), 1) << incrementalLog();
  nextEdit();
  nextEdit();
  EXPECT_TRUE(exitedZero(run("cmp prog.other held.bytes")));

  // The output written in place after its link: a full link.
  long long full = stat("incremental_full_links");
  ASSERT_TRUE(exitedZero(
      run("printf X | dd of=prog bs=1 seek=200 conv=notrunc 2>/dev/null")));
  edit("g = 3", "g = 4");
  linkAndCompare();
  EXPECT_EQ(stat("output_changed"), 2) << incrementalLog();
  EXPECT_EQ(stat("incremental_full_links"), full + 1);
  // Removed: a full link too.
  ASSERT_TRUE(exitedZero(run("rm prog")));
  edit("g = 4", "g = 5");
  linkAndCompare();
  EXPECT_EQ(stat("output_changed"), 3) << incrementalLog();

  // Without its ready spare (not made yet, or gone), the first patch after
  // a full link copies the output; the chunk hashes alone are still used
  // (and gone with the patch). Each full link left one ready spare, of its
  // own output; a patch took it or the next full link removed it.
  ASSERT_TRUE(readySpareMade()) << incrementalLog();
  ASSERT_TRUE(exitedZero(run("ls state/incremental/*/spare.ready-* | grep "
                             "-v '[.]chunks$' | xargs rm")));
  edit("g = 5", "g = 6");
  linkAndCompare();
  EXPECT_EQ(written(), "copy");
  EXPECT_EQ(run("ls state/incremental/*/ | grep -c '^spare\\.ready'").out,
            "0\n");
}

// An output on another file system than the state (/dev/shm): the state
// keeps a copy of its own, and patches follow it.
TEST_F(IncrementalTest, AnOutputOnAnotherFileSystemKeepsAStateCopy) {
  std::string shm = run("mktemp -d /dev/shm/linkd-inc.XXXXXX").out;
  ASSERT_FALSE(shm.empty());
  shm.pop_back();
  atTeardown([this, shm] { run("rm -rf " + shm); });
  auto linkTo = [&] {
    ASSERT_TRUE(exitedZero(
        run("clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
            " -Wl,--linkd-incremental counter.o main.o -o " + shm + "/prog")));
    ASSERT_TRUE(
        exitedZero(run("clang-19 -fuse-ld=lld counter.o main.o -o stock")));
    EXPECT_TRUE(exitedZero(run("cmp stock " + shm + "/prog")));
  };
  linkTo();
  edit("+ 11 +", "+ 13 +");
  linkTo();
  edit("+ 13 +", "+ 15 +");
  linkTo();
  EXPECT_EQ(stat("incremental_patches"), 2) << incrementalLog();
  EXPECT_EQ(logLines("write=copy_own_state").size(), 2u);
}

// A project's own static library, rebuilt by `ar` after an edit (GNU ar
// and llvm-ar): the changed member the last link took is patched like an
// object; a member it did not take may change as long as it defines the
// same symbols; a new definition or a new member links in full. The
// library is found by -L. -l, which LLD's map spells `./libcount.a`.
TEST_F(IncrementalTest, ChangedMembersOfAnArchiveArePatched) {
  writeFile("other.c", "int other_value(void) { return 41; }\n");
  ASSERT_TRUE(exitedZero(run(
      "clang-19 -O2 -g -c other.c && ar rcs libcount.a counter.o other.o")));
  std::string libs = "-L. -lcount";
  auto linkLib = [&] {
    RunResult r = run("clang-19 -fuse-ld=lld --ld-path=" + binPath("ld.linkd") +
                      " -Wl,--linkd-incremental main.o -o prog " + libs);
    ASSERT_TRUE(exitedZero(r)) << describe(r);
    ASSERT_TRUE(
        exitedZero(run("clang-19 -fuse-ld=lld main.o -o stock " + libs)));
    EXPECT_TRUE(sameBytes("stock", "prog"));
    EXPECT_TRUE(exitedZero(run("./prog")));
  };
  linkLib();
  // The member the link took, edited and put back by ar.
  edit("+ 11 +", "+ 13 +");
  ASSERT_TRUE(exitedZero(run("ar rcs libcount.a counter.o")));
  linkLib();
  EXPECT_EQ(stat("incremental_patches"), 1) << incrementalLog();
  EXPECT_EQ(logLines("incremental: \"patched objects=1").size(), 1u)
      << incrementalLog();
  // llvm-ar too, and twice in a row (the state follows).
  edit("+ 13 +", "+ 15 +");
  ASSERT_TRUE(exitedZero(run("llvm-ar-19 rcs libcount.a counter.o")));
  linkLib();
  EXPECT_EQ(stat("incremental_patches"), 2) << incrementalLog();
  // A member the link did not take, changed with the same definitions:
  // nothing to write, still LLD's bytes.
  writeFile("other.c", "int other_value(void) { return 43; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -g -c other.c && ar rcs "
                             "libcount.a other.o")));
  linkLib();
  EXPECT_EQ(stat("incremental_patches"), 3) << incrementalLog();
  // ... and with a new definition: LLD might take it now.
  writeFile("other.c", "int other_value(void) { return 43; }\n"
                       "int more_value(void) { return 44; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -g -c other.c && ar rcs "
                             "libcount.a other.o")));
  linkLib();
  EXPECT_EQ(stat("incremental_patches"), 3) << incrementalLog();
  EXPECT_EQ(logLines("(other.o) (not in the last link) defines or needs "
                     "other symbols")
                .size(),
            1u)
      << incrementalLog();
  // The state's copy follows: the next edit patches again.
  edit("+ 15 +", "+ 17 +");
  ASSERT_TRUE(exitedZero(run("ar rcs libcount.a counter.o")));
  linkLib();
  EXPECT_EQ(stat("incremental_patches"), 4) << incrementalLog();
  // A member added: what LLD takes may change, a full link.
  writeFile("extra.c", "int extra_value(void) { return 45; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -c extra.c && ar rcs "
                             "libcount.a extra.o")));
  linkLib();
  EXPECT_EQ(stat("incremental_patches"), 4) << incrementalLog();
  EXPECT_EQ(logLines("libcount.a: members added or removed").size(), 1u)
      << incrementalLog();
}

// A library that appears in an earlier -L directory than the one the last
// link used is what LLD would take now (a vendored zlib before Debian's):
// the paths the last link looked for and did not find are in the state,
// and one that exists now ends the patch.
TEST_F(IncrementalTest, ALibraryAppearingEarlierOnTheSearchPathLinksInFull) {
  writeFile("main.c",
            replaceAll(replaceAll(kMain, "  show();",
                                  "  show();\n  puts(zlibVersion());"),
                       "int step(int);",
                       "int step(int);\nconst char *zlibVersion(void);"));
  writeFile("fake.c",
            "const char *zlibVersion(void) { return \"vendored\"; }\n");
  ASSERT_TRUE(
      exitedZero(run("clang-19 -O2 -g -c main.c fake.c && mkdir -p vendor")));
  std::string libs = "-Lvendor -lz";
  linkAndCompare(libs);
  edit("+ 11 +", "+ 13 +");
  linkAndCompare(libs);
  EXPECT_EQ(stat("incremental_patches"), 1) << incrementalLog();
  // libz.a in the earlier directory: LLD takes it, so the link is full.
  ASSERT_TRUE(exitedZero(run("ar rcs vendor/libz.a fake.o")));
  edit("+ 13 +", "+ 15 +");
  linkAndCompare(libs);
  EXPECT_EQ(stat("incremental_patches"), 1) << incrementalLog();
  EXPECT_EQ(logLines("vendor/libz.a exists now").size(), 1u)
      << incrementalLog();
  EXPECT_NE(run("./prog").out.find("vendored"), std::string::npos);
}

// The state directory, the result file and verify mode are the daemon's
// to choose: a client that sends a plan of its own (or a rewrite plan) is
// refused before anything runs, and the daemon keeps serving.
TEST_F(IncrementalTest, AClientsOwnPlanIsRefused) {
  linkAndCompare(); // the daemon runs
  ASSERT_TRUE(exitedZero(run("mkdir -p planted")));
  auto request = [&](const std::string &extra) {
    return R"({"protocolVersion": 1, "flavor": "FLAVOR_ELF", "argv": ["ld.lld",
        "-e", "main", "counter.o", "main.o", "-o", "out"], "cwd": ")" +
           path("") + "\", \"incremental\": true, " + extra + "}";
  };
  struct Case {
    const char *what;
    std::string extra;
  } cases[] = {
      {"incremental_plan is the daemon's to set",
       "\"incrementalPlan\": {\"stateDir\": \"" + path("planted") +
           "\", \"resultFile\": \"" + path("planted/result") + "\"}"},
      {"rewrite_plan is the daemon's to set",
       "\"rewritePlan\": {\"match\": \"*\", \"dir\": \"" + path("planted") +
           "\"}"},
  };
  for (const Case &c : cases) {
    writeFile("request.json", request(c.extra));
    RunResult r =
        run(binPath("farm_peer") + " local " + socketPath + " request.json");
    EXPECT_EQ(r.out, std::string("error=") + c.what + "\n") << describe(r);
  }
  EXPECT_EQ(run("ls -A planted").out, "") << "a plan of the client's ran";
  EXPECT_FALSE(exists("out"));
  // The same request without a plan is a link like any other.
  writeFile("request.json", request("\"umask\": 18"));
  RunResult r =
      run(binPath("farm_peer") + " local " + socketPath + " request.json");
  EXPECT_EQ(r.out, "exit=1\n") << describe(r); // no libc: main's printf
  EXPECT_EQ(stat("incremental_links"), 2);
}

// gcc's driver, as builds run it: -B with linkd's `ld`, the LTO plugin
// options gcc passes by default (a temporary resolution file each time).
TEST_F(IncrementalTest, GccDriverPatchesToo) {
  ASSERT_TRUE(haveTool(tools::gcc));
  ASSERT_TRUE(exitedZero(run("gcc -O2 -c counter.c main.c")));
  std::string link = "gcc -B" + binDir() +
                     "/gcc/ -Wl,--linkd-incremental "
                     "counter.o main.o -o prog";
  ASSERT_TRUE(exitedZero(run(link)));
  std::string text = readFile("counter.c");
  writeFile("counter.c",
            text.replace(text.find("+ 11 +"), 6, std::string("+ 19 +")));
  ASSERT_TRUE(exitedZero(run("gcc -O2 -c counter.c")));
  RunResult r = run(link);
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_EQ(stat("incremental_patches"), 1)
      << (logLines("incremental:").empty() ? ""
                                           : logLines("incremental:").back());
  ASSERT_TRUE(exitedZero(run("mkdir -p stockgcc && ln -sf " +
                             tools::ldLld.path + " stockgcc/ld")));
  ASSERT_TRUE(exitedZero(
      run("gcc -B" + path("stockgcc") + "/ counter.o main.o -o stock")));
  EXPECT_TRUE(sameBytes("stock", "prog"));
  EXPECT_TRUE(exitedZero(run("./prog")));
}

} // namespace
} // namespace linkd::e2e
