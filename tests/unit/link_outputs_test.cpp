// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// lib/link/link_outputs: the files a link may write, per flavor, and the
// path tidying the farm client compares with (docs/farm.md, "What a client
// accepts from a node").
#include "link/link_outputs.h"

#include <gtest/gtest.h>

namespace linkd {
namespace {

LinkOutputs outputs(Flavor f, std::vector<std::string> args) {
  return linkOutputs(f, args, "/w");
}

TEST(LinkOutputs, ElfOptions) {
  LinkOutputs o = outputs(Flavor::Elf, {"a.o", "-o", "bin/prog", "-Map=m.map",
                                        "--dependency-file", "/d/dep",
                                        "--why-extract=-", "--time-trace"});
  EXPECT_TRUE(o.allows("/w/bin/prog"));
  EXPECT_TRUE(o.allows("/w/m.map"));
  EXPECT_TRUE(o.allows("/d/dep"));
  EXPECT_TRUE(o.allows("/w/bin/prog.time-trace"));
  EXPECT_FALSE(o.allows("/w/a.out"));
  EXPECT_FALSE(o.allows("/w/-"));
  EXPECT_FALSE(o.allows("/w/a.o"));
}

TEST(LinkOutputs, ElfJoinedOutputAndLookalikes) {
  EXPECT_TRUE(outputs(Flavor::Elf, {"-oprog"}).allows("/w/prog"));
  LinkOutputs o = outputs(Flavor::Elf, {"-omagic", "x.o"});
  EXPECT_TRUE(o.allows("/w/a.out"));
  EXPECT_FALSE(o.allows("/w/magic"));
}

TEST(LinkOutputs, MinGWImportLibraryAndPdb) {
  LinkOutputs o =
      outputs(Flavor::Elf, {"-m", "i386pep", "-o", "x.dll", "--out-implib",
                            "libx.dll.a", "--pdb="});
  EXPECT_TRUE(o.allows("/w/x.dll"));
  EXPECT_TRUE(o.allows("/w/libx.dll.a"));
  EXPECT_TRUE(o.allows("/w/x.pdb"));
  EXPECT_FALSE(outputs(Flavor::Elf, {"--out-implib", "i.a"}).allows("/w/i.a"));
}

TEST(LinkOutputs, CoffDerivedNames) {
  LinkOutputs o = outputs(Flavor::Coff, {"/dll", "/OUT:lib/t.dll", "/debug",
                                         "/manifest", "-implib:imp.lib"});
  EXPECT_TRUE(o.allows("/w/lib/t.dll"));
  EXPECT_TRUE(o.allows("/w/lib/t.lib"));
  EXPECT_TRUE(o.allows("/w/lib/t.pdb"));
  EXPECT_TRUE(o.allows("/w/lib/t.dll.manifest"));
  EXPECT_TRUE(o.allows("/w/imp.lib"));
  EXPECT_FALSE(o.allows("/w/lib/t.exe"));
  // Without /out: LLD names the output after an input: nothing is allowed.
  EXPECT_TRUE(outputs(Flavor::Coff, {"a.obj"}).files.empty());
}

TEST(LinkOutputs, MachOAndWasm) {
  LinkOutputs m = outputs(
      Flavor::MachO, {"-o", "h", "-map", "h.map", "-object_path_lto", "lto.o"});
  EXPECT_TRUE(m.allows("/w/h"));
  EXPECT_TRUE(m.allows("/w/h.map"));
  EXPECT_FALSE(m.allows("/w/bject_path_lto"));
  EXPECT_TRUE(outputs(Flavor::Wasm, {"--output=x.wasm"}).allows("/w/x.wasm"));
}

TEST(LinkOutputs, SplitDwarfDirectory) {
  LinkOutputs o = outputs(Flavor::Elf, {"--plugin-opt=dwo_dir=dwo", "-o", "p"});
  EXPECT_TRUE(o.allows("/w/dwo/a.dwo"));
  EXPECT_FALSE(o.allows("/w/dwo/sub/a.dwo"));
}

TEST(LinkOutputs, TidyKeepsDotDot) {
  EXPECT_EQ(tidyPath("/w//./a/./b"), "/w/a/b");
  EXPECT_EQ(tidyPath("/w/d/../out"), "/w/d/../out");
  EXPECT_EQ(tidyPath("/w/."), "/w");
  EXPECT_EQ(tidyPath("relative"), "");
}

} // namespace
} // namespace linkd
