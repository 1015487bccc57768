// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd audit` (docs/audit.md): runtime state kept in more than one copy
// across the modules of a program. Each case builds a real program with
// clang-19 (ELF, MinGW and MSVC-style PE, Mach-O), links it through linkd
// (and compares with stock LLD where the link-time record could change the
// bytes), runs it where possible to show the duplicated state, and checks
// what the audit reports and its exit status (1 found, 0 clean, 2 bad input,
// 3 incomplete).
#include "harness.h"

namespace linkd::e2e {
namespace {

// The runtime: its state, and the getter every module goes through.
constexpr const char *kRuntime = R"(#ifndef VIS
#define VIS "hidden"
#endif
__attribute__((visibility(VIS))) __attribute__((weak)) int halide_device_interface;
__attribute__((visibility(VIS))) int halide_copy_count = 7;
__attribute__((visibility(VIS))) int *halide_get_interface(void) {
  ++halide_copy_count;
  return &halide_device_interface;
}
)";
constexpr const char *kLibA = R"(int *halide_get_interface(void);
void a_set(int v) { *halide_get_interface() = v; }
int a_get(void) { return *halide_get_interface(); }
)";
constexpr const char *kLibB = R"(int *halide_get_interface(void);
int b_get(void) { return *halide_get_interface(); }
)";
constexpr const char *kMain = R"(#include <stdio.h>
void a_set(int); int a_get(void); int b_get(void);
int main(void) {
  a_set(8);
  printf("a sees %d, b sees %d\n", a_get(), b_get());
  return 0;
}
)";

class Audit : public E2eTest {
protected:
  void SetUp() override {
    // The daemon this test starts records the state of outputs without
    // symbols (opt-in; docs/audit.md).
    setenv("LINKD_AUDIT_RECORD", "1", 1);
    E2eTest::SetUp();
    writeFile("rt.c", kRuntime);
    writeFile("a.c", kLibA);
    writeFile("b.c", kLibB);
    writeFile("main.c", kMain);
  }

  void TearDown() override {
    E2eTest::TearDown();
    unsetenv("LINKD_AUDIT_RECORD");
  }

  RunResult audit(const std::string &args) {
    return run(binPath("linkd") + " audit " + args);
  }

  // Compiles the runtime with `vis` and the rest.
  void compileElf(const std::string &vis) {
    ASSERT_TRUE(exitedZero(run("clang-19 -fPIC -O1 -DVIS='\"" + vis +
                               "\"' -c rt.c a.c b.c main.c")));
  }

  // libA.so and libB.so, each with its runtime copy, and the program.
  void linkElf(const std::string &flagsA = "", const std::string &flagsB = "",
               const std::string &order = "-lA -lB") {
    ASSERT_TRUE(linkBoth(elfLinkers(),
                         "clang-19 --ld-path={ld} -shared a.o rt.o " + flagsA +
                             " -o libA.so",
                         {"libA.so"}));
    ASSERT_TRUE(linkBoth(elfLinkers(),
                         "clang-19 --ld-path={ld} -shared b.o rt.o " + flagsB +
                             " -o libB.so",
                         {"libB.so"}));
    ASSERT_TRUE(exitedZero(run("clang-19 --ld-path=" + binPath("ld.linkd") +
                               " main.o -L. " + order +
                               " -Wl,-rpath,'$ORIGIN' -o main")));
  }

  static std::string withoutCarriageReturns(std::string s) {
    std::erase(s, '\r');
    return s;
  }
};

// --- ELF ------------------------------------------------------------------

TEST_F(Audit, ElfHiddenRuntimeInTwoSharedObjectsIsReported) {
  compileElf("hidden");
  linkElf();
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "a sees 8, b sees 0\n"); // two copies of the state
  RunResult a = audit("./main");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  for (const char *needle :
       {"runtime halide_*", "halide_device_interface", "halide_copy_count",
        "libA.so: hidden visibility", "libB.so: hidden visibility",
        "2 copies at run time"})
    EXPECT_NE(a.out.find(needle), std::string::npos) << needle << "\n" << a.out;
  RunResult j = audit("./main --json");
  EXPECT_EQ(j.exitCode, 1) << describe(j);
  EXPECT_NE(j.out.find(R"("symbol":"halide_device_interface")"),
            std::string::npos)
      << j.out;
  EXPECT_NE(j.out.find(R"("instances":2)"), std::string::npos) << j.out;
  // Intentional copies can be allowed.
  writeFile("allow.txt", "# one runtime per library, on purpose\nhalide_*\n");
  RunResult allowed = audit("./main --allow allow.txt");
  EXPECT_EQ(allowed.exitCode, 0) << describe(allowed);
  EXPECT_NE(allowed.out.find("2 duplicated symbols allowed by --allow"),
            std::string::npos)
      << allowed.out;
}

TEST_F(Audit, ElfDefaultVisibilityWithoutBsymbolicIsClean) {
  compileElf("default");
  linkElf();
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "a sees 8, b sees 8\n"); // the loader bound one copy
  RunResult a = audit("./main");
  EXPECT_EQ(a.exitCode, 0) << describe(a);
  EXPECT_NE(a.out.find("no state duplicated across its"), std::string::npos)
      << a.out;
  EXPECT_NE(
      a.out.find("libB.so (ELF, DT_NEEDED of ./main (DT_RUNPATH $ORIGIN)"),
      std::string::npos)
      << a.out;
}

TEST_F(Audit, ElfOneCopyLinkedBsymbolicIsReported) {
  compileElf("default");
  // libB first: everyone's getter is libB's, except libA's own references.
  linkElf("-Wl,-Bsymbolic", "", "-lB -lA");
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "a sees 8, b sees 0\n");
  RunResult a = audit("./main");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  EXPECT_NE(a.out.find("libA.so: exported, but the module is linked with "
                       "-Bsymbolic"),
            std::string::npos)
      << a.out;
  EXPECT_NE(a.out.find("libB.so: exported and interposable"), std::string::npos)
      << a.out;
}

TEST_F(Audit, ElfDlopenedPluginNamedOnTheCommandLineIsIncluded) {
  compileElf("hidden");
  writeFile("main2.c", R"(#include <dlfcn.h>
#include <stdio.h>
void a_set(int); int a_get(void);
int main(void) {
  a_set(8);
  void *h = dlopen("./libB.so", RTLD_NOW);
  int (*b_get)(void) = h ? (int (*)(void))dlsym(h, "b_get") : 0;
  if (!b_get)
    return 2;
  printf("a sees %d, plugin sees %d\n", a_get(), b_get());
  return 0;
}
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -O1 -c main2.c")));
  linkElf();
  ASSERT_TRUE(
      exitedZero(run("clang-19 --ld-path=" + binPath("ld.linkd") +
                     " main2.o -L. -lA -Wl,-rpath,'$ORIGIN' -o main2")));
  RunResult r = run("./main2");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_EQ(r.out, "a sees 8, plugin sees 0\n");
  RunResult alone = audit("./main2");
  EXPECT_EQ(alone.exitCode, 0) << describe(alone); // the plugin is not needed
  RunResult with = audit("./main2 ./libB.so");
  EXPECT_EQ(with.exitCode, 1) << describe(with);
  EXPECT_NE(with.out.find("./libB.so (ELF, named on the command line"),
            std::string::npos)
      << with.out;
  EXPECT_NE(with.out.find("./libB.so: hidden visibility"), std::string::npos)
      << with.out;
}

TEST_F(Audit, ElfStrippedModulesLinkedByLinkdAreStillFound) {
  compileElf("hidden");
  long long before = cacheStats()["results_stored"];
  // -s: no symbol table; the link child records the state (same bytes).
  linkElf("-s", "-s");
  waitForStored(before + 3);
  RunResult syms = run(tools::nm.path + " libA.so");
  EXPECT_NE(syms.err.find("no symbols"), std::string::npos) << describe(syms);
  RunResult a = audit("./main");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  EXPECT_NE(a.out.find("halide_device_interface"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("libA.so (ELF, DT_NEEDED of ./main (DT_RUNPATH "
                       "$ORIGIN); linkd link record"),
            std::string::npos)
      << a.out;
  // Stock LLD's bytes are the same, and so is the record. Modules linkd
  // never linked (here: other bytes, with a SONAME): nothing to go on
  // but the exports, and the audit says so instead of calling them clean:
  // incomplete (3), each module named.
  for (const char *lib : {"A", "B"})
    ASSERT_TRUE(exitedZero(run(
        std::string("mkdir -p stock && clang-19 --ld-path=") +
        tools::ldLld.path + " -shared " + (lib[0] == 'A' ? "a.o" : "b.o") +
        " rt.o -s -Wl,-soname,lib" + lib + ".so -o stock/lib" + lib + ".so")));
  ASSERT_TRUE(exitedZero(run("cp main stock/")));
  RunResult s = audit("stock/main");
  EXPECT_EQ(s.exitCode, 3) << describe(s);
  EXPECT_NE(s.out.find("linkd audit: stock/main: incomplete: 2 modules not "
                       "inspected"),
            std::string::npos)
      << s.out;
  EXPECT_NE(s.out.find("not inspectable: " + path("stock") + "/libA.so"),
            std::string::npos)
      << s.out;
}

TEST_F(Audit, RealProgramIsClean) {
  // googletest's samples: a C++ library (default visibility, libstdc++'s
  // inline state) and its test program against libgtest.a.
  const std::string samples = "/usr/src/googletest/googletest/samples";
  ASSERT_TRUE(haveFile(samples + "/sample1.cc", "googletest"));
  ASSERT_TRUE(haveFile("/usr/lib/x86_64-linux-gnu/libgtest.a", "libgtest-dev"));
  ASSERT_TRUE(exitedZero(
      run("clang++-19 -O1 -fPIC -I" + samples + " -c " + samples +
          "/sample1.cc " + samples + "/sample2.cc " + samples +
          "/sample1_unittest.cc " + samples + "/sample2_unittest.cc")));
  ASSERT_TRUE(exitedZero(run("clang++-19 --ld-path=" + binPath("ld.linkd") +
                             " -shared sample1.o sample2.o -o libsamples.so")));
  ASSERT_TRUE(exitedZero(run(
      "clang++-19 --ld-path=" + binPath("ld.linkd") +
      " sample1_unittest.o sample2_unittest.o -L. -lsamples "
      "-Wl,-rpath,'$ORIGIN' -lgtest_main -lgtest -lpthread -o samples_test")));
  RunResult t = run("./samples_test");
  ASSERT_TRUE(exitedZero(t)) << describe(t);
  RunResult a = audit("./samples_test");
  EXPECT_EQ(a.exitCode, 0) << describe(a);
  EXPECT_NE(a.out.find("no state duplicated"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("libstdc++.so.6"), std::string::npos) << a.out;
}

// --- PE: MinGW ------------------------------------------------------------

constexpr const char *kPeRuntime = R"(static int halide_device_interface;
int halide_copy_count;
RT_API void halide_set_interface(int id) { halide_device_interface = id; ++halide_copy_count; }
RT_API int halide_get_interface(void) { return halide_device_interface; }
)";
constexpr const char *kPeA = R"(RT_IMPORT void halide_set_interface(int);
RT_IMPORT int halide_get_interface(void);
__declspec(dllexport) void a_set(int v) { halide_set_interface(v); }
__declspec(dllexport) int a_get(void) { return halide_get_interface(); }
)";
constexpr const char *kPeB = R"(RT_IMPORT int halide_get_interface(void);
__declspec(dllexport) int b_get(void) { return halide_get_interface(); }
)";

class AuditPe : public Audit {
protected:
  void SetUp() override {
    Audit::SetUp();
    writeFile("rt.c", kPeRuntime);
    writeFile("a.c", kPeA);
    writeFile("b.c", kPeB);
    writeFile("pemain.c", R"(#include <stdio.h>
__declspec(dllimport) void a_set(int);
__declspec(dllimport) int a_get(void);
__declspec(dllimport) int b_get(void);
int main(void) {
  a_set(8);
  printf("a sees %d, b sees %d\n", a_get(), b_get());
  return 0;
}
)");
  }

  // `shared`: the runtime in rt.dll, imported by both; else a copy in each.
  void compileMingw(bool shared) {
    std::string defs = shared ? "-DRT_API='__declspec(dllexport)' "
                                "-DRT_IMPORT='__declspec(dllimport)'"
                              : "-DRT_API= -DRT_IMPORT=";
    ASSERT_TRUE(exitedZero(run("clang-19 --target=x86_64-w64-mingw32 -O1 " +
                               defs + " -c rt.c a.c b.c pemain.c")));
  }

  std::string mingw(const std::string &args) {
    return "clang-19 --target=x86_64-w64-mingw32 --ld-path={ld} "
           "-Wl,--no-insert-timestamp " +
           args;
  }

  void linkMingw(bool shared, const std::string &strip) {
    std::string rt = shared ? "-L. -lrt" : "rt.o";
    if (shared)
      ASSERT_TRUE(linkBoth(elfLinkers(),
                           mingw("-shared rt.o " + strip +
                                 " -o rt.dll -Wl,--out-implib,librt.a"),
                           {"rt.dll", "librt.a"}));
    ASSERT_TRUE(linkBoth(elfLinkers(),
                         mingw("-shared a.o " + rt + " " + strip +
                               " -o a.dll -Wl,--out-implib,liba.a"),
                         {"a.dll", "liba.a"}));
    ASSERT_TRUE(linkBoth(elfLinkers(),
                         mingw("-shared b.o " + rt + " " + strip +
                               " -o b.dll -Wl,--out-implib,libb.a"),
                         {"b.dll", "libb.a"}));
    ASSERT_TRUE(linkBoth(
        elfLinkers(), mingw("pemain.o -L. -la -lb " + strip + " -o main.exe"),
        {"main.exe"}));
  }
};

TEST_F(AuditPe, MingwDllsEachWithARuntimeCopyAreReported) {
  ASSERT_TRUE(haveTool(tools::wine));
  compileMingw(false);
  for (std::string strip : {"", "-s"}) {
    SCOPED_TRACE("link flags: " + strip);
    long long before = cacheStats()["results_stored"];
    linkMingw(false, strip);
    waitForStored(before + 3);
    RunResult r = run(wine("./main.exe"), 180s);
    ASSERT_EQ(r.exitCode, 0) << describe(r);
    EXPECT_EQ(withoutCarriageReturns(r.out), "a sees 8, b sees 0\n");
    RunResult a = audit("main.exe");
    EXPECT_EQ(a.exitCode, 1) << describe(a);
    for (const char *needle :
         {"runtime halide_*: 2 symbols, copies in 2 modules",
          "halide_device_interface [rt]", "halide_copy_count",
          "./a.dll: a DLL's own copy", "./b.dll: a DLL's own copy",
          "not followed: KERNEL32.dll"})
      EXPECT_NE(a.out.find(needle), std::string::npos) << needle << "\n"
                                                       << a.out;
    // The C runtime every DLL carries is not a finding.
    EXPECT_EQ(a.out.find("mingw"), std::string::npos) << a.out;
  }
}

TEST_F(AuditPe, MingwOneRuntimeDllImportedByBothIsClean) {
  ASSERT_TRUE(haveTool(tools::wine));
  compileMingw(true);
  long long before = cacheStats()["results_stored"];
  linkMingw(true, "-s");
  waitForStored(before + 4);
  RunResult r = run(wine("./main.exe"), 180s);
  ASSERT_EQ(r.exitCode, 0) << describe(r);
  EXPECT_EQ(withoutCarriageReturns(r.out), "a sees 8, b sees 8\n");
  RunResult a = audit("main.exe");
  EXPECT_EQ(a.exitCode, 0) << describe(a);
  EXPECT_NE(a.out.find("./rt.dll (PE, imported by ./a.dll"), std::string::npos)
      << a.out;
  // A DLL outside the program's directory is found through --search only.
  ASSERT_TRUE(exitedZero(run("mkdir dlls && mv rt.dll dlls/")));
  RunResult away = audit("main.exe");
  EXPECT_NE(away.out.find("not followed: rt.dll (imported by ./a.dll)"),
            std::string::npos)
      << away.out;
  RunResult searched = audit("main.exe --search dlls");
  EXPECT_EQ(searched.exitCode, 0) << describe(searched);
  EXPECT_NE(
      searched.out.find("dlls/rt.dll (PE, imported by ./a.dll (--search)"),
      std::string::npos)
      << searched.out;
}

// --- PE: MSVC-style lld-link ------------------------------------------------

// No CRT: the program talks to kernel32 directly (as windows_test.cpp).
constexpr const char *kMsvcMain = R"(typedef void *HANDLE;
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
)";

TEST_F(AuditPe, LldLinkDllsEachWithARuntimeCopyAreReported) {
  ASSERT_TRUE(haveTool(tools::wine));
  const std::string kernel32 = "/usr/x86_64-w64-mingw32/lib/libkernel32.a";
  ASSERT_TRUE(haveFile(kernel32, "mingw-w64-x86-64-dev"));
  writeFile("msvcmain.c", kMsvcMain);
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "one runtime DLL" : "a copy in each DLL");
    std::string defs = shared ? "-DRT_API='__declspec(dllexport)' "
                                "-DRT_IMPORT='__declspec(dllimport)'"
                              : "-DRT_API= -DRT_IMPORT=";
    ASSERT_TRUE(exitedZero(run("clang-19 --target=x86_64-pc-windows-msvc -O1 " +
                               defs + " -c rt.c a.c b.c msvcmain.c")));
    const std::string dll = "{ld} /Brepro /dll /noentry /nodefaultlib ";
    std::string rt = shared ? "rt.lib" : "rt.o";
    long long before = cacheStats()["results_stored"];
    if (shared)
      ASSERT_TRUE(linkBoth(coffLinkers(), dll + "rt.o /out:rt.dll",
                           {"rt.dll", "rt.lib"}));
    ASSERT_TRUE(linkBoth(coffLinkers(), dll + "a.o " + rt + " /out:a.dll",
                         {"a.dll", "a.lib"}));
    ASSERT_TRUE(linkBoth(coffLinkers(), dll + "b.o " + rt + " /out:b.dll",
                         {"b.dll", "b.lib"}));
    ASSERT_TRUE(linkBoth(coffLinkers(),
                         "{ld} /Brepro /subsystem:console /nodefaultlib "
                         "/entry:mainCRTStartup msvcmain.o a.lib b.lib " +
                             kernel32 + " /out:main.exe",
                         {"main.exe"}));
    waitForStored(before + (shared ? 4 : 3));
    RunResult r = run(wine("./main.exe"), 180s);
    ASSERT_EQ(r.exitCode, 0) << describe(r);
    EXPECT_EQ(withoutCarriageReturns(r.out),
              shared ? "a sees 8, b sees 8\n" : "a sees 8, b sees 0\n");
    RunResult a = audit("main.exe");
    EXPECT_EQ(a.exitCode, shared ? 0 : 1) << describe(a);
    if (!shared) {
      EXPECT_NE(a.out.find("halide_device_interface [rt]"), std::string::npos)
          << a.out;
      EXPECT_NE(a.out.find("./a.dll (PE, imported by main.exe (program's "
                           "directory); linkd link record)"),
                std::string::npos)
          << a.out;
    }
  }
}

// --- Mach-O ----------------------------------------------------------------

TEST_F(Audit, MachOTwoDylibsEachWithACopyAreReported) {
  ASSERT_TRUE(haveTool(tools::ld64Lld));
  writeFile("sdk/libSystem.tbd", R"(--- !tapi-tbd
tbd-version:     4
targets:         [ arm64-macos ]
install-name:    '/usr/lib/libSystem.B.dylib'
current-version: 1311
exports:
  - targets:     [ arm64-macos ]
    symbols:     [ _printf, dyld_stub_binder ]
...
)");
  writeFile("main.c", R"(int printf(const char *, ...);
void a_set(int); int a_get(void); int b_get(void);
int main(void) {
  a_set(8);
  printf("a sees %d, b sees %d\n", a_get(), b_get());
  return 0;
}
)");
  ASSERT_TRUE(exitedZero(run("clang-19 --target=arm64-apple-macos11 -O1 "
                             "-DVIS='\"default\"' -c rt.c a.c b.c main.c")));
  const std::string ld = binPath("ld64.linkd") +
                         " -arch arm64 -platform_version macos 11.0 11.0 "
                         "-Lsdk -lSystem ";
  ASSERT_TRUE(exitedZero(run(ld + "-dylib a.o rt.o -install_name "
                                  "@rpath/libA.dylib -o libA.dylib")));
  ASSERT_TRUE(exitedZero(run(ld + "-dylib b.o rt.o -install_name "
                                  "@rpath/libB.dylib -o libB.dylib")));
  ASSERT_TRUE(exitedZero(run(ld + "main.o libA.dylib libB.dylib -rpath "
                                  "@executable_path -o main")));
  RunResult a = audit("./main");
  EXPECT_EQ(a.exitCode, 1) << describe(a);
  for (const char *needle :
       {"halide_copy_count", "libA.dylib: two-level namespace",
        "libB.dylib: two-level namespace",
        "libA.dylib (Mach-O, LC_LOAD_DYLIB of ./main",
        "not followed: /usr/lib/libSystem.B.dylib"})
    EXPECT_NE(a.out.find(needle), std::string::npos) << needle << "\n" << a.out;
}

// --- Bad input -------------------------------------------------------------

TEST_F(Audit, BadInputIsNamedAndNeverCrashes) {
  compileElf("hidden");
  linkElf();
  RunResult missing = audit("./nothing-here");
  EXPECT_EQ(missing.exitCode, 2) << describe(missing);
  EXPECT_NE(missing.err.find("./nothing-here: No such file or directory"),
            std::string::npos)
      << missing.err;
  RunResult plugin = audit("./main ./no-plugin.so");
  EXPECT_EQ(plugin.exitCode, 2) << describe(plugin);
  EXPECT_NE(plugin.err.find("./no-plugin.so"), std::string::npos) << plugin.err;

  ASSERT_TRUE(exitedZero(run("head -c 300 libA.so > cut.so")));
  RunResult cut = audit("./main ./cut.so");
  EXPECT_EQ(cut.exitCode, 2) << describe(cut);
  EXPECT_NE(cut.err.find("./cut.so: "), std::string::npos) << cut.err;
  EXPECT_EQ(cut.termSignal, 0);

  // A needed library for another machine is skipped, as ld.so does, and
  // said; one named on the command line is an error.
  ASSERT_TRUE(
      exitedZero(run("mkdir arm && clang-19 --target=aarch64-linux-gnu "
                     "-fPIC -c b.c -o arm/b.o && " +
                     tools::ldLld.path + " -shared arm/b.o -o arm/libB.so")));
  RunResult other = audit("./main ./arm/libB.so");
  EXPECT_EQ(other.exitCode, 2) << describe(other);
  EXPECT_NE(other.err.find("./arm/libB.so: for aarch64"), std::string::npos)
      << other.err;
  ASSERT_TRUE(exitedZero(run("cp arm/libB.so libB.so")));
  RunResult skipped = audit("./main");
  EXPECT_NE(skipped.out.find("not followed: libB.so (needed by ./main): "),
            std::string::npos)
      << skipped.out;
  EXPECT_NE(skipped.out.find("for aarch64"), std::string::npos) << skipped.out;

  RunResult usage = audit("--json");
  EXPECT_EQ(usage.exitCode, 2) << describe(usage);
  EXPECT_NE(usage.err.find("missing PROGRAM"), std::string::npos) << usage.err;
}

// What the audit is given may be anything: a FIFO as
// PROGRAM, as a module or as the --allow file hung for good; /dev/zero
// read until memory ran out; a module that names a thousand missing
// libraries over a thousand-entry DT_RUNPATH took 10.8 s. Each is now
// answered at once, with the path and the reason, and exit status 2 (the
// missing libraries: 3, incomplete, each named).
TEST_F(Audit, FifosDevicesAndHugeSearchesAreAnsweredAtOnce) {
  compileElf("hidden");
  linkElf();
  ASSERT_TRUE(exitedZero(run("mkfifo fifo && ln -s /dev/zero zero.so")));
  for (const std::string &args :
       {std::string("./fifo"), std::string("/dev/zero"),
        std::string("./main ./fifo"), std::string("./main ./zero.so")}) {
    RunResult r = run(binPath("linkd") + " audit " + args, 20s);
    EXPECT_EQ(r.exitCode, 2) << args << ": " << describe(r);
    EXPECT_NE(r.err.find(": not a regular file"), std::string::npos)
        << args << ": " << r.err;
  }
  RunResult allow = run(binPath("linkd") + " audit ./main --allow fifo", 20s);
  EXPECT_EQ(allow.exitCode, 2) << describe(allow);
  EXPECT_NE(allow.err.find("cannot read allow file fifo: not a regular file"),
            std::string::npos)
      << allow.err;

  // 300 DT_NEEDED of libraries since removed, over 300 RUNPATH entries
  // (90000 places to look): the verdict names every one of them.
  writeFile("w.c", "int main(void) { return 0; }\n");
  std::string libs, rpath;
  for (int i = 0; i < 300; ++i) {
    libs += " libgone" + std::to_string(i) + ".so";
    rpath += (i ? ":" : "") + path("nowhere/d" + std::to_string(i));
  }
  ASSERT_TRUE(exitedZero(run(
      "clang-19 -c -x c /dev/null -o empty.o && for l in" + libs + "; do " +
      tools::ldLld.path + " -shared -soname $l -o $l empty.o || exit 1; " +
      "done && clang-19 -fuse-ld=lld w.c -Wl,--no-as-needed" + libs +
      " -Wl,--enable-new-dtags,-rpath," + rpath + " -o wide && rm" + libs)));
  RunResult wide = run(binPath("linkd") + " audit ./wide", 60s);
  EXPECT_EQ(wide.exitCode, 3) << describe(wide);
  EXPECT_NE(wide.out.find("not followed: libgone299.so (needed by ./wide): "
                          "not found"),
            std::string::npos)
      << wide.out.substr(0, 2000);
}

} // namespace
} // namespace linkd::e2e
