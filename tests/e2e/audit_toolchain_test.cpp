// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd audit` on programs built the way people build them:
// default driver flags, no flag a user would not pass; each case runs the
// program (wine for PE) to show whether the state really is duplicated, and
// checks that the audit says the same with the exit status a CI gate reads
// (0 clean, 1 found, 3 incomplete). The daemon runs with its default record
// policy unless a test says otherwise: PE images are recorded, ELF not.
#include "audit_fixture.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace linkd::e2e {
namespace {

// docs/audit.md's runtime: file-local state, default-visibility functions.
constexpr const char *kRt = R"(static int halide_device_interface;
int halide_copy_count;
RT_API void halide_set_interface(int id) { halide_device_interface = id; ++halide_copy_count; }
RT_API int halide_get_interface(void) { return halide_device_interface; }
)";
constexpr const char *kA = R"(RT_IMPORT void halide_set_interface(int);
RT_IMPORT int halide_get_interface(void);
EXPORT void a_set(int v) { halide_set_interface(v); }
EXPORT int a_get(void) { return halide_get_interface(); }
)";
constexpr const char *kB = R"(RT_IMPORT int halide_get_interface(void);
EXPORT int b_get(void) { return halide_get_interface(); }
)";
constexpr const char *kMain = R"(#include <stdio.h>
IMPORT void a_set(int);
IMPORT int a_get(void);
IMPORT int b_get(void);
int main(void) {
  a_set(8);
  printf("a sees %d, b sees %d\n", a_get(), b_get());
  return 0;
}
)";

constexpr const char *kTwoCopies = "a sees 8, b sees 0\n";
constexpr const char *kOneCopy = "a sees 8, b sees 8\n";

std::string macros(bool pe, bool sharedRuntime) {
  std::string d = pe ? "-DEXPORT='__declspec(dllexport)' "
                       "-DIMPORT='__declspec(dllimport)' "
                     : "-DEXPORT='__attribute__((visibility(\"default\")))' "
                       "-DIMPORT= ";
  return d + (sharedRuntime ? "-DRT_API='__declspec(dllexport)' "
                              "-DRT_IMPORT='__declspec(dllimport)' "
                            : "-DRT_API= -DRT_IMPORT= ");
}

class AuditToolchain : public AuditE2eTest {
protected:
  void SetUp() override {
    unsetenv("LINKD_AUDIT_RECORD"); // the daemon's default policy
    E2eTest::SetUp();
    writeFile("rt.c", kRt);
    writeFile("a.c", kA);
    writeFile("b.c", kB);
    writeFile("main.c", kMain);
  }
  void TearDown() override {
    E2eTest::TearDown();
    unsetenv("LINKD_AUDIT_RECORD");
    unsetenv("LINKD_NOCACHE");
  }
};

// --- PE: a MinGW user's DLLs ------------------------------------------------

TEST_F(AuditToolchain, ClangLldMingwDefaultFlagsAreRecordedAndFound) {
  ASSERT_TRUE(haveTool(tools::wine));
  ASSERT_TRUE(exitedZero(run("clang-19 --target=x86_64-w64-mingw32 -O1 " +
                             macros(true, false) + "-c rt.c a.c b.c main.c")));
  // Default flags: the PE header is timestamped, so the cache keeps none of
  // these links; each still gets its record (the default for PE images).
  const std::string cc =
      "clang-19 --target=x86_64-w64-mingw32 --ld-path=" + binPath("ld.linkd") +
      " ";
  ASSERT_TRUE(exitedZero(
      run(cc + "-shared -s a.o rt.o -o a.dll -Wl,--out-implib,liba.a")));
  ASSERT_TRUE(exitedZero(
      run(cc + "-shared -s b.o rt.o -o b.dll -Wl,--out-implib,libb.a")));
  ASSERT_TRUE(exitedZero(run(cc + "main.o -L. -la -lb -s -o main.exe")));
  auto stats = cacheStats();
  EXPECT_EQ(stats["uncacheable"], 3);
  EXPECT_EQ(stats["results_stored"], 0);
  waitForRecords(3);
  EXPECT_EQ(runPe("./main.exe"), kTwoCopies);
  RunResult a = audit("main.exe");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  expectIn(a, {"runtime halide_*: 2 symbols, copies in 2 modules",
               "halide_device_interface [rt]",
               "./a.dll (PE, imported by main.exe (program's directory); "
               "linkd link record)",
               "not followed: KERNEL32.dll (imported by main.exe): a system "
               "DLL"});
  EXPECT_EQ(a.out.find("incomplete"), std::string::npos) << a.out;
  EXPECT_EQ(a.out.find("p.0"), std::string::npos) << a.out;
}

TEST_F(AuditToolchain, RecordsAreMadeWithTheCacheOff) {
  ASSERT_TRUE(exitedZero(run("clang-19 --target=x86_64-w64-mingw32 -O1 " +
                             macros(true, false) + "-c rt.c a.c")));
  setenv("LINKD_NOCACHE", "1", 1); // the daemon this link starts
  ASSERT_TRUE(
      exitedZero(run("clang-19 --target=x86_64-w64-mingw32 "
                     "--ld-path=" +
                     binPath("ld.linkd") + " -shared -s a.o rt.o -o a.dll")));
  RunResult a;
  for (int i = 0; i < 100; ++i) {
    a = audit("a.dll");
    if (a.out.find("linkd link record") != std::string::npos)
      break;
    run("sleep 0.1");
  }
  EXPECT_EQ(a.exitCode, 0) << describe(a);
  expectIn(a, {"a.dll (PE, program; linkd link record"});
  EXPECT_TRUE(linesStartingWith(a.out, "not inspectable").empty()) << a.out;
}

TEST_F(AuditToolchain, RecordingOffLeavesPeModulesIncomplete) {
  setenv("LINKD_AUDIT_RECORD", "0", 1);
  ASSERT_TRUE(exitedZero(run("clang-19 --target=x86_64-w64-mingw32 -O1 " +
                             macros(true, false) + "-c rt.c a.c")));
  ASSERT_TRUE(
      exitedZero(run("clang-19 --target=x86_64-w64-mingw32 "
                     "--ld-path=" +
                     binPath("ld.linkd") + " -shared -s a.o rt.o -o a.dll")));
  RunResult a = audit("a.dll");
  EXPECT_EQ(a.exitCode, 3) << describe(a);
  expectIn(a, {"linkd audit: a.dll: incomplete: 1 module not inspected",
               "not inspectable: a.dll: no symbol table and no link record",
               "link it through linkd"});
  EXPECT_EQ(audit("a.dll --allow-incomplete").exitCode, 0);
}

TEST_F(AuditToolchain, LldLinkMsvcStyleTimestampedDllsAreFound) {
  ASSERT_TRUE(haveTool(tools::wine));
  const std::string kernel32 = "/usr/x86_64-w64-mingw32/lib/libkernel32.a";
  ASSERT_TRUE(haveFile(kernel32, "mingw-w64-x86-64-dev"));
  // No CRT: the program writes through kernel32 (as audit_test.cpp).
  writeFile("msvcmain.c", R"(typedef void *HANDLE;
__declspec(dllimport) HANDLE __stdcall GetStdHandle(unsigned long);
__declspec(dllimport) int __stdcall WriteFile(HANDLE, const void *, unsigned long,
                                              unsigned long *, void *);
__declspec(dllimport) void __stdcall ExitProcess(unsigned);
__declspec(dllimport) void a_set(int);
__declspec(dllimport) int a_get(void);
__declspec(dllimport) int b_get(void);
void mainCRTStartup(void) {
  char msg[] = "a sees ?, b sees ?\n";
  a_set(8);
  msg[7] = (char)('0' + a_get());
  msg[17] = (char)('0' + b_get());
  unsigned long written;
  WriteFile(GetStdHandle((unsigned long)-11), msg, sizeof msg - 1, &written, 0);
  ExitProcess(0);
}
)");
  ASSERT_TRUE(
      exitedZero(run("clang-19 --target=x86_64-pc-windows-msvc -O1 " +
                     macros(true, false) + "-c rt.c a.c b.c msvcmain.c")));
  // lld-link's defaults: a timestamped header, so uncacheable.
  const std::string dll = binPath("lld-link.linkd") + " /dll /noentry "
                                                      "/nodefaultlib ";
  ASSERT_TRUE(exitedZero(run(dll + "a.o rt.o /out:a.dll")));
  ASSERT_TRUE(exitedZero(run(dll + "b.o rt.o /out:b.dll")));
  ASSERT_TRUE(exitedZero(run(binPath("lld-link.linkd") +
                             " /subsystem:console /nodefaultlib "
                             "/entry:mainCRTStartup msvcmain.o a.lib b.lib " +
                             kernel32 + " /out:main.exe")));
  EXPECT_EQ(cacheStats()["uncacheable"], 3);
  waitForRecords(3); // main.exe's is empty: no state, and still a record
  EXPECT_EQ(runPe("./main.exe"), kTwoCopies);
  RunResult a = audit("main.exe");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  expectIn(a, {"halide_device_interface [rt]",
               "halide_copy_count, zero-initialised data",
               "./b.dll: a DLL's own copy",
               "main.exe (PE, program; linkd link record)"});
  EXPECT_EQ(a.out.find("incomplete"), std::string::npos) << a.out;
}

// --- PE: Debian's mingw-w64 GCC with GNU ld (linkd not involved) -----------

TEST_F(AuditToolchain, GnuLdMingwUnstrippedIsReadFromItsSymbolTable) {
  ASSERT_TRUE(haveTool(tools::mingwGxx));
  ASSERT_TRUE(haveTool(tools::wine));
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "one runtime DLL" : "a copy in each DLL");
    // g++ compiles the .c files as C++: mangled names, as C++ users get.
    const std::string gxx =
        tools::mingwGxx.path + " -O1 " + macros(true, shared) + " -static ";
    ASSERT_TRUE(exitedZero(run(gxx + "-c rt.c a.c b.c main.c")));
    std::string rt = shared ? "-L. -lrt" : "rt.o";
    if (shared)
      ASSERT_TRUE(exitedZero(
          run(gxx + "-shared rt.o -o rt.dll -Wl,--out-implib,librt.a")));
    ASSERT_TRUE(exitedZero(
        run(gxx + "-shared a.o " + rt + " -o a.dll -Wl,--out-implib,liba.a")));
    ASSERT_TRUE(exitedZero(
        run(gxx + "-shared b.o " + rt + " -o b.dll -Wl,--out-implib,libb.a")));
    ASSERT_TRUE(exitedZero(run(gxx + "main.o -L. -la -lb -o main.exe")));
    EXPECT_EQ(runPe("./main.exe"), shared ? kOneCopy : kTwoCopies);
    RunResult a = audit("main.exe");
    EXPECT_EQ(a.exitCode, shared ? 0 : 1) << describe(a);
    if (!shared)
      expectIn(a, {"halide_device_interface (_ZL23halide_device_interface) "
                   "[rt], zero-initialised data, 2 copies at run time",
                   "./a.dll (PE, imported by main.exe (program's directory); "
                   "symbol table)"});
    // The CRT's own state, which every module carries, is not reported.
    for (const char *noise : {"___tls_start__", "___tls_end__", "p.0",
                              "__bss_start__", "___crt_", "mingw"})
      EXPECT_EQ(a.out.find(noise), std::string::npos) << noise << "\n" << a.out;
    run("rm -f *.dll *.exe *.a");
  }
}

TEST_F(AuditToolchain, GnuLdMingwStrippedIsIncompleteAndSaysWhy) {
  ASSERT_TRUE(haveTool(tools::mingwGxx));
  ASSERT_TRUE(haveTool(tools::wine));
  const std::string gxx =
      tools::mingwGxx.path + " -O1 " + macros(true, false) + " -static ";
  ASSERT_TRUE(exitedZero(run(gxx + "-c rt.c a.c b.c main.c")));
  ASSERT_TRUE(exitedZero(
      run(gxx + "-shared -s a.o rt.o -o a.dll -Wl,--out-implib,liba.a")));
  ASSERT_TRUE(exitedZero(
      run(gxx + "-shared -s b.o rt.o -o b.dll -Wl,--out-implib,libb.a")));
  ASSERT_TRUE(exitedZero(run(gxx + "-s main.o -L. -la -lb -o main.exe")));
  EXPECT_EQ(runPe("./main.exe"), kTwoCopies);
  // Blind is not clean: no symbols, no record (linkd never linked them).
  RunResult a = audit("main.exe");
  EXPECT_EQ(a.exitCode, 3) << describe(a);
  expectIn(a, {"linkd audit: main.exe: incomplete: 3 modules not inspected",
               "not inspectable: ./a.dll: no symbol table and no link record",
               "not inspectable: ./b.dll", "link it through linkd"});
  RunResult j = audit("main.exe --json");
  EXPECT_EQ(j.exitCode, 3);
  EXPECT_NE(j.out.find(R"("incomplete":["main.exe","./a.dll","./b.dll"])"),
            std::string::npos)
      << j.out;
  EXPECT_EQ(audit("main.exe --allow-incomplete").exitCode, 0);
}

TEST_F(AuditToolchain, AllowExtendsTheBuiltInList) {
  ASSERT_TRUE(haveTool(tools::mingwGxx));
  const std::string gxx =
      tools::mingwGxx.path + " -O1 " + macros(true, false) + " -static ";
  ASSERT_TRUE(exitedZero(run(gxx + "-c rt.c a.c b.c main.c")));
  ASSERT_TRUE(exitedZero(
      run(gxx + "-shared a.o rt.o -o a.dll -Wl,--out-implib,liba.a")));
  ASSERT_TRUE(exitedZero(
      run(gxx + "-shared b.o rt.o -o b.dll -Wl,--out-implib,libb.a")));
  ASSERT_TRUE(exitedZero(run(gxx + "main.o -L. -la -lb -o main.exe")));
  writeFile("allow.txt", "halide_*\n");
  RunResult a = audit("main.exe --allow allow.txt");
  EXPECT_EQ(a.exitCode, 0) << describe(a);
  expectIn(a, {"2 duplicated symbols allowed by --allow"});
}

// --- ELF: the loader's real binding, gcc and clang defaults -----------------

struct ElfCase {
  std::string compiler;
  std::string cflags, flagsA, order;
  const char *expectRun;
  int expectAudit;
};

class AuditElfBinding : public AuditToolchain {
protected:
  // The docs' runtime in libA.so and libB.so, the program, linked through
  // linkd by the compiler's default driver path (gcc -B, clang --ld-path).
  void build(const ElfCase &c) {
    std::string link = c.compiler == "gcc"
                           ? "gcc -B" + binDir() + "/gcc/ "
                           : "clang-19 --ld-path=" + binPath("ld.linkd") + " ";
    std::string cc = c.compiler == "gcc" ? "gcc" : "clang-19";
    ASSERT_TRUE(
        exitedZero(run(cc + " -fPIC -O1 " + c.cflags + " " +
                       macros(false, false) + "-c rt.c a.c b.c main.c")));
    ASSERT_TRUE(
        exitedZero(run(link + "-shared a.o rt.o " + c.flagsA + " -o libA.so")));
    ASSERT_TRUE(exitedZero(run(link + "-shared b.o rt.o -o libB.so")));
    ASSERT_TRUE(exitedZero(
        run(link + "main.o -L. " + c.order + " -Wl,-rpath,'$ORIGIN' -o main")));
  }
  void check(const ElfCase &c) {
    build(c);
    RunResult r = run("./main");
    ASSERT_TRUE(exitedZero(r)) << describe(r);
    EXPECT_EQ(r.out, c.expectRun);
    last = audit("./main");
    EXPECT_EQ(last.exitCode, c.expectAudit) << describe(last);
  }
  RunResult last;
};

TEST_F(AuditElfBinding, HiddenVisibilityCopiesAreFound) {
  for (std::string cc : {"gcc", "clang"}) {
    SCOPED_TRACE(cc);
    check({cc, "-fvisibility=hidden", "", "-lA -lB", kTwoCopies, 1});
    expectIn(last, {"halide_device_interface [rt], zero-initialised data, 2 "
                    "copies at run time",
                    "libA.so: local symbol: this module's own copy",
                    "libB.so: local symbol"});
  }
}

TEST_F(AuditElfBinding, DefaultVisibilityInterposedPairIsClean) {
  for (std::string cc : {"gcc", "clang"}) {
    SCOPED_TRACE(cc);
    check({cc, "", "", "-lA -lB", kOneCopy, 0});
    expectIn(last,
             {"no state duplicated across its",
              "one copy at run time (the loader interposes):",
              "libB.so: halide_device_interface [rt]: never reached: its "
              "accessors (halide_get_interface, halide_set_interface) are "
              "exported and interposable, and the loader binds them to " +
                  path("libA.so") + "'s"});
  }
}

TEST_F(AuditElfBinding, BsymbolicPairIsFound) {
  for (std::string cc : {"gcc", "clang"}) {
    SCOPED_TRACE(cc);
    // libB first: b_get binds libB's getter, libA keeps its own (-Bsymbolic).
    check({cc, "", "-Wl,-Bsymbolic", "-lB -lA", kTwoCopies, 1});
    expectIn(last, {"halide_device_interface [rt]", "libA.so: local symbol",
                    "libB.so: local symbol"});
    // libA first and -Bsymbolic: libB's getter is interposed by libA's.
    check({cc, "", "-Wl,-Bsymbolic", "-lA -lB", kOneCopy, 0});
  }
}

TEST_F(AuditElfBinding, StrippedAfterTheLinkIsFoundByBuildId) {
  setenv("LINKD_AUDIT_RECORD", "1", 1); // ELF records: opt-in
  ElfCase c{"gcc", "-fvisibility=hidden", "", "-lA -lB", kTwoCopies, 1};
  build(c);
  // The packaging step: strip after the link (the build-id note stays).
  ASSERT_TRUE(exitedZero(run("strip libA.so libB.so")));
  RunResult nm = run(tools::nm.path + " libA.so");
  EXPECT_NE(nm.err.find("no symbols"), std::string::npos) << describe(nm);
  waitForStored(3);
  RunResult r = run("./main");
  EXPECT_EQ(r.out, kTwoCopies);
  RunResult a = audit("./main");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  expectIn(a, {"halide_device_interface",
               "libA.so (ELF, DT_NEEDED of ./main (DT_RUNPATH $ORIGIN); "
               "linkd link record, found by its elf-build-id)"});
}

// --- Incomplete closures
// -------------------------------------------------------

TEST_F(AuditElfBinding, TruncatedOrMissingNeededLibraryIsIncomplete) {
  build({"clang", "", "", "-lA -lB", kOneCopy, 0});
  ASSERT_TRUE(exitedZero(run("cp libB.so libB.full && head -c 300 libB.full "
                             "> libB.so")));
  RunResult r = run("./main");
  EXPECT_NE(r.exitCode, 0) << describe(r); // the loader refuses it too
  RunResult cut = audit("./main");
  EXPECT_EQ(cut.exitCode, 3) << describe(cut);
  expectIn(cut, {"linkd audit: ./main: incomplete: 1 module not inspected",
                 "not followed: libB.so (needed by ./main): "});
  EXPECT_EQ(audit("./main --allow-incomplete").exitCode, 0);

  ASSERT_TRUE(exitedZero(run("rm libB.so")));
  r = run("./main");
  EXPECT_NE(r.err.find("libB.so: cannot open shared object file"),
            std::string::npos)
      << describe(r);
  RunResult gone = audit("./main");
  EXPECT_EQ(gone.exitCode, 3) << describe(gone);
  expectIn(gone, {"incomplete: 1 module not inspected",
                  "not followed: libB.so (needed by ./main): not found"});
  RunResult j = audit("./main --json");
  EXPECT_NE(j.out.find(R"("incomplete":["libB.so"])"), std::string::npos)
      << j.out;
}

// --- docs/audit.md, as written ---------------------------------------------

// The worked example's files (```c blocks opening with "// NAME") and its
// commands ("$ " lines, with their expected output up to the next one).
struct DocExample {
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::pair<std::string, std::string>> commands;
};

DocExample readDocExample(const std::string &docPath) {
  std::ifstream in(docPath);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  DocExample ex;
  size_t from = doc.find("## Worked example");
  size_t to = doc.find("\n## ", from + 1);
  std::istringstream lines(doc.substr(from, to - from));
  std::string line, block, kind;
  bool inBlock = false;
  while (std::getline(lines, line)) {
    if (line.starts_with("```")) {
      if (inBlock && kind == "c" && block.starts_with("// ")) {
        std::string name = block.substr(3, block.find('\n') - 3);
        name = name.substr(0, name.find(' '));
        ex.files.push_back({name, block});
      }
      inBlock = !inBlock;
      kind = line.substr(3);
      block.clear();
      continue;
    }
    if (!inBlock)
      continue;
    block += line + "\n";
    if (kind.empty() && line.starts_with("$ "))
      ex.commands.push_back({line.substr(2), ""});
    else if (kind.empty() && !ex.commands.empty())
      ex.commands.back().second += line + "\n";
  }
  return ex;
}

TEST_F(AuditToolchain, DocsWorkedExampleRunsAsWritten) {
  ASSERT_TRUE(haveTool(tools::wine));
  DocExample ex =
      readDocExample(std::string(LINKD_E2E_SOURCE_DIR) + "/docs/audit.md");
  ASSERT_GE(ex.files.size(), 4u);
  ASSERT_GE(ex.commands.size(), 7u);
  for (const auto &[name, text] : ex.files)
    writeFile(name, text);
  // The commands as a user types them: linkd's binaries on PATH, clang
  // for clang-19, wine with the test's private prefix.
  std::string env = "PATH=" + binDir() + ":$PATH; ";
  for (const auto &[command, expected] : ex.commands) {
    SCOPED_TRACE(command);
    std::string cmd = command;
    if (cmd.starts_with("clang "))
      cmd = "clang-19 " + cmd.substr(6);
    if (cmd.starts_with("wine "))
      cmd = wine(cmd.substr(5));
    if (cmd == "echo $?")
      continue; // checked with the audit below
    RunResult r = run(env + cmd, 180s);
    std::erase(r.out, '\r');
    if (cmd.find("linkd audit") != std::string::npos) {
      // Each line the docs show is there (the order of modules too).
      std::istringstream want(expected);
      std::string l;
      while (std::getline(want, l))
        EXPECT_NE(r.out.find(l), std::string::npos) << l << "\n" << r.out;
      continue;
    }
    ASSERT_EQ(r.exitCode, 0) << describe(r);
    if (!expected.empty())
      EXPECT_EQ(r.out, expected);
    if (cmd.find("-o main.exe") != std::string::npos)
      waitForRecords(3);
  }
  // `echo $?` after the audit in the docs: its exit status.
  size_t i = 0;
  for (; i < ex.commands.size(); ++i)
    if (ex.commands[i].first == "echo $?")
      break;
  ASSERT_LT(i, ex.commands.size());
  RunResult again = run(env + ex.commands[i - 1].first);
  EXPECT_EQ(std::to_string(again.exitCode) + "\n", ex.commands[i].second);
}

} // namespace
} // namespace linkd::e2e
