// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// PE/COFF through both of LLD's Windows drivers: MinGW (ld.linkd -m i386pep,
// as clang's MinGW driver calls it) and MSVC-style lld-link.linkd. Outputs
// are compared with stock LLD and the programs run under Wine.
//
// Wine: a console program needs no display, so these tests require wine and
// run it for real; a missing wine is a failure naming the package. Each test
// uses a private WINEPREFIX (the first start builds it, ~5 s) and stops that
// prefix's wineserver at teardown.
#include "harness.h"

#include <cstdint>
#include <ctime>

namespace linkd::e2e {
namespace {

class Windows : public E2eTest {
protected:
  // Wine's console turns "\n" into "\r\n" for text-mode output.
  static std::string withoutCarriageReturns(std::string s) {
    std::erase(s, '\r');
    return s;
  }
};

TEST_F(Windows, MingwCxxRunsUnderWine) {
  ASSERT_TRUE(haveTool(tools::mingwGxx));
  ASSERT_TRUE(haveTool(tools::wine));
  // Compiled by MinGW's g++ (SEH unwinding, libstdc++), linked by LLD's
  // MinGW driver through clang's MinGW toolchain.
  writeFile("main.cpp", R"(#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>
static int dive(int n) {
  if (n == 0)
    throw std::runtime_error("bottom reached");
  return dive(n - 1) + 1;
}
int main() {
  std::vector<std::string> words{"pe", "coff", "mingw"};
  std::string joined;
  for (const auto &w : words)
    joined += w + "/";
  std::printf("%s\n", joined.c_str());
  try {
    dive(4);
  } catch (const std::exception &e) {
    std::printf("caught: %s\n", e.what());
  }
  return 3;
}
)");
  ASSERT_TRUE(exitedZero(run("x86_64-w64-mingw32-g++ -O1 -c main.cpp")));
  // LLD's MinGW driver stamps the PE header with the current time unless
  // told not to; the stock link and ours may fall in different seconds.
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang++-19 --target=x86_64-w64-mingw32 -static "
                       "--ld-path={ld} -Wl,--no-insert-timestamp main.o "
                       "-o main.exe",
                       {"main.exe"}));
  RunResult r = run(wine("./main.exe"), 180s);
  EXPECT_EQ(r.exitCode, 3) << describe(r);
  EXPECT_EQ(withoutCarriageReturns(r.out),
            "pe/coff/mingw/\ncaught: bottom reached\n")
      << describe(r);
}

TEST_F(Windows, LldLinkDllAndExeWithBrepro) {
  ASSERT_TRUE(haveTool(tools::wine));
  const std::string kernel32 = "/usr/x86_64-w64-mingw32/lib/libkernel32.a";
  ASSERT_TRUE(haveFile(kernel32, "mingw-w64-x86-64-dev"));
  // No CRT: the entry point talks to kernel32 directly.
  writeFile("twice.c",
            R"(__declspec(dllexport) int twice(int x) { return 2 * x; }
int _DllMainCRTStartup(void *h, unsigned reason, void *reserved) { return 1; }
)");
  writeFile("main.c", R"(typedef void *HANDLE;
__declspec(dllimport) HANDLE __stdcall GetStdHandle(unsigned long);
__declspec(dllimport) int __stdcall WriteFile(HANDLE, const void *, unsigned long,
                                              unsigned long *, void *);
__declspec(dllimport) void __stdcall ExitProcess(unsigned);
__declspec(dllimport) int twice(int);
void mainCRTStartup(void) {
  char msg[] = "coff: twice(21) = ??\n";
  int v = twice(21);
  msg[18] = (char)('0' + v / 10);
  msg[19] = (char)('0' + v % 10);
  unsigned long written;
  WriteFile(GetStdHandle((unsigned long)-11), msg, sizeof msg - 1, &written, 0);
  ExitProcess(7);
}
)");
  ASSERT_TRUE(exitedZero(
      run("clang-19 --target=x86_64-pc-windows-msvc -O2 -c twice.c main.c")));
  ASSERT_TRUE(
      linkBoth(coffLinkers(),
               "{ld} /Brepro /dll /nodefaultlib /entry:_DllMainCRTStartup "
               "twice.o /out:twice.dll",
               {"twice.dll", "twice.lib"}));
  ASSERT_TRUE(linkBoth(coffLinkers(),
                       "{ld} /Brepro /subsystem:console /nodefaultlib "
                       "/entry:mainCRTStartup main.o twice.lib " +
                           kernel32 + " /out:main.exe",
                       {"main.exe"}));
  RunResult headers = run(tools::objdump.path + " -p main.exe");
  ASSERT_TRUE(exitedZero(headers));
  EXPECT_NE(headers.out.find("DLL Name: twice.dll"), std::string::npos)
      << headers.out;
  RunResult r = run(wine("./main.exe"), 180s);
  EXPECT_EQ(r.exitCode, 7) << describe(r);
  EXPECT_EQ(withoutCarriageReturns(r.out), "coff: twice(21) = 42\n")
      << describe(r);
}

// The PE header's TimeDateStamp of a linked image.
uint32_t peTimestamp(const std::string &image) {
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
      v = v << 8 | static_cast<unsigned char>(image.at(at + i));
    return v;
  };
  return u32(u32(0x3c) + 8); // e_lfanew -> "PE\0\0", Machine, NumberOfSections
}

TEST_F(Windows, SourceDateEpochIsTheClientsNotTheDaemons) {
  // LLD reads SOURCE_DATE_EPOCH for the PE timestamp. The first client starts
  // the daemon with its own value in the environment; each later link must
  // see its own client's value, or none.
  writeFile("main.c", "void mainCRTStartup(void) {}\n");
  ASSERT_TRUE(exitedZero(
      run("clang-19 --target=x86_64-pc-windows-msvc -O2 -c main.c")));
  const std::string link = binPath("lld-link.linkd") +
                           " /subsystem:console /nodefaultlib "
                           "/entry:mainCRTStartup main.o /out:";
  ASSERT_TRUE(
      exitedZero(run("SOURCE_DATE_EPOCH=1700000000 " + link + "first.exe")));
  ASSERT_TRUE(
      exitedZero(run("SOURCE_DATE_EPOCH=1600000000 " + link + "second.exe")));
  ASSERT_TRUE(
      exitedZero(run("unset SOURCE_DATE_EPOCH; " + link + "third.exe")));
  EXPECT_EQ(peTimestamp(readFile("first.exe")), 1700000000u);
  EXPECT_EQ(peTimestamp(readFile("second.exe")), 1600000000u);
  uint32_t now = static_cast<uint32_t>(std::time(nullptr));
  uint32_t third = peTimestamp(readFile("third.exe"));
  EXPECT_LE(now - third, 120u) << "timestamp " << third << ", now " << now;
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->linksTotal, 3u) << st->json;
  // And the same bytes as stock lld-link given the same value.
  ASSERT_TRUE(linkBoth(coffLinkers(),
                       "SOURCE_DATE_EPOCH=1600000000 {ld} /subsystem:console "
                       "/nodefaultlib /entry:mainCRTStartup main.o "
                       "/out:fourth.exe",
                       {"fourth.exe"}));
}

} // namespace
} // namespace linkd::e2e
