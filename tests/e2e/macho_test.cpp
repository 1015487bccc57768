// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Mach-O arm64 through ld64.linkd. No SDK on Linux: libSystem is a small
// hand-written text stub (.tbd), which is all ld64.lld needs to bind against.
// The executable cannot run here; its load commands and bindings are checked
// with llvm-objdump/llvm-nm, and its bytes (LC_UUID and the ad-hoc code
// signature included) against stock ld64.lld with the same -o name.
#include "harness.h"

namespace linkd::e2e {
namespace {

class MachO : public E2eTest {};

constexpr const char *kLibSystemTbd = R"(--- !tapi-tbd
tbd-version:     4
targets:         [ arm64-macos ]
install-name:    '/usr/lib/libSystem.B.dylib'
current-version: 1311
exports:
  - targets:     [ arm64-macos ]
    symbols:     [ _puts, _printf, dyld_stub_binder ]
...
)";

TEST_F(MachO, Arm64ExecutableAgainstTbdStub) {
  ASSERT_TRUE(haveTool(tools::ld64Lld));
  ASSERT_TRUE(haveTool(tools::objdump));
  writeFile("sdk/libSystem.tbd", kLibSystemTbd);
  writeFile("main.c", R"(int puts(const char *);
int printf(const char *, ...);
extern int counter;
int bump(void);
int main(void) {
  puts("hello from mach-o");
  printf("%d\n", bump() + counter);
  return 0;
}
)");
  writeFile("counter.c", R"(int counter = 41;
int bump(void) { return ++counter - 41; }
)");
  ASSERT_TRUE(exitedZero(
      run("clang-19 --target=arm64-apple-macos11 -O2 -c main.c counter.c")));
  ASSERT_TRUE(linkBoth(machoLinkers(),
                       "{ld} -arch arm64 -platform_version macos 11.0 11.0 "
                       "-Lsdk -lSystem -dead_strip main.o counter.o -o hello",
                       {"hello"}));
  RunResult p = run(tools::objdump.path + " --macho -p hello");
  ASSERT_TRUE(exitedZero(p));
  for (const char *needle :
       {"cmd LC_MAIN", "cmd LC_UUID", "cmd LC_CODE_SIGNATURE",
        "name /usr/lib/libSystem.B.dylib", "platform macos", "minos 11.0"})
    EXPECT_NE(p.out.find(needle), std::string::npos)
        << "missing '" << needle << "'\n"
        << p.out;
  RunResult syms = run(tools::nm.path + " -m hello");
  ASSERT_TRUE(exitedZero(syms));
  EXPECT_NE(syms.out.find("(undefined) external _puts (from libSystem)"),
            std::string::npos)
      << syms.out;
  EXPECT_NE(syms.out.find("external _main"), std::string::npos) << syms.out;
  EXPECT_NE(syms.out.find("_counter"), std::string::npos) << syms.out;
}

TEST_F(MachO, DylibInstallNameDefaultsToOutputPath) {
  ASSERT_TRUE(haveTool(tools::ld64Lld));
  writeFile("sdk/libSystem.tbd", kLibSystemTbd);
  writeFile("lib.c", "int answer(void) { return 42; }\n");
  ASSERT_TRUE(
      exitedZero(run("clang-19 --target=arm64-apple-macos11 -c lib.c")));
  // LC_ID_DYLIB is the -o path as given: a relative path must stay relative
  // to the client's directory, not the daemon's.
  ASSERT_TRUE(exitedZero(run("mkdir out")));
  ASSERT_TRUE(linkBoth(machoLinkers(),
                       "{ld} -arch arm64 -platform_version macos 11.0 11.0 "
                       "-dylib -Lsdk -lSystem lib.o -o out/libanswer.dylib",
                       {"out/libanswer.dylib"}));
  RunResult p = run(tools::objdump.path + " --macho -p out/libanswer.dylib");
  ASSERT_TRUE(exitedZero(p));
  EXPECT_NE(p.out.find("name out/libanswer.dylib"), std::string::npos) << p.out;
}

} // namespace
} // namespace linkd::e2e
