#include "link/flavor.h"

#include <gtest/gtest.h>

using linkd::Flavor;
using linkd::flavorFromProgramName;

TEST(Flavor, LinkdNames) {
  EXPECT_EQ(flavorFromProgramName("/x/bin/ld.linkd"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("ld64.linkd"), Flavor::MachO);
  EXPECT_EQ(flavorFromProgramName("lld-link.linkd"), Flavor::Coff);
  EXPECT_EQ(flavorFromProgramName("wasm-ld.linkd"), Flavor::Wasm);
}

TEST(Flavor, LldRulesForSymlinks) {
  EXPECT_EQ(flavorFromProgramName("ld"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("/usr/bin/ld.lld"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("x86_64-linux-gnu-ld.lld"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("lld-link"), Flavor::Coff);
  EXPECT_EQ(flavorFromProgramName("LLD-LINK.EXE"), Flavor::Coff);
  EXPECT_EQ(flavorFromProgramName("ld64.lld"), Flavor::MachO);
  EXPECT_EQ(flavorFromProgramName("wasm-ld"), Flavor::Wasm);
  // LLD splits on '-' before matching, so "ld-wasm" is "ld" first: ELF.
  EXPECT_EQ(flavorFromProgramName("ld-wasm"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("lld-wasm"), Flavor::Wasm);
  EXPECT_EQ(flavorFromProgramName("lld-gnu"), Flavor::Elf);
  // LLD splits on '-' and never matches "ld.lld-19" as one component.
  EXPECT_EQ(flavorFromProgramName("ld.lld-19"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("lld"), std::nullopt);
  EXPECT_EQ(flavorFromProgramName("gold"), std::nullopt);
}

TEST(Flavor, ProgramNameSeenByLld) {
  EXPECT_EQ(linkd::lldProgramName("/opt/linkd/bin/ld.linkd", Flavor::Elf),
            "/opt/linkd/bin/ld.lld");
  EXPECT_EQ(linkd::lldProgramName("ld.linkd", Flavor::Elf), "ld.lld");
  EXPECT_EQ(linkd::lldProgramName("lld-link.linkd", Flavor::Coff), "lld-link");
  EXPECT_EQ(linkd::lldProgramName("ld64.linkd", Flavor::MachO), "ld64.lld");
  EXPECT_EQ(linkd::lldProgramName("wasm-ld.linkd", Flavor::Wasm), "wasm-ld");
  EXPECT_EQ(linkd::lldProgramName("/usr/bin/ld.lld", Flavor::Elf),
            "/usr/bin/ld.lld");
  EXPECT_EQ(linkd::lldProgramName("ld", Flavor::Elf), "ld");
}

TEST(Flavor, Names) {
  for (Flavor f : {Flavor::Elf, Flavor::Coff, Flavor::MachO, Flavor::Wasm}) {
    EXPECT_EQ(linkd::flavorFromName(linkd::flavorName(f)), f);
    EXPECT_EQ(linkd::flavorFromName(linkd::lldFlavorArgument(f)), f);
    EXPECT_FALSE(linkd::flavorEnvironment(f).empty());
  }
  EXPECT_EQ(linkd::flavorFromName("nope"), std::nullopt);
}
