// `linkd rewrite` on the shapes real runtimes take beyond plain objects:
//  * LTO bitcode with LLVM's special globals (llvm.global_ctors/dtors,
//    llvm.used): three renamed copies of a C++ runtime with dynamic
//    initializers, a destructor function and function-local statics, each
//    copy's constructors and destructors observed running once;
//  * i386 COFF (MinGW i686): leading underscores and stdcall/fastcall
//    decorations;
//  * AMDGPU code objects: the metadata note, kernel descriptors, managed
//    pairs, device-library names, finished code objects and HIP offload
//    bundles (docs/rewrite.md, "AMDGPU").
#include "harness.h"

namespace linkd::e2e {
namespace {

class RewriteRuntimes : public E2eTest {
protected:
  std::string rewriteCmd(const std::string &args) {
    return binPath("linkd") + " rewrite " + args;
  }
  size_t count(const std::string &text, const std::string &needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + 1))
      ++n;
    return n;
  }
};

// --- LTO: constructors and destructors ----------------------------------

constexpr const char *kLtoRuntime = R"(#include <cstdio>
namespace rt {
int registered; // by kernels' own constructors, before or after State()
struct State {
  int value = 0, inits = 0;
  const char *name = "?";
  State() { value = 42; ++inits; std::puts("runtime init"); }
};
State state; // a dynamic initializer
struct Local {
  int hits = 0;
  ~Local() { std::printf("local dtor %s hits %d\n", state.name, hits); }
};
Local &local() { static Local l; return l; } // guard + __cxa_atexit
} // namespace rt
__attribute__((destructor)) void rt_fini() { std::printf("fini %s\n", rt::state.name); }
extern "C" {
void halide_name(const char *n) { rt::state.name = n; }
int halide_value() { return rt::state.value; }
int halide_inits() { return rt::state.inits; }
void halide_register() { ++rt::registered; }
int halide_registered() { return rt::registered; }
int halide_touch() { return ++rt::local().hits; }
}
)";

// A kernel with a constructor of its own: its llvm.global_ctors meets the
// runtime's in one rewrite.
constexpr const char *kLtoKernel = R"(extern "C" void halide_register();
extern "C" int halide_touch();
__attribute__((constructor)) static void kernel_init() { halide_register(); }
extern "C" int KNAME() { return halide_touch(); }
)";

constexpr const char *kLtoMain = R"(#include <cstdio>
#define COPY(P, K) extern "C" { void P##name(const char *); int P##value(); \
  int P##inits(); int P##registered(); int K(); }
COPY(rtA_, kernel_a) COPY(rtB_, kernel_b) COPY(rtC_, kernel_c)
#define RUN(P, K, N) P##name(N); { int k = K(); \
  std::printf("copy %s value %d inits %d registered %d kernel %d\n", N, \
              P##value(), P##inits(), P##registered(), k); }
int main() {
  RUN(rtA_, kernel_a, "A") RUN(rtB_, kernel_b, "B") RUN(rtC_, kernel_c, "C")
  return 0;
}
)";

TEST_F(RewriteRuntimes, LtoConstructorsAndDestructorsRunOncePerCopy) {
  writeFile("runtime.cpp", kLtoRuntime);
  writeFile("kernel.cpp", kLtoKernel);
  writeFile("main.cpp", kLtoMain);
  std::string cxx = "clang++-19 -O1 -flto";
  std::string build = cxx + " -c runtime.cpp -o runtime.o && " + cxx +
                      " -c main.cpp -o main.o";
  for (const char *k : {"a", "b", "c"})
    build += " && " + cxx + " -DKNAME=kernel_" + std::string(k) +
             " -c kernel.cpp -o k_" + k + ".o";
  ASSERT_TRUE(exitedZero(run(build)));
  std::string objects = "main.o";
  for (const char *c : {"A", "B", "C"}) {
    std::string lower(1, char(c[0] - 'A' + 'a'));
    ASSERT_TRUE(exitedZero(run(rewriteCmd(
        "--match halide_ --export-prefix rt" + std::string(c) +
        "_ --internal-prefix rt" + c + "i_ --runtime runtime.o --kernel k_" +
        lower + ".o --out-dir " + c))));
    objects += std::string(" ") + c + "/runtime.o " + c + "/k_" + lower + ".o";
  }
  // LLVM's special globals keep their names; what they list follows.
  RunResult ir = run("llvm-dis-19 A/runtime.o -o - && llvm-dis-19 A/k_a.o -o -");
  ASSERT_TRUE(exitedZero(ir));
  EXPECT_EQ(ir.out.find("rtAi_llvm."), std::string::npos) << ir.out;
  EXPECT_NE(ir.out.find("@llvm.global_ctors = appending"), std::string::npos);
  EXPECT_NE(ir.out.find("@llvm.global_dtors = appending"), std::string::npos);
  EXPECT_NE(ir.out.find("@rtAi__Z7rt_finiv"), std::string::npos) << ir.out;
  // The rewritten bitcode is valid input to the code generator.
  for (const char *f : {"A/runtime.o", "A/k_a.o"})
    EXPECT_TRUE(exitedZero(run(std::string("clang-19 -c -x ir ") + f +
                               " -o native.o")));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang++-19 -flto --ld-path={ld} " + objects +
                           " -o prog",
                       {"prog"}));
  RunResult r = run("./prog");
  ASSERT_EQ(r.exitCode, 0) << describe(r);
  EXPECT_EQ(count(r.out, "runtime init\n"), 3u) << r.out;
  for (const char *c : {"A", "B", "C"}) {
    std::string n(c);
    EXPECT_EQ(count(r.out, "copy " + n +
                               " value 42 inits 1 registered 1 kernel 1\n"),
              1u)
        << r.out;
    EXPECT_EQ(count(r.out, "\nfini " + n + "\n"), 1u) << r.out;
    EXPECT_EQ(count(r.out, "local dtor " + n + " hits 1\n"), 1u) << r.out;
  }
}

} // namespace
} // namespace linkd::e2e
