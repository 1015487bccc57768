// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// llvm-ar's and llvm-ranlib's command lines as lib/archive/ar_command_line.h
// reads them: the expectations are what llvm-ar-19 does with the same
// arguments (the end-to-end tests compare whole runs with it).
#include "archive/ar_command_line.h"
#include "link/flavor.h"

#include <gtest/gtest.h>

namespace {

using namespace linkd::archive;

ArCommand parse(std::vector<std::string> args) {
  return parseArCommandLine(args);
}

TEST(ArCommandLine, OperationModifiersArchiveMembers) {
  ArCommand c = parse({"rcsv", "lib.a", "a.o", "b.o"});
  EXPECT_EQ(c.stop, ArStop::None);
  EXPECT_EQ(c.operation, ArOperation::ReplaceOrInsert);
  EXPECT_TRUE(c.create && c.symtab && c.verbose && c.deterministic);
  EXPECT_EQ(c.archive, "lib.a");
  EXPECT_EQ(c.members, (std::vector<std::string>{"a.o", "b.o"}));
  EXPECT_TRUE(c.writesArchive());
  // A dash is allowed, and options may come anywhere.
  c = parse({"-qc", "lib.a", "--thin", "a.o"});
  EXPECT_EQ(c.operation, ArOperation::QuickAppend);
  EXPECT_TRUE(c.thin && c.compareFullPath);
  EXPECT_EQ(c.members, std::vector<std::string>{"a.o"});
}

TEST(ArCommandLine, PositionalsAreTakenInModifierOrder) {
  ArCommand c = parse({"rNa", "2", "x.o", "lib.a", "m.o"}); // N then a
  EXPECT_EQ(c.stop, ArStop::Error); // N is only for x and d...
  EXPECT_EQ(c.error, "the 'N' modifier can only be specified with the 'x' or "
                     "'d' operations");
  c = parse({"ma", "x.o", "lib.a", "m.o"});
  EXPECT_EQ(c.relPos, "x.o");
  EXPECT_TRUE(c.addAfter);
  EXPECT_EQ(c.archive, "lib.a");
  c = parse({"dN", "3", "lib.a", "m.o"});
  EXPECT_EQ(c.count, 3);
  EXPECT_EQ(c.archive, "lib.a");
}

TEST(ArCommandLine, SAloneIsTheSymbolTableOperation) {
  ArCommand c = parse({"s", "lib.a"});
  EXPECT_EQ(c.operation, ArOperation::CreateSymTab);
  EXPECT_TRUE(c.writesArchive());
  c = parse({"s", "lib.a", "a.o"});
  EXPECT_EQ(c.error, "the 's' operation takes only an archive as argument");
  EXPECT_TRUE(c.withUsage);
}

TEST(ArCommandLine, ReadOnlyOperations) {
  for (const char *op : {"t", "p", "xv", "tO"})
    EXPECT_FALSE(parse({op, "lib.a"}).writesArchive()) << op;
}

TEST(ArCommandLine, ErrorsInLlvmArsOrder) {
  // The first problem wins; usage errors print the help text.
  ArCommand c = parse({"z", "lib.a"});
  EXPECT_EQ(c.error, "unknown option z");
  EXPECT_TRUE(c.withUsage);
  c = parse({"rcs"});
  EXPECT_EQ(c.error, "an archive name must be specified");
  c = parse({"ra"});
  EXPECT_EQ(c.error, "expected [relpos] for 'a', 'b', or 'i' modifier");
  EXPECT_FALSE(c.withUsage);
  c = parse({"xN", "0", "lib.a"});
  EXPECT_EQ(c.error, "value for [count] must be positive, got: 0");
  // "-3" is read as modifiers ("3"), so N takes the next word.
  c = parse({"xN", "-3", "lib.a"});
  EXPECT_EQ(c.error, "value for [count] must be numeric, got: lib.a");
  c = parse({"xN", "3x", "lib.a"});
  EXPECT_EQ(c.error, "value for [count] must be numeric, got: 3x");
  c = parse({"xN", "99999999999", "lib.a"});
  EXPECT_EQ(c.error, "value for [count] must be numeric, got: 99999999999");
  c = parse({"--format=elf", "rcs", "lib.a"});
  EXPECT_EQ(c.error, "Invalid format elf");
  EXPECT_FALSE(c.withUsage);
  c = parse({"rcs", "lib.a", "--format"});
  EXPECT_EQ(c.error, "format requires an argument");
  c = parse({"-X64", "rcs", "lib.a"});
  EXPECT_EQ(c.error, "-X64 option not supported on non AIX OS");
  c = parse({"rq", "lib.a"});
  EXPECT_EQ(c.error, "only one operation may be specified");
  c = parse({"c", "lib.a"});
  EXPECT_EQ(c.error, "you must specify at least one of the operations");
  c = parse({"ro", "lib.a"});
  EXPECT_EQ(c.error,
            "the 'o' modifier is only applicable to the 'x' operation");
  c = parse({"rcs", "--output=d", "lib.a"});
  EXPECT_EQ(c.error, "--output is only applicable to the 'x' operation");
}

TEST(ArCommandLine, HelpAndVersionEndTheRun) {
  EXPECT_EQ(parse({"rcs", "lib.a", "--help"}).stop, ArStop::Help);
  EXPECT_EQ(parse({"-h"}).stop, ArStop::Help);
  EXPECT_EQ(parse({"--version"}).stop, ArStop::Version);
  EXPECT_EQ(parse({"rV", "lib.a"}).stop, ArStop::Version);
  // An earlier error wins over a later --help.
  EXPECT_EQ(parse({"--format=x", "--help"}).stop, ArStop::Error);
}

TEST(ArCommandLine, MriScriptsTakeNoOtherArguments) {
  ArCommand c = parse({"-M"});
  EXPECT_TRUE(c.mri);
  EXPECT_EQ(c.stop, ArStop::None);
  c = parse({"--thin", "--format=bsd", "-M"});
  EXPECT_TRUE(c.mri && c.thin);
  EXPECT_EQ(c.format, ArFormat::Bsd);
  EXPECT_FALSE(c.compareFullPath); // llvm-ar reads the script first
  c = parse({"-M", "rc"});
  EXPECT_EQ(c.error, "cannot mix -M and other options");
  EXPECT_TRUE(c.withUsage);
}

TEST(ArCommandLine, DoubleDashAndEmptyArguments) {
  ArCommand c = parse({"rcs", "--", "lib.a", "-x.o"});
  EXPECT_EQ(c.members, std::vector<std::string>{"-x.o"});
  // An empty argument leaves the operation string empty: the next word is it.
  c = parse({"", "rcs", "lib.a"});
  EXPECT_EQ(c.operation, ArOperation::ReplaceOrInsert);
  EXPECT_EQ(c.archive, "lib.a");
}

TEST(ArCommandLine, ResponseFileQuoting) {
  EXPECT_EQ(arResponseFileQuoting({"ar", "rcs", "x.a"}).quoting,
            RspQuoting::Gnu);
  EXPECT_EQ(arResponseFileQuoting({"ar", "--rsp-quoting=windows"}).quoting,
            RspQuoting::Windows);
  EXPECT_EQ(*arResponseFileQuoting({"ar", "--rsp-quoting", "dos"}).error,
            "Invalid response file quoting style dos");
  EXPECT_EQ(*arResponseFileQuoting({"ar", "--rsp-quoting"}).error,
            "rsp-quoting requires an argument");
}

TEST(RanlibCommandLine, FlagsAndArchives) {
  RanlibCommand r = parseRanlibCommandLine({"-U", "a.a", "-D", "b.a"});
  EXPECT_EQ(r.stop, ArStop::None);
  EXPECT_TRUE(r.deterministic);
  EXPECT_EQ(r.archives, (std::vector<std::string>{"a.a", "b.a"}));
  EXPECT_FALSE(parseRanlibCommandLine({"-U", "a.a"}).deterministic);
  EXPECT_EQ(parseRanlibCommandLine({"-DQ", "a.a"}).error,
            "Invalid option: '-Q'");
  EXPECT_EQ(parseRanlibCommandLine({"-t", "a.a"}).error,
            "Invalid option: '-t'"); // LLVM 19
  EXPECT_EQ(parseRanlibCommandLine({"-DX32", "a.a"}).error,
            "-X32 option not supported on non AIX OS");
  RanlibCommand none = parseRanlibCommandLine({});
  EXPECT_EQ(none.error, "an archive name must be specified");
  EXPECT_TRUE(none.withUsage);
  EXPECT_EQ(parseRanlibCommandLine({"a.a", "-h"}).stop, ArStop::Help);
}

TEST(ArchiverNames, FlavorFromProgramName) {
  using linkd::Flavor;
  using linkd::flavorFromProgramName;
  EXPECT_EQ(flavorFromProgramName("/x/ar.linkd"), Flavor::Ar);
  EXPECT_EQ(flavorFromProgramName("ranlib.linkd"), Flavor::Ranlib);
  EXPECT_EQ(flavorFromProgramName("lib.linkd"), Flavor::Lib);
  for (const char *n : {"ar", "llvm-ar", "llvm-ar-19", "x86_64-linux-gnu-ar"})
    EXPECT_EQ(flavorFromProgramName(n), Flavor::Ar) << n;
  for (const char *n : {"ranlib", "llvm-ranlib", "llvm-ranlib-19"})
    EXPECT_EQ(flavorFromProgramName(n), Flavor::Ranlib) << n;
  for (const char *n : {"lib", "llvm-lib", "Lib.exe", "LIB.EXE"})
    EXPECT_EQ(flavorFromProgramName(n), Flavor::Lib) << n;
  // Not archivers: LLD's names, llvm-ar's rule on the last occurrence only.
  EXPECT_EQ(flavorFromProgramName("arm-none-eabi-ld"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("aarch64-linux-gnu-ld.lld"), Flavor::Elf);
  EXPECT_EQ(flavorFromProgramName("lld-link"), Flavor::Coff);
  EXPECT_EQ(flavorFromProgramName("llvm-dlltool"), std::nullopt);
  EXPECT_EQ(flavorFromProgramName("arx"), std::nullopt);
}

TEST(ArchiverNames, StockProgramNames) {
  using linkd::Flavor;
  EXPECT_EQ(linkd::lldProgramName("/opt/bin/ar.linkd", Flavor::Ar),
            "/opt/bin/llvm-ar");
  EXPECT_EQ(linkd::lldProgramName("ranlib.linkd", Flavor::Ranlib),
            "llvm-ranlib");
  EXPECT_EQ(linkd::lldProgramName("lib.linkd", Flavor::Lib), "llvm-lib");
  EXPECT_EQ(linkd::lldProgramName("ar", Flavor::Ar), "ar");
  for (Flavor f : {Flavor::Ar, Flavor::Ranlib, Flavor::Lib}) {
    EXPECT_TRUE(linkd::isArchiver(f));
    EXPECT_EQ(linkd::flavorFromName(linkd::flavorName(f)), f);
  }
  EXPECT_FALSE(linkd::isArchiver(Flavor::Elf));
}

} // namespace
