// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// checkRelink on objects clang-19 compiles from real edits of one file: the
// edits a patch can take (a changed constant; a new statement or local
// variable within the slack), and each reason a full link is needed
// instead (a new or renamed function, a new string, a new GOT entry, more
// absolute relocations, a section that outgrew its slot, debug names).
#include "incremental/relink_check.h"
#include "util/files.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace linkd::incremental {
namespace {

class RelinkCheckTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/linkd-relink-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { removeTree(dir); }

  // `source` compiled by clang-19 with `flags` (as a build would: -c, no
  // section-per-function unless asked).
  // One file, edited in place, as in a real build (its name is in the
  // object's STT_FILE symbol).
  std::string compile(const std::string &source,
                      const std::string &flags = "-O2") {
    std::string c = dir + "/unit.c";
    std::string o = dir + "/edit" + std::to_string(n++) + ".o";
    std::ofstream(c) << source;
    std::string cmd = "clang-19 " + flags + " -c " + c + " -o " + o;
    if (std::system(cmd.c_str()) != 0)
      return {};
    return readFile(o).value_or("");
  }

  RelinkCheck check(const std::string &before, const std::string &after,
                    const std::string &flags = "-O2", SlackPolicy slack = {}) {
    std::string a = compile(before, flags), b = compile(after, flags);
    EXPECT_FALSE(a.empty());
    EXPECT_FALSE(b.empty());
    return checkRelink(llvm::MemoryBufferRef(a, "old.o"),
                       llvm::MemoryBufferRef(b, "new.o"), slack);
  }

  std::string dir;
  int n = 0;
};

// A translation unit of a real program's shape: state, helpers, a table.
const std::string kBase = R"(
#include <stdio.h>
extern int ext_value(int);
static int counter;
int limit = 10;
static int clamp(int v) { return v > limit ? limit : v; }
int step(int x) {
  counter += x;
  return clamp(counter * 3 + ext_value(x));
}
const char *name(void) { return "step"; }
int report(int x) { printf("%s %d\n", name(), step(x)); return counter; }
)";

std::string edited(std::string from, const std::string &what,
                   const std::string &with) {
  size_t at = from.find(what);
  EXPECT_NE(at, std::string::npos) << what;
  return from.replace(at, what.size(), with);
}

TEST_F(RelinkCheckTest, TheSameObjectIsPatchableWithNothingToWrite) {
  RelinkCheck c = check(kBase, kBase);
  EXPECT_TRUE(c.patchable) << c.reason;
  EXPECT_TRUE(c.changedSections.empty());
  EXPECT_EQ(c.changedBytes, 0u);
}

TEST_F(RelinkCheckTest, AChangedConstantIsPatched) {
  RelinkCheck c = check(kBase, edited(kBase, "counter * 3", "counter * 5"));
  ASSERT_TRUE(c.patchable) << c.kind << ": " << c.reason;
  EXPECT_EQ(c.changedSections, std::vector<std::string>{".text"});
  EXPECT_GT(c.changedBytes, 0u);
  EXPECT_LT(c.changedBytes, 16u);
  EXPECT_GT(c.relocations, 0u) << ".text's relocations are re-applied";
}

TEST_F(RelinkCheckTest, ANewStatementNeedsSlack) {
  std::string after =
      edited(kBase, "counter += x;", "counter += x;\n  counter ^= x >> 2;");
  RelinkCheck tight = check(kBase, after);
  EXPECT_FALSE(tight.patchable);
  EXPECT_EQ(tight.kind, "section_outgrew") << tight.reason;
  EXPECT_NE(tight.reason.find("section .text outgrew its slot"),
            std::string::npos)
      << tight.reason;
  RelinkCheck roomy = check(kBase, after, "-O2", {25, 64});
  EXPECT_TRUE(roomy.patchable) << roomy.kind << ": " << roomy.reason;
}

TEST_F(RelinkCheckTest, ANewLocalVariableWithinTheSlackIsPatched) {
  std::string after =
      edited(kBase, "  counter += x;\n",
             "  int scaled = x * limit;\n  counter += x + scaled;\n");
  RelinkCheck c = check(kBase, after, "-O2", {25, 64});
  EXPECT_TRUE(c.patchable) << c.kind << ": " << c.reason;
}

TEST_F(RelinkCheckTest, ANewOrRenamedFunctionIsAFullLink) {
  RelinkCheck added =
      check(kBase, kBase + "int twice(int x) { return step(x) * 2; }\n", "-O2",
            {100, 256});
  EXPECT_EQ(added.kind, "symbols_changed") << added.reason;
  EXPECT_NE(added.reason.find("twice"), std::string::npos) << added.reason;

  std::string renamed = edited(edited(kBase, "int report(", "int show("),
                               "const char *name", "const char *label");
  renamed = edited(renamed, "name(), step", "label(), step");
  RelinkCheck r = check(kBase, renamed, "-O2", {100, 256});
  EXPECT_EQ(r.kind, "symbols_changed") << r.reason;
}

// A call to a function the object did not name is a new reference: the
// object alone cannot tell whether the link resolves it already (the
// patch asks the other objects). A weak one changes what LLD binds.
TEST_F(RelinkCheckTest, ACallToANewExternalFunctionIsANewReference) {
  RelinkCheck c = check(
      kBase, edited(kBase, "return counter; }", "return counter + getpid(); }"),
      "-O2 -include unistd.h", {100, 256});
  EXPECT_TRUE(c.patchable) << c.kind << ": " << c.reason;
  EXPECT_EQ(c.newReferences, std::vector<std::string>{"getpid"});
  RelinkCheck weak =
      check(kBase,
            "extern int linkd_probe(void) __attribute__((weak));\n" +
                edited(kBase, "counter += x;",
                       "counter += x + (linkd_probe ? linkd_probe() : 0);"),
            "-O2", {100, 256});
  EXPECT_EQ(weak.kind, "symbols_changed") << weak.reason;
  EXPECT_NE(weak.reason.find("linkd_probe"), std::string::npos) << weak.reason;
}

// The other way: a call removed, and with it the object's last mention of
// the function, is a gone reference (the patch asks whether the output
// keeps it); a weak one the object no longer names changes the symbols.
TEST_F(RelinkCheckTest, ARemovedCallToAnExternalFunctionIsAGoneReference) {
  std::string with =
      edited(kBase, "return counter; }", "return counter + getpid(); }");
  RelinkCheck c = check(with, kBase, "-O2 -include unistd.h", {100, 256});
  EXPECT_TRUE(c.patchable) << c.kind << ": " << c.reason;
  EXPECT_EQ(c.goneReferences, std::vector<std::string>{"getpid"});
  EXPECT_TRUE(c.newReferences.empty());
  // Position-independent: its PLT need goes with it, for the patch to ask.
  RelinkCheck pic =
      check(with, kBase, "-O2 -fPIC -include unistd.h", {100, 256});
  EXPECT_TRUE(pic.patchable) << pic.kind << ": " << pic.reason;
  EXPECT_EQ(pic.goneReferences, std::vector<std::string>{"getpid"});
  std::string weak =
      "extern int linkd_probe(void) __attribute__((weak));\n" +
      edited(kBase, "counter += x;",
             "counter += x + (linkd_probe ? linkd_probe() : 0);");
  RelinkCheck w = check(weak, kBase, "-O2", {100, 256});
  EXPECT_EQ(w.kind, "symbols_changed") << w.reason;
  EXPECT_NE(w.reason.find("linkd_probe"), std::string::npos) << w.reason;
}

TEST_F(RelinkCheckTest, ANewStringIsAFullLink) {
  RelinkCheck c = check(
      kBase,
      edited(kBase, "return \"step\";", "return x_mode ? \"steps\" : \"step\";")
          .insert(0, "int x_mode;\n"),
      "-O2", {100, 256});
  // A new symbol (x_mode) comes first; without it the merged string is
  // what stops the patch.
  EXPECT_FALSE(c.patchable);
  std::string base = "int x_mode;\n" + kBase;
  RelinkCheck s = check(
      base,
      edited(base, "return \"step\";", "return x_mode ? \"steps\" : \"step\";"),
      "-O2", {100, 256});
  EXPECT_EQ(s.kind, "merged_changed") << s.reason;
  EXPECT_NE(s.reason.find(".rodata.str1.1"), std::string::npos) << s.reason;
}

TEST_F(RelinkCheckTest, ANewGotEntryIsAFullLink) {
  // Position-independent code: calling ext_value goes through the PLT,
  // taking its address through the GOT.
  std::string after = edited(kBase, "counter += x;",
                             "counter += x + (int)(__SIZE_TYPE__)&ext_value;");
  RelinkCheck c = check(kBase, after, "-O2 -fPIC", {100, 256});
  EXPECT_EQ(c.kind, "linker_entries_changed") << c.reason;
  EXPECT_NE(c.reason.find("a new GOT entry for ext_value"), std::string::npos)
      << c.reason;
}

TEST_F(RelinkCheckTest, MoreAbsoluteRelocationsAreAFullLink) {
  std::string base = kBase + "int (*table[])(int) = {step, step};\n";
  RelinkCheck c =
      check(base, edited(base, "{step, step}", "{step, step, step}"), "-O2",
            {100, 256});
  EXPECT_EQ(c.kind, "linker_entries_changed") << c.reason;
  EXPECT_NE(c.reason.find("absolute relocations"), std::string::npos)
      << c.reason;
}

TEST_F(RelinkCheckTest, DebugInfoFollowsTheSameRules) {
  // A changed constant leaves the names alone: patched, line table and all.
  RelinkCheck k =
      check(kBase, edited(kBase, "counter * 3", "counter * 5"), "-O2 -g");
  EXPECT_TRUE(k.patchable) << k.kind << ": " << k.reason;
  // A new local variable's name is a new piece of the merged .debug_str.
  std::string after =
      edited(kBase, "  counter += x;\n",
             "  int scaled = x * limit;\n  counter += x + scaled;\n");
  RelinkCheck v = check(kBase, after, "-O2 -g", {100, 256});
  EXPECT_EQ(v.kind, "merged_changed") << v.reason;
  EXPECT_NE(v.reason.find(".debug_str"), std::string::npos) << v.reason;
}

TEST_F(RelinkCheckTest, WhatIsNotAnX8664ObjectIsSaidSo) {
  std::string good = compile(kBase);
  std::string junk = "not an object at all";
  RelinkCheck c = checkRelink(llvm::MemoryBufferRef(good, "old.o"),
                              llvm::MemoryBufferRef(junk, "new.o"), {});
  EXPECT_EQ(c.kind, "not_x86_64_object");
  EXPECT_NE(c.reason.find("new.o"), std::string::npos) << c.reason;
  std::string arm = compile(kBase, "-O2 --target=aarch64-linux-gnu");
  if (!arm.empty()) {
    RelinkCheck a = checkRelink(llvm::MemoryBufferRef(arm, "old.o"),
                                llvm::MemoryBufferRef(arm, "new.o"), {});
    EXPECT_EQ(a.kind, "not_x86_64_object") << a.reason;
  }
}

TEST(SlackPolicy, SlotsAreRoundedToTheAlignment) {
  EXPECT_EQ((SlackPolicy{}).slot(100, 16), 100u);       // no padding, no room
  EXPECT_EQ((SlackPolicy{25, 64}).slot(100, 16), 192u); // 100+25+64 -> 192
  EXPECT_EQ((SlackPolicy{0, 0}).slot(0, 1), 0u);
}

} // namespace
} // namespace linkd::incremental
