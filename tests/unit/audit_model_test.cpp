// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// lib/audit: the map parser, the record format, runtimes, and which copies
// are one piece of state (docs/audit.md).
#include "audit/audit_model.h"
#include "audit/state_record.h"
#include "cache/access_log.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace linkd::audit {
namespace {

// Cut from real maps: ld.lld -shared -Map (ELF) and lld-link /lldmap.
constexpr const char *kElfMap =
    R"(             VMA              LMA     Size Align Out     In      Symbol
            1320             1320       2b    16 .text
            1320             1320       2b    16         rt.o:(.text)
            1320             1320       2b     1                 get
            134c             134c        4     4 .tbss
            134c             134c        4     4         rt.o:(.tbss)
               0                0        4     1                 halide_tls
            33c0             33c0        8     4 .data
            33c0             33c0        8     4         rt.o:(.data)
            33c0             33c0        4     1                 halide_state
            33c8             33c8        8     4 .bss
            33c8             33c8        8     4         /usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o:(.bss)
            33c8             33c8        4     1                 completed.0
)";
constexpr const char *kCoffMap =
    R"(Address  Size     Align Out     In      Symbol
00001000 00000026  4096 .text
00001000 00000026    16         rt.obj:(.text)
00001000 00000000     0                 get
00002000 00000010  4096 .data
00002000 00000008     4         rt.obj:(.data)
00002000 00000000     0                 .data
00002004 00000000     0                 file_local
00002008 00000008     4         rt.obj:(.bss)
00002008 00000000     0                 get.counter
00002010 00000000     0                 __declspec(dllimport) puts
)";

TEST(AuditRecord, ElfMapGivesStateSymbolsWithTheirInputs) {
  auto syms = stateFromLldMap(kElfMap);
  ASSERT_EQ(syms.size(), 5u);
  EXPECT_EQ(syms[0].name, "halide_tls");
  EXPECT_EQ(syms[0].kind, 'T');
  EXPECT_EQ(syms[1].name, "halide_state");
  EXPECT_EQ(syms[1].kind, 'D');
  EXPECT_EQ(syms[1].input, "rt.o");
  EXPECT_EQ(syms[2].name, "completed.0");
  EXPECT_TRUE(isToolchainInput(syms[2].input));
  EXPECT_FALSE(isToolchainInput(syms[1].input));
  // Then the bytes each input put in writable sections (.tbss, .data, .bss;
  // not .text), by input.
  EXPECT_EQ(syms[3].kind, 'W');
  EXPECT_EQ(syms[3].input, "/usr/lib/gcc/x86_64-linux-gnu/12/crtbeginS.o");
  EXPECT_EQ(syms[3].name, "8");
  EXPECT_EQ(syms[4].input, "rt.o");
  EXPECT_EQ(syms[4].name, "12");
}

TEST(AuditRecord, CoffMapSkipsSectionSymbolsAndThunksAndUsesInputKinds) {
  auto syms = stateFromLldMap(kCoffMap);
  ASSERT_EQ(syms.size(), 3u);
  EXPECT_EQ(syms[0].name, "file_local");
  EXPECT_EQ(syms[1].name, "get.counter");
  EXPECT_EQ(syms[1].kind, 'B'); // .bss inside the .data output section
  EXPECT_EQ(syms[2].kind, 'W');
  EXPECT_EQ(syms[2].name, "16");
  // Decoded as written.
  std::vector<RecordedSymbol> back;
  ASSERT_TRUE(decodeStateRecord(encodeStateRecord(syms), back, nullptr));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].kind, 'W');
}

TEST(AuditRecord, RoundTripsAndRejectsGarbage) {
  std::vector<RecordedSymbol> in = {{'D', "a", "x.o", 0, ""},
                                    {'T', "b", "l.a(y.o)", 0, ""},
                                    {'B', "ns::c", "/tmp/rt-x1Y2z3.o", 'g', ""},
                                    {'D', "d", "/tmp/ccAb12Cd.o", 'l', "rt.c"}};
  std::vector<RecordedSymbol> out;
  std::string text = encodeStateRecord(in);
  // Records of before (no binding) read as they did.
  EXPECT_EQ(text.substr(0, 20), "D\ta\tx.o\nT\tb\tl.a(y.o)");
  ASSERT_TRUE(decodeStateRecord(text, out, nullptr));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[1].input, "l.a(y.o)");
  EXPECT_EQ(out[1].binding, 0);
  EXPECT_EQ(out[2].binding, 'g');
  EXPECT_EQ(out[2].name, "ns::c");
  EXPECT_EQ(out[2].input, "/tmp/rt-x1Y2z3.o");
  EXPECT_EQ(out[2].source, "");
  EXPECT_EQ(out[3].binding, 'l');
  EXPECT_EQ(out[3].input, "/tmp/ccAb12Cd.o");
  EXPECT_EQ(out[3].source, "rt.c");
  out.clear();
  EXPECT_FALSE(decodeStateRecord("Dg\tname\tin\n", out, nullptr)); // no source
  EXPECT_FALSE(decodeStateRecord("Dx\tname\tin\tsrc\n", out, nullptr));
  std::string error;
  out.clear();
  EXPECT_FALSE(decodeStateRecord("Q\tname\tin\n", out, &error));
  EXPECT_EQ(error, "malformed state record at line 1");
}

TEST(AuditRecord, AccessLogCarriesTheRecordAndDropsTheMapFile) {
  using namespace std::string_literals;
  std::string records =
      "M/tmp/linkd-audit-map-7.map\0"s + "W/tmp/linkd-audit-map-7.map.tmp1\0"s +
      "U/tmp/linkd-audit-map-7.map.tmp1\0"s + "W/tmp/linkd-audit-map-7.map\0"s +
      "R/w/rt.o\0"s + "W/w/out.so\0"s + "AD\thalide_x\trt.o\n\0"s;
  AccessLog log = parseAccessLog(records);
  EXPECT_TRUE(log.uncacheable.empty());
  EXPECT_EQ(log.outputs, std::set<std::string>{"/w/out.so"});
  EXPECT_EQ(log.read, std::set<std::string>{"/w/rt.o"});
  EXPECT_TRUE(log.missing.empty());
  EXPECT_EQ(log.stateRecord, "D\thalide_x\trt.o\n");
}

TEST(AuditRecord, MinGWRuntimeMembersAreToolchain) {
  for (const char *in : {"lib64_libmingw32_a-gccmain.o", "libkernel32s00282.o",
                         "libmsvcrt_defs00055.o", "_chkstk_ms.o",
                         "/usr/x86_64-w64-mingw32/lib/dllcrt2.o", "<internal>"})
    EXPECT_TRUE(isToolchainInput(in)) << in;
  for (const char *in : {"rt.o", "libhalide.a(runtime.o)", "libs2.o"})
    EXPECT_FALSE(isToolchainInput(in)) << in;
}

TEST(AuditModel, RuntimeIsTheNamespaceOrThePrefix) {
  EXPECT_EQ(runtimeOf("Halide::Runtime::Internal::device_interface"),
            "Halide::Runtime::Internal");
  EXPECT_EQ(runtimeOf("guard variable for rt::get()::x"), "rt");
  EXPECT_EQ(runtimeOf("halide_device_interface"), "halide_*");
  EXPECT_EQ(runtimeOf("__halide_x"), "__halide_*");
  EXPECT_EQ(runtimeOf("counter"), "counter");
  EXPECT_EQ(fileStemOf("/src/rt.c"), "rt");
  EXPECT_EQ(fileStemOf("libx.a(rt.c.o)"), "rt");
}

AuditModule module(std::string path, std::vector<StateDef> defs) {
  AuditModule m;
  m.path = std::move(path);
  m.defs = std::move(defs);
  return m;
}

StateDef def(std::string name, bool shared, std::string stem = "") {
  StateDef d;
  d.name = d.display = std::move(name);
  d.shared = shared;
  d.fileStem = std::move(stem);
  d.why = shared ? "shared" : "private";
  return d;
}

TEST(AuditModel, SharedCopiesAreOneInstance) {
  std::vector<AuditModule> mods = {
      module("a", {def("x", true), def("y", false), def("z", true)}),
      module("b", {def("x", true), def("y", false), def("z", false)})};
  auto f = findDuplicates(mods, {}, nullptr);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "y");
  EXPECT_EQ(f[0].instances, 2u);
  EXPECT_EQ(f[1].name, "z"); // one shared + one private
  EXPECT_EQ(f[1].instances, 2u);
}

TEST(AuditModel, FileLocalStatePairsOnlyWithItsFile) {
  std::vector<AuditModule> mods = {
      module("a", {def("initialized", false, "liba")}),
      module("b", {def("initialized", false, "libb")}),
      module("c", {def("initialized", false, "liba")})};
  auto f = findDuplicates(mods, {}, nullptr);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fileStem, "liba");
  EXPECT_EQ(f[0].copies.size(), 2u);
}

TEST(AuditModel, AllowListDropsMatchingFindings) {
  std::vector<AuditModule> mods = {module("a", {def("halide_x", false)}),
                                   module("b", {def("halide_x", false)})};
  AllowList allow;
  ASSERT_TRUE(parseAllowList("# ok\n  halide_*  \n", allow, nullptr));
  size_t allowed = 0;
  EXPECT_TRUE(findDuplicates(mods, allow, &allowed).empty());
  EXPECT_EQ(allowed, 1u);
}

TEST(AuditModel, BlindIsIncompleteNeverClean) {
  Report r;
  r.program = "main.exe";
  r.modules = {module("main.exe", {}), module("./a.dll", {})};
  r.modules[1].inspectable = false;
  r.notFollowed = {
      {"KERNEL32.dll (imported by main.exe): a system DLL", false}};
  EXPECT_EQ(r.incomplete(), std::vector<std::string>{"./a.dll"});
  EXPECT_EQ(exitStatus(r, false), kExitIncomplete);
  EXPECT_EQ(exitStatus(r, true), 0);
  std::string text = formatText(r);
  EXPECT_TRUE(text.starts_with("linkd audit: main.exe: incomplete: 1 module "
                               "not inspected (listed below); no state "
                               "duplicated across the 1 modules it could "
                               "inspect\n"))
      << text;
  EXPECT_NE(text.find("not inspectable: ./a.dll"), std::string::npos);
  // A system library without symbols is seen enough.
  r.modules[1].system = true;
  EXPECT_EQ(exitStatus(r, false), 0);
  // Not found, or not readable: incomplete, named.
  r.notFollowed.push_back({"libB.so (needed by ./main): not found", true});
  EXPECT_EQ(r.incomplete(), std::vector<std::string>{"libB.so"});
  EXPECT_EQ(exitStatus(r, false), kExitIncomplete);
  EXPECT_NE(formatJson(r).find(R"("incomplete":["libB.so"])"),
            std::string::npos);
  // A finding wins.
  r.modules = {module("a", {def("halide_x", false)}),
               module("b", {def("halide_x", false)})};
  r.findings = findDuplicates(r.modules, {}, nullptr);
  EXPECT_EQ(exitStatus(r, false), kExitFound);
}

TEST(AuditModel, InterposedCopiesAreNotInstances) {
  std::vector<AuditModule> mods = {module("a", {def("halide_x", false, "rt")}),
                                   module("b", {def("halide_x", false, "rt")})};
  mods[1].defs[0].interposed = true;
  mods[1].defs[0].why = "never reached";
  EXPECT_TRUE(findDuplicates(mods, {}, nullptr).empty());
  Report r;
  r.modules = mods;
  EXPECT_NE(formatText(r).find("one copy at run time (the loader "
                               "interposes):\n  b: halide_x [rt]: never "
                               "reached\n"),
            std::string::npos)
      << formatText(r);
}

TEST(AuditRecord, PolicyPicksTheLinks) {
  EXPECT_EQ(recordPolicyFrom(nullptr), RecordPolicy::PeImages);
  EXPECT_EQ(recordPolicyFrom("1"), RecordPolicy::All);
  EXPECT_EQ(recordPolicyFrom("0"), RecordPolicy::Off);
  auto opt = [](RecordPolicy p, Flavor f, std::vector<std::string> argv) {
    return stateRecordMapOption(p, f, argv, "/", false, "/t/m");
  };
  std::vector<std::string> mingw = {"ld", "-m", "i386pep", "a.o"};
  std::vector<std::string> elf = {"ld", "a.o", "--build-id"};
  std::vector<std::string> stripped = {"ld", "a.o", "-s"};
  std::vector<std::string> plain = {"ld", "a.o"};
  EXPECT_EQ(opt(RecordPolicy::PeImages, Flavor::Elf, mingw), "-Map=/t/m");
  EXPECT_EQ(opt(RecordPolicy::PeImages, Flavor::Coff, {"lld-link", "a.o"}),
            "/lldmap:/t/m");
  EXPECT_EQ(opt(RecordPolicy::PeImages, Flavor::Elf, stripped), "");
  EXPECT_EQ(opt(RecordPolicy::All, Flavor::Elf, stripped), "-Map=/t/m");
  EXPECT_EQ(opt(RecordPolicy::All, Flavor::Elf, elf), "-Map=/t/m");
  EXPECT_EQ(opt(RecordPolicy::All, Flavor::Elf,
                {"ld", "--build-id", "--build-id=none"}),
            "");
  EXPECT_EQ(opt(RecordPolicy::All, Flavor::Elf, plain), "");
  EXPECT_EQ(opt(RecordPolicy::Off, Flavor::Coff, {"lld-link"}), "");
  // The user's own map, or --reproduce: never ours.
  EXPECT_EQ(opt(RecordPolicy::All, Flavor::Elf,
                {"ld", "-m", "i386pep", "-Map=x.map"}),
            "");
  EXPECT_EQ(stateRecordMapOption(RecordPolicy::All, Flavor::Coff, {"lld-link"},
                                 "/", true, "/t/m"),
            "");
}

// Only the command shapes that link an image and never show their argv get
// the map option (LLD's lit suite: COFF/out.test, MinGW/driver.test).
TEST(AuditRecord, OnlyImageLinksThatHideTheirArgvGetTheMap) {
  auto opt = [](Flavor f, const std::vector<std::string> &argv,
                const std::string &cwd = "/") {
    return stateRecordMapOption(RecordPolicy::All, f, argv, cwd, false, "/t/m");
  };
  // lld-link's lib mode is "/lib" or "-lib" first, in any case.
  EXPECT_EQ(opt(Flavor::Coff, {"lld-link", "/lib", "/out:x.lib", "a.obj"}), "");
  EXPECT_EQ(opt(Flavor::Coff, {"lld-link", "-LIB", "a.obj"}), "");
  EXPECT_EQ(opt(Flavor::Coff, {"lld-link", "a.obj", "/lib"}), "/lldmap:/t/m");
  for (const char *a :
       {"-###", "--help", "/?", "--version", "/time", "--time-trace",
        "/linkrepro:d", "/debug", "-v", "/verbose", "--verbose", "--cref"})
    EXPECT_EQ(opt(Flavor::Coff, {"lld-link", "a.obj", a}), "") << a;
  // Options that only share a prefix with those keep the record.
  for (const char *a : {"/timestamp:1", "--version-script=v", "/version:1.0",
                        "/debug:none", "-mllvm"})
    EXPECT_EQ(opt(Flavor::Coff, {"lld-link", "a.obj", a}), "/lldmap:/t/m") << a;
  // A trailing option that lacks its value stays that way (the map option
  // goes first): the shape still gets a record.
  EXPECT_EQ(opt(Flavor::Elf, {"ld.lld", "-m", "i386pep", "a.o", "-entry"}),
            "-Map=/t/m");

  // lld-link's LINK and _LINK_ add options before and after the arguments,
  // also under the MinGW driver; LLD_REPRODUCE writes a tarball.
  for (const char *var : {"LINK", "_LINK_", "LLD_REPRODUCE"})
    EXPECT_TRUE(environmentAddsToTheLink([var](const char *n) {
      return std::string_view(n) == var ? "/DEBUG" : nullptr;
    })) << var;
  EXPECT_FALSE(environmentAddsToTheLink([](const char *n) {
    return std::string_view(n) == "LINK" ? "" : nullptr;
  }));

  // Inside a response file, as given on the command line; one that cannot
  // be read counts against.
  char dir[] = "/tmp/linkd-record-rsp-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string d = dir;
  std::ofstream(d + "/hash.rsp") << "a.o -m i386pep\n-###\n";
  std::ofstream(d + "/plain.rsp") << "a.o -m i386pep --major-os-version=6\n";
  EXPECT_EQ(opt(Flavor::Elf, {"ld.lld", "@hash.rsp"}, d), "");
  EXPECT_EQ(opt(Flavor::Elf, {"ld.lld", "@plain.rsp"}, d), "-Map=/t/m");
  // LLD picks its MinGW driver by the first "-m" as given, and looks into
  // response files only when there is none: not MinGW here, so under the
  // default policy (PE images) no record.
  std::ofstream(d + "/pe.rsp") << "-m i386pep\n";
  EXPECT_EQ(
      stateRecordMapOption(RecordPolicy::PeImages, Flavor::Elf,
                           {"ld.lld", "@pe.rsp", "-m", "elf_x86_64", "a.o"}, d,
                           false, "/t/m"),
      "");
  EXPECT_EQ(stateRecordMapOption(RecordPolicy::PeImages, Flavor::Elf,
                                 {"ld.lld", "@pe.rsp", "a.o"}, d, false,
                                 "/t/m"),
            "-Map=/t/m");
  ASSERT_EQ(mkfifo((d + "/fifo.rsp").c_str(), 0600), 0);
  EXPECT_EQ(opt(Flavor::Elf, {"ld.lld", "-m", "i386pep", "@fifo.rsp"}, d), "");
  for (const char *f : {"/hash.rsp", "/plain.rsp", "/fifo.rsp", "/pe.rsp"})
    std::remove((d + f).c_str());
  rmdir(dir);
}

TEST(AuditRecord, DriverTempObjectsGiveTheSourceStem) {
  EXPECT_EQ(recordedStemOf("/tmp/hrt-a1B2c3.o"), "hrt");
  EXPECT_EQ(recordedStemOf("/tmp/some-dir/engine_rt-0aZ9xy.o"), "engine_rt");
  EXPECT_EQ(recordedStemOf("/tmp/ccXyZ123.o"), "");
  // Not a temp directory, or not a driver's pattern: the name as it is.
  EXPECT_EQ(recordedStemOf("build/rt-a1b2c3.o"), "rt-a1b2c3");
  EXPECT_EQ(recordedStemOf("/tmp/rt-long-name.o"), "rt-long-name");
  EXPECT_EQ(recordedStemOf("/tmp/librt.a(rt-a1b2c3.o)"), "rt-a1b2c3");
  EXPECT_EQ(recordedStemOf("/tmp/ccache.o"), "ccache");
}

TEST(AuditRecord, MsvcDemangledVariablesReadAsPdbNamesThem) {
  EXPECT_EQ(plainVariableName(
                "struct Vendor::Accel::Detail::Queue *Vendor::Accel::Detail::"
                "current_queue"),
            "Vendor::Accel::Detail::current_queue");
  EXPECT_EQ(plainVariableName("int Vendor::Accel::accel_ready"),
            "Vendor::Accel::accel_ready");
  EXPECT_EQ(plainVariableName("class std::vector<int, class std::allocator<"
                              "int>> ns::Holder<int, 3>::values"),
            "ns::Holder<int, 3>::values");
  EXPECT_EQ(plainVariableName("struct Q * __ptr64 ns::q"), "ns::q");
  EXPECT_EQ(plainVariableName("struct Vendor::Accel::Detail::Queue `extern "
                              "\"C\" accel_bind'::`2'::own"),
            "accel_bind::own");
  EXPECT_EQ(plainVariableName("int `int __cdecl ns::get(int)'::`2'::counter"),
            "ns::get::counter");
  EXPECT_EQ(plainVariableName("halide_copy_count"), "halide_copy_count");
  EXPECT_EQ(plainVariableName("get.counter"), "get.counter");
}

} // namespace
} // namespace linkd::audit
