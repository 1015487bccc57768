// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

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

TEST(Flavor, LeadingFlavorAsStockLld) {
  using linkd::takeLeadingFlavor;
  std::vector<std::string> a = {"lld", "-flavor", "gnu", "-shared", "k.o"};
  auto f = takeLeadingFlavor(a);
  EXPECT_TRUE(f.present);
  EXPECT_EQ(f.flavor, Flavor::Elf);
  EXPECT_EQ(a, (std::vector<std::string>{"lld", "-shared", "k.o"}));
  std::vector<std::string> b = {"lld", "-flavor"};
  EXPECT_EQ(takeLeadingFlavor(b).error, "missing arg value for '-flavor'");
  std::vector<std::string> c = {"ld.lld", "-flavor", "elf"};
  EXPECT_EQ(takeLeadingFlavor(c).error, "Unknown flavor: elf");
  std::vector<std::string> d = {"lld", "-flavor", "Darwin"};
  EXPECT_EQ(takeLeadingFlavor(d).flavor, Flavor::MachO);
  // Only as the first argument.
  std::vector<std::string> e = {"ld.lld", "--version", "-flavor", "gnu"};
  EXPECT_FALSE(takeLeadingFlavor(e).present);
  EXPECT_EQ(e.size(), 4u);
  EXPECT_TRUE(linkd::isGenericLldName("/usr/lib/llvm-19/bin/lld"));
  EXPECT_FALSE(linkd::isGenericLldName("ld.lld"));
}
