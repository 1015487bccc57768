// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The rename table's rules (scopes, name forms per format, COMDAT group
// closure, collisions), the spec's parsing and canonical form, and COFF
// directive rewriting: the logic of lib/rewrite that needs no object file.
#include "rewrite/object_rewriter.h"
#include "rewrite/rename_table.h"
#include "rewrite/rewrite_spec.h"

#include <gtest/gtest.h>

namespace linkd::rewrite {
namespace {

RewriteSpec haliSpec() {
  RewriteSpec spec;
  spec.match = "halide_";
  spec.exportPrefix = "rtA_";
  spec.internalPrefix = "rtAi_";
  return spec;
}

ScannedObject object(std::string file, Scope scope, NameStyle style,
                     std::vector<ScannedSymbol> syms,
                     std::vector<ScannedGroup> groups = {}) {
  return {std::move(file),   scope, style, std::move(syms),
          std::move(groups), {}};
}

RenameTable built(const RewriteSpec &spec, std::vector<ScannedObject> objs) {
  RenameTable::Built b = RenameTable::build(spec, objs);
  EXPECT_TRUE(b.errors.empty()) << b.errors.front();
  return b.table;
}

std::string renamed(const RenameTable &t, Scope scope, NameStyle style,
                    const std::string &raw) {
  return t.rename(scope, style, raw).value_or("<unchanged>");
}

TEST(RenameTable, RuntimeScope) {
  auto t = built(haliSpec(), {object("rt.o", Scope::Runtime, NameStyle::Elf,
                                     {{"halide_set", true},
                                      {"_ZN2rt5stateE", true},
                                      {"weakv", true},
                                      {"halide_log", false},
                                      {"malloc", false}})});
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "halide_set"),
            "rtA_set");
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "halide_log"),
            "rtA_log");
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "_ZN2rt5stateE"),
            "rtAi__ZN2rt5stateE");
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "weakv"), "rtAi_weakv");
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "malloc"),
            "<unchanged>");
}

TEST(RenameTable, KernelScopeImportsAndInternalReferences) {
  RewriteSpec spec = haliSpec();
  spec.importPrefix = "imp_";
  auto t = built(spec, {object("rt.o", Scope::Runtime, NameStyle::Elf,
                               {{"_ZN2rt5stateE", true}}),
                        object("k.o", Scope::Kernel, NameStyle::Elf,
                               {{"kernel_run", true},
                                {"halide_set", false},
                                {"_ZN2rt5stateE", false}})});
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Elf, "halide_set"), "imp_set");
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Elf, "_ZN2rt5stateE"),
            "rtAi__ZN2rt5stateE");
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Elf, "kernel_run"),
            "<unchanged>");
  // Kernels' own definitions never join the internal set.
  EXPECT_EQ(t.internalNames().count("kernel_run"), 0u);
}

TEST(RenameTable, ImportPrefixDefaultsToExportPrefix) {
  auto t = built(haliSpec(), {});
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Elf, "halide_x"), "rtA_x");
}

TEST(RenameTable, MachOKeepsTheUnderscoreInFront) {
  auto t = built(
      haliSpec(),
      {object("rt.o", Scope::Runtime, NameStyle::MachO,
              {{"_halide_x", true}, {"__ZN2rt1sE", true}, {"ltmp0", true}})});
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::MachO, "_halide_x"),
            "_rtA_x");
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::MachO, "__ZN2rt1sE"),
            "_rtAi__ZN2rt1sE");
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::MachO, "ltmp0"),
            "<unchanged>");
}

TEST(RenameTable, CoffDerivedNamesFollowTheirSymbol) {
  auto t = built(haliSpec(), {object("rt.o", Scope::Runtime, NameStyle::Coff,
                                     {{"state", true},
                                      {".refptr.state", true},
                                      {".weak.hook.default.state", true},
                                      {"hook", true}})});
  // A derived definition does not define its base.
  EXPECT_EQ(t.internalNames().count(".refptr.state"), 0u);
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Coff, "__imp_state"),
            "__imp_rtAi_state");
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Coff, ".refptr.state"),
            ".refptr.rtAi_state");
  EXPECT_EQ(
      renamed(t, Scope::Runtime, NameStyle::Coff, ".weak.hook.default.state"),
      ".weak.rtAi_hook.default.rtAi_state");
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Coff, "__imp_halide_f"),
            "__imp_rtA_f");
}

TEST(RenameTable, ElfSymbolVersionsKeepTheirVersion) {
  auto t = built(haliSpec(), {});
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "halide_f@@V1"),
            "rtA_f@@V1");
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "halide_f@V0"),
            "rtA_f@V0");
}

TEST(RenameTable, ExplicitRenamesComeFirst) {
  RewriteSpec spec = haliSpec();
  ASSERT_EQ(addRename(spec, "halide_special=special_one"), "");
  auto t =
      built(spec, {object("x.o", Scope::Other, NameStyle::Elf,
                          {{"halide_special", true}, {"halide_y", true}})});
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Elf, "halide_special"),
            "special_one");
  EXPECT_EQ(renamed(t, Scope::Other, NameStyle::Elf, "halide_special"),
            "special_one");
  // Inputs outside both scopes get explicit renames only.
  EXPECT_EQ(renamed(t, Scope::Other, NameStyle::Elf, "halide_y"),
            "<unchanged>");
}

// A kernel's own inline function named with MATCH: its group signature is
// renamed, so its guard variable must be too (lld-library-facts.md, the
// guard-variable trap), and it takes the internal prefix.
TEST(RenameTable, GroupMembersFollowTheirSignature) {
  auto t = built(
      haliSpec(),
      {object(
          "k.o", Scope::Kernel, NameStyle::Elf,
          {{"halide_inl", true}, {"_ZGVZ10halide_inlvE1s", true}},
          {{"halide_inl", true, {"halide_inl", "_ZGVZ10halide_inlvE1s"}}})});
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Elf, "_ZGVZ10halide_inlvE1s"),
            "rtAi__ZGVZ10halide_inlvE1s");
}

TEST(RenameTable, GroupClosureIsTransitive) {
  // g1 = {halide_a, x}; g2 = {x2 keyed, x}: renaming x forces g2's key too.
  auto t = built(haliSpec(),
                 {object("k.o", Scope::Kernel, NameStyle::Elf,
                         {{"halide_a", true}, {"x", true}, {"y", true}},
                         {{"halide_a", true, {"x"}}, {"y", true, {"x"}}})});
  EXPECT_EQ(renamed(t, Scope::Kernel, NameStyle::Elf, "y"), "rtAi_y");
}

TEST(RenameTable, GroupRenameWithoutInternalPrefixIsAnError) {
  RewriteSpec spec;
  ASSERT_EQ(addRename(spec, "_ZN1GIiE1vE=gv"), "");
  std::vector<ScannedObject> objs{
      object("t.o", Scope::Other, NameStyle::Elf,
             {{"_ZN1GIiE1vE", true}, {"_ZGVN1GIiE1vE", true}},
             {{"_ZN1GIiE1vE", true, {"_ZN1GIiE1vE", "_ZGVN1GIiE1vE"}}})};
  RenameTable::Built b = RenameTable::build(spec, objs);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_NE(b.errors[0].find("t.o: '_ZGVN1GIiE1vE' is defined in COMDAT group "
                             "'_ZN1GIiE1vE'"),
            std::string::npos)
      << b.errors[0];
}

TEST(RenameTable, SectionKeyedGroupWithRenamedMemberIsAnError) {
  std::vector<ScannedObject> objs{object("rt.o", Scope::Runtime, NameStyle::Elf,
                                         {{"state", true}},
                                         {{".data.state", false, {"state"}}})};
  RenameTable::Built b = RenameTable::build(haliSpec(), objs);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_NE(b.errors[0].find("keyed by a section"), std::string::npos);
}

TEST(RenameTable, CollisionNamesBothSymbolsAndFiles) {
  std::vector<ScannedObject> objs{
      object("a.o", Scope::Runtime, NameStyle::Elf, {{"state", true}}),
      object("b.o", Scope::Kernel, NameStyle::Elf, {{"rtAi_state", true}})};
  RenameTable::Built b = RenameTable::build(haliSpec(), objs);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_EQ(b.errors[0], "renaming 'state' (a.o) to 'rtAi_state' collides "
                         "with 'rtAi_state' (b.o), already defined");
}

TEST(RenameTable, SameSymbolInManyFilesIsNoCollision) {
  // COMDAT/weak copies of one symbol all map to one name: that is merging.
  auto t =
      built(haliSpec(),
            {object("a.o", Scope::Runtime, NameStyle::Elf, {{"inl", true}}),
             object("b.o", Scope::Runtime, NameStyle::Elf, {{"inl", true}}),
             object("k.o", Scope::Kernel, NameStyle::Elf, {{"inl", true}})});
  EXPECT_EQ(t.records().size(), 3u);
  EXPECT_EQ(t.records()[2].file, "k.o");
  EXPECT_EQ(t.records()[2].newName, "rtAi_inl");
}

TEST(RenameTable, LlvmNamesInBitcodeAreNeverRenamed) {
  RewriteSpec spec = haliSpec();
  spec.renames["llvm.used"] = "x";
  auto t = built(spec, {object("rt.bc", Scope::Runtime, NameStyle::Ir,
                               {{"llvm.global_ctors", true},
                                {"llvm.memcpy.p0.p0.i64", false},
                                {"fini", true}})});
  for (const char *name : {"llvm.global_ctors", "llvm.global_dtors",
                           "llvm.used", "llvm.compiler.used"})
    EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Ir, name), "<unchanged>")
        << name;
  EXPECT_EQ(renamed(t, Scope::Runtime, NameStyle::Ir, "fini"), "rtAi_fini");
  EXPECT_EQ(t.internalNames().count("llvm.global_ctors"), 0u);
}

TEST(RenameTable, I386CoffCNamesAndDecorations) {
  RewriteSpec spec = haliSpec();
  spec.renames["plain"] = "other";
  auto t = built(spec, {object("rt.o", Scope::Runtime, NameStyle::Coff32,
                               {{"_halide_set", true},
                                {"_helper", true},
                                {"?state@rt@@3HA", true},
                                {"@feat.00", true},
                                {"asm_label", true}})});
  auto r = [&](const char *raw) {
    return renamed(t, Scope::Runtime, NameStyle::Coff32, raw);
  };
  EXPECT_EQ(r("_halide_set"), "_rtA_set");
  EXPECT_EQ(r("_halide_std@8"), "_rtA_std@8");
  EXPECT_EQ(r("@halide_fast@8"), "@rtA_fast@8");
  EXPECT_EQ(r("halide_vec@@16"), "rtA_vec@@16");
  EXPECT_EQ(r("__imp__halide_set"), "__imp__rtA_set");
  EXPECT_EQ(r("_helper"), "_rtAi_helper");
  EXPECT_EQ(r(".weak._halide_w.default._helper"),
            ".weak._rtA_w.default._rtAi_helper");
  EXPECT_EQ(r("?state@rt@@3HA"), "rtAi_?state@rt@@3HA");
  EXPECT_EQ(r("_plain@4"), "_other@4");
  // Not C-level names on i386: never renamed.
  EXPECT_EQ(r("@feat.00"), "<unchanged>");
  EXPECT_EQ(r("asm_label"), "<unchanged>");
  EXPECT_EQ(t.internalNames().count("_helper"), 0u);
}

TEST(RenameTable, AmdgpuKernelsExportsSlotsAndDeviceLibraryNames) {
  RewriteSpec spec = haliSpec();
  spec.renames["slot_b"] = "rtA_slot_b";
  using R = SymbolRole;
  auto t = built(spec, {object("lib.o", Scope::Runtime, NameStyle::Amdgpu,
                               {{"halide_k", true, R::Kernel},
                                {"halide_k.kd", true, R::Kernel},
                                {"entry", true, R::Kernel},
                                {"entry.kd", true, R::Kernel},
                                {"mv", true, R::Plain},
                                {"mv.managed", true, R::Plain},
                                {"exported_table", true, R::Export},
                                {"halide_slot", true, R::Slot},
                                {"slot_b", true, R::Slot},
                                {"__oclc_ABI_version", true, R::Plain},
                                {"__hip_cuid_1234", true, R::Plain},
                                {"priv", true, R::Plain}})});
  auto r = [&](const char *raw) {
    return renamed(t, Scope::Runtime, NameStyle::Amdgpu, raw);
  };
  EXPECT_EQ(r("halide_k"), "rtA_k");
  EXPECT_EQ(r("halide_k.kd"), "rtA_k.kd");
  EXPECT_EQ(r("entry"), "<unchanged>"); // an export: no internal prefix
  EXPECT_EQ(r("entry.kd"), "<unchanged>");
  EXPECT_EQ(r("mv"), "rtAi_mv");
  EXPECT_EQ(r("mv.managed"), "rtAi_mv.managed");
  EXPECT_EQ(r("exported_table"), "<unchanged>");
  EXPECT_EQ(r("halide_slot"), "<unchanged>"); // explicit renames only
  EXPECT_EQ(r("slot_b"), "rtA_slot_b");
  EXPECT_EQ(r("__oclc_ABI_version"), "<unchanged>");
  EXPECT_EQ(r("__hip_cuid_1234"), "<unchanged>");
  EXPECT_EQ(r("priv"), "rtAi_priv");
  // The roles are part of the table's cache key.
  EXPECT_NE(t.canonical().find("explicit-only 11:halide_slot\n"),
            std::string::npos)
      << t.canonical();
}

TEST(RewriteSpec, CanonicalIsOrderIndependentAndComplete) {
  RewriteSpec a = haliSpec(), b = haliSpec();
  ASSERT_EQ(addRename(a, "x=y"), "");
  ASSERT_EQ(addRename(a, "p=q"), "");
  ASSERT_EQ(addRename(b, "p=q"), "");
  ASSERT_EQ(addRename(b, "x=y"), "");
  EXPECT_EQ(a.canonical(), b.canonical());
  b.importPrefix = "rtA_"; // the default made explicit: the same spec
  EXPECT_EQ(a.canonical(), b.canonical());
  b.internalPrefix = "other_";
  EXPECT_NE(a.canonical(), b.canonical());
  // Length prefixes: moving a character between fields changes the text.
  RewriteSpec c, d;
  c.match = "ab";
  c.internalPrefix = "c";
  d.match = "a";
  d.internalPrefix = "bc";
  EXPECT_NE(c.canonical(), d.canonical());
}

TEST(RewriteSpec, RenameFile) {
  RewriteSpec spec;
  EXPECT_EQ(parseRenameFile(spec, "# c\n\nold new\n  a = b  \n", "r.txt"), "");
  EXPECT_EQ(spec.renames.at("old"), "new");
  EXPECT_EQ(spec.renames.at("a"), "b");
  EXPECT_EQ(parseRenameFile(spec, "ok=fine\nbad\n", "r.txt"),
            "r.txt:2: expected OLD=NEW, got 'bad'");
  EXPECT_EQ(parseRenameFile(spec, "a=c\n", "r.txt"),
            "r.txt:1: 'a' is renamed twice: to 'b' and 'c'");
  EXPECT_NE(parseRenameFile(spec, "=x\n", "r.txt"), "");
}

TEST(RewriteSpec, Validate) {
  RewriteSpec spec;
  EXPECT_NE(validate(spec), "");
  spec.exportPrefix = "x_";
  EXPECT_NE(validate(spec), ""); // an export prefix needs --match
  spec.match = "m_";
  EXPECT_EQ(validate(spec), "");
  spec.renames["__oclc_ABI_version"] = "x";
  EXPECT_NE(validate(spec).find("never renamed"), std::string::npos);
}

TEST(Directives, SymbolNamesInDirectivesAreRenamed) {
  auto rename = [](std::string_view name) -> std::optional<std::string> {
    if (name == "foo" || name == "bar")
      return "p_" + std::string(name);
    return std::nullopt;
  };
  EXPECT_EQ(rewriteDirectives(" /EXPORT:foo,DATA -export:bar /INCLUDE:\"foo\" "
                              "/alternatename:bar=baz /DEFAULTLIB:libcmt ",
                              rename),
            " /EXPORT:p_foo,DATA -export:p_bar /INCLUDE:\"p_foo\" "
            "/alternatename:p_bar=baz /DEFAULTLIB:libcmt ");
  EXPECT_EQ(rewriteDirectives("/EXPORT:other /merge:foo=bar", rename),
            std::nullopt);
}

} // namespace
} // namespace linkd::rewrite
