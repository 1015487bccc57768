// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// ELF links driven the way build systems drive them: clang-19 with
// --ld-path (and gcc with -B), each link done once through ld.linkd and once
// through stock ld.lld with the same arguments, outputs compared byte for
// byte and the programs run.
#include "harness.h"

#include <sys/stat.h>
#include <unistd.h>

namespace linkd::e2e {
namespace {

class ElfLink : public E2eTest {};

TEST_F(ElfLink, CHelloWorld) {
  writeFile("hello.c", R"(#include <stdio.h>
int main(void) {
  printf("hello from %s\n", "linkd");
  return 0;
}
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -c hello.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(), "clang-19 --ld-path={ld} hello.o -o hello",
                       {"hello"}));
  RunResult r = run("./hello");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "hello from linkd\n");
}

TEST_F(ElfLink, GccDriverThroughBDirectory) {
  ASSERT_TRUE(haveTool(tools::gcc));
  writeFile("hello.c", R"(#include <stdio.h>
int main(void) { puts("gcc -B"); return 0; }
)");
  ASSERT_TRUE(exitedZero(run("gcc -O2 -c hello.c")));
  // gcc finds `ld` in the -B directory; linkd's build ships one (bin/gcc/).
  ASSERT_EQ(access((binDir() + "/gcc/ld").c_str(), X_OK), 0)
      << binDir() << "/gcc/ld is missing from the build";
  ASSERT_TRUE(exitedZero(
      run("mkdir -p stock-ld && ln -s " + tools::ldLld.path + " stock-ld/ld")));
  LinkerPair viaB{binDir() + "/gcc/", path("stock-ld/")};
  ASSERT_TRUE(linkBoth(viaB, "gcc -B{ld} hello.o -o hello", {"hello"}));
  RunResult r = run("./hello");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "gcc -B\n");
}

TEST_F(ElfLink, CxxExceptionsAndIostream) {
  writeFile("main.cpp", R"(#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

struct Tracker {
  std::string name;
  ~Tracker() { std::cout << "unwound " << name << "\n"; }
};

static int dive(int depth) {
  Tracker t{"level" + std::to_string(depth)};
  if (depth == 3)
    throw std::out_of_range("depth " + std::to_string(depth));
  return dive(depth + 1);
}

int main() {
  std::map<std::string, std::vector<int>> m{{"a", {1, 2}}, {"b", {3}}};
  for (const auto &[k, v] : m)
    std::cout << k << ":" << v.size() << "\n";
  try {
    dive(1);
  } catch (const std::out_of_range &e) {
    std::cout << "caught " << e.what() << "\n";
  }
  try {
    throw 42;
  } catch (int x) {
    std::cout << "int " << x << std::endl;
  }
  return 0;
}
)");
  ASSERT_TRUE(exitedZero(run("clang++-19 -std=c++20 -O1 -c main.cpp")));
  ASSERT_TRUE(linkBoth(elfLinkers(), "clang++-19 --ld-path={ld} main.o -o main",
                       {"main"}));
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "a:2\nb:1\nunwound level3\nunwound level2\nunwound level1\n"
                   "caught depth 3\nint 42\n");
}

TEST_F(ElfLink, SharedLibraryWithRpath) {
  writeFile("greet.c", R"(#include <stdio.h>
static int calls;
int greet(const char *who) { return printf("hi %s #%d\n", who, ++calls); }
)");
  writeFile("main.c", R"(int greet(const char *);
int main(void) { greet("a"); greet("b"); return 0; }
)");
  ASSERT_TRUE(
      exitedZero(run("clang-19 -O2 -fPIC -c greet.c main.c && mkdir lib")));
  ASSERT_TRUE(
      linkBoth(elfLinkers(),
               "clang-19 --ld-path={ld} -shared -Wl,-soname,libgreet.so "
               "greet.o -o lib/libgreet.so",
               {"lib/libgreet.so"}));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --ld-path={ld} main.o -Llib -lgreet "
                       "-Wl,-rpath,'$ORIGIN/lib' -o main",
                       {"main"}));
  RunResult dyn = run(tools::readelf.path + " -d main");
  ASSERT_TRUE(exitedZero(dyn));
  EXPECT_NE(dyn.out.find("Library runpath: [$ORIGIN/lib]"), std::string::npos)
      << dyn.out;
  EXPECT_NE(dyn.out.find("Shared library: [libgreet.so]"), std::string::npos)
      << dyn.out;
  // From another directory: only the rpath can find the library.
  RunResult r = run("cd / && " + path("main"));
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "hi a #1\nhi b #2\n");
}

TEST_F(ElfLink, RelocatablePartialLink) {
  writeFile("a.c", R"(int b_value(void);
int a_value(void) { return 40 + b_value(); }
)");
  writeFile("b.c", R"(static int hidden = 2;
int b_value(void) { return hidden; }
)");
  writeFile("main.c", R"(#include <stdio.h>
int a_value(void);
int main(void) { printf("%d\n", a_value()); return 0; }
)");
  ASSERT_TRUE(
      exitedZero(run("clang-19 -O2 -ffunction-sections -c a.c b.c main.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(), "{ld} -r a.o b.o -o ab.o", {"ab.o"}));
  RunResult syms = run(tools::nm.path + " ab.o");
  ASSERT_TRUE(exitedZero(syms));
  EXPECT_NE(syms.out.find("T a_value"), std::string::npos) << syms.out;
  EXPECT_NE(syms.out.find("T b_value"), std::string::npos) << syms.out;
  ASSERT_TRUE(linkBoth(
      elfLinkers(), "clang-19 --ld-path={ld} main.o ab.o -o main", {"main"}));
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "42\n");
}

TEST_F(ElfLink, GcSections) {
  writeFile("main.c", R"(#include <stdio.h>
int used(void) { return 7; }
int unused_function(void) { return 13; }
const char unused_table[4096] = {1};
int main(void) { printf("%d\n", used()); return 0; }
)");
  ASSERT_TRUE(exitedZero(
      run("clang-19 -O0 -ffunction-sections -fdata-sections -c main.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --ld-path={ld} -Wl,--gc-sections "
                       "-Wl,--print-gc-sections main.o -o main",
                       {"main"}));
  RunResult syms = run(tools::nm.path + " main");
  ASSERT_TRUE(exitedZero(syms));
  EXPECT_EQ(syms.out.find("unused_function"), std::string::npos) << syms.out;
  EXPECT_EQ(syms.out.find("unused_table"), std::string::npos) << syms.out;
  EXPECT_NE(syms.out.find("used"), std::string::npos) << syms.out;
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "7\n");
}

TEST_F(ElfLink, LinkerScript) {
  // A table collected into its own output section, bounded by symbols the
  // script defines; the program walks it.
  writeFile("main.c", R"(#include <stdio.h>
struct entry { const char *name; int value; };
#define ENTRY(n, v) \
  __attribute__((used, section(".mytable"))) static const struct entry n = {#n, v}
ENTRY(alpha, 1);
ENTRY(beta, 20);
ENTRY(gamma, 300);
extern const struct entry __table_start[], __table_end[];
int main(void) {
  int sum = 0;
  for (const struct entry *e = __table_start; e < __table_end; ++e)
    sum += e->value;
  printf("%d entries, sum %d\n", (int)(__table_end - __table_start), sum);
  return 0;
}
)");
  writeFile("table.ld", R"(SECTIONS {
  .mytable : ALIGN(16) {
    __table_start = .;
    KEEP(*(.mytable))
    __table_end = .;
  }
} INSERT AFTER .data;
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -c main.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --ld-path={ld} main.o -Wl,-T,table.ld -o main",
                       {"main"}));
  RunResult sections = run(tools::readelf.path + " -S main");
  ASSERT_TRUE(exitedZero(sections));
  EXPECT_NE(sections.out.find(".mytable"), std::string::npos) << sections.out;
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "3 entries, sum 321\n");
}

TEST_F(ElfLink, VersionScript) {
  writeFile("lib.c", R"(int api_v1(int x) { return x + 1; }
int api_v2(int x) { return x * 2; }
int internal_helper(int x) { return x - 1; }
)");
  writeFile("lib.map", R"(LIBDEMO_1 { global: api_v1; local: *; };
LIBDEMO_2 { global: api_v2; } LIBDEMO_1;
)");
  writeFile("main.c", R"(#include <stdio.h>
int api_v1(int); int api_v2(int);
int main(void) { printf("%d %d\n", api_v1(1), api_v2(21)); return 0; }
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c lib.c main.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --ld-path={ld} -shared "
                       "-Wl,--version-script=lib.map lib.o -o libdemo.so",
                       {"libdemo.so"}));
  RunResult dynsyms = run(tools::readelf.path + " --dyn-syms -W libdemo.so");
  ASSERT_TRUE(exitedZero(dynsyms));
  EXPECT_NE(dynsyms.out.find("api_v1@@LIBDEMO_1"), std::string::npos)
      << dynsyms.out;
  EXPECT_NE(dynsyms.out.find("api_v2@@LIBDEMO_2"), std::string::npos)
      << dynsyms.out;
  EXPECT_EQ(dynsyms.out.find("internal_helper"), std::string::npos)
      << dynsyms.out;
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --ld-path={ld} main.o -L. -ldemo "
                       "-Wl,-rpath,'$ORIGIN' -o main",
                       {"main"}));
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "2 42\n");
}

TEST_F(ElfLink, ThinLto) {
  writeFile("a.c", R"(#include <stdio.h>
int square(int);
int main(int argc, char **argv) {
  int s = 0;
  for (int i = 0; i < 10; ++i)
    s += square(i + argc - 1);
  printf("%d\n", s);
  return 0;
}
)");
  writeFile("b.c", "int square(int x) { return x * x; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -flto=thin -c a.c b.c")));
  // Bitcode in, machine code out: the daemon's link child runs the LTO
  // backends (with threads) exactly as stock ld.lld does.
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 -flto=thin -O2 --ld-path={ld} a.o b.o -o main",
                       {"main"}));
  RunResult r = run("./main");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "285\n");
}

TEST_F(ElfLink, OutputModeFollowsTheClientsUmask) {
  writeFile("hello.c", "int main(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c hello.c")));
  for (const char *mask : {"077", "022", "002"}) {
    SCOPED_TRACE(std::string("umask ") + mask);
    ASSERT_TRUE(linkBoth(elfLinkers(),
                         std::string("umask ") + mask +
                             " && clang-19 --ld-path={ld} hello.o -o hello",
                         {"hello"}));
    struct stat mine, stock;
    ASSERT_EQ(stat(path("hello").c_str(), &mine), 0);
    ASSERT_EQ(stat(path("hello.stock").c_str(), &stock), 0);
    EXPECT_EQ(mine.st_mode & 07777, stock.st_mode & 07777);
    ASSERT_EQ(unlink(path("hello.stock").c_str()), 0);
  }
}

TEST_F(ElfLink, ResponseFile) {
  writeFile("a.c", "int a(void) { return 1; }\n");
  writeFile("main.c", "int a(void);\nint main(void) { return a() - 1; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c a.c main.c && mkdir sub")));
  // Response files nest and are read relative to the client's directory.
  writeFile("sub/inner.rsp", "a.o\n");
  writeFile("link.rsp", "main.o @sub/inner.rsp\n-o main\n");
  ASSERT_TRUE(
      linkBoth(elfLinkers(), "clang-19 --ld-path={ld} @link.rsp", {"main"}));
  EXPECT_TRUE(exitedZero(run("./main")));
}

TEST_F(ElfLink, SideOutputsAreWrittenOnEveryLink) {
  // A map file, a dependency file and a reproduce tarball (by option and by
  // LLD_REPRODUCE in the environment) are outputs too; linking the same
  // thing again must write them again, whatever linkd remembers.
  writeFile("hello.c", R"(#include <stdio.h>
int main(void) { puts("side"); return 0; }
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -c hello.c")));
  const std::string link = "clang-19 --ld-path={ld} hello.o -o hello ";
  for (int round = 1; round <= 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    EXPECT_TRUE(linkBoth(elfLinkers(),
                         link + "-Wl,-Map=hello.map "
                                "-Wl,--dependency-file=hello.d",
                         {"hello", "hello.map", "hello.d"}));
    EXPECT_TRUE(linkBoth(elfLinkers(), link + "-Wl,--reproduce=repro.tar",
                         {"hello", "repro.tar"}));
    EXPECT_TRUE(linkBoth(elfLinkers(), "LLD_REPRODUCE=env.tar " + link,
                         {"hello", "env.tar"}));
    EXPECT_TRUE(linkBoth(elfLinkers(), link + "-Wl,--print-map", {"hello"}));
  }
}

} // namespace
} // namespace linkd::e2e
