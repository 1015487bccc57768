// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

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

#include <algorithm>
#include <cstring>
#include <iostream>
#include <regex>
#include <sstream>

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
  std::string build =
      cxx + " -c runtime.cpp -o runtime.o && " + cxx + " -c main.cpp -o main.o";
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
  RunResult ir =
      run("llvm-dis-19 A/runtime.o -o - && llvm-dis-19 A/k_a.o -o -");
  ASSERT_TRUE(exitedZero(ir));
  EXPECT_EQ(ir.out.find("rtAi_llvm."), std::string::npos) << ir.out;
  EXPECT_NE(ir.out.find("@llvm.global_ctors = appending"), std::string::npos);
  EXPECT_NE(ir.out.find("@llvm.global_dtors = appending"), std::string::npos);
  EXPECT_NE(ir.out.find("@rtAi__Z7rt_finiv"), std::string::npos) << ir.out;
  // The rewritten bitcode is valid input to the code generator.
  for (const char *f : {"A/runtime.o", "A/k_a.o"})
    EXPECT_TRUE(exitedZero(
        run(std::string("clang-19 -c -x ir ") + f + " -o native.o")));
  ASSERT_TRUE(linkBoth(
      elfLinkers(), "clang++-19 -flto --ld-path={ld} " + objects + " -o prog",
      {"prog"}));
  RunResult r = run("./prog");
  ASSERT_EQ(r.exitCode, 0) << describe(r);
  EXPECT_EQ(count(r.out, "runtime init\n"), 3u) << r.out;
  for (const char *c : {"A", "B", "C"}) {
    std::string n(c);
    EXPECT_EQ(
        count(r.out, "copy " + n + " value 42 inits 1 registered 1 kernel 1\n"),
        1u)
        << r.out;
    EXPECT_EQ(count(r.out, "\nfini " + n + "\n"), 1u) << r.out;
    EXPECT_EQ(count(r.out, "local dtor " + n + " hits 1\n"), 1u) << r.out;
  }
}

// --- i386 COFF: leading underscores and call decorations -------------------

constexpr const char *kI386Runtime = R"(int halide_state;
static int calls;
__attribute__((weak)) int halide_weak_hook(int x) { return x; }
int helper_internal(int x) { return x + (++calls) - calls; }
int __stdcall halide_std(int a, int b) { return a + b + helper_internal(halide_state); }
int __fastcall halide_fast(int a, int b) { return a * b + halide_state; }
__declspec(dllexport) int halide_exported(int x) { return x + 1; }
void halide_set(int v) { halide_state = v; }
int halide_get(void) { return halide_state + halide_weak_hook(0); }
)";

constexpr const char *kI386Kernel = R"(int __stdcall halide_std(int, int);
int halide_get(void);
int KNAME(int x) { return halide_std(x, 1) + halide_get(); }
)";

constexpr const char *kI386Main = R"(#include <stdio.h>
#define API(P) void P##set(int); int P##get(void); \
  int __stdcall P##std(int, int); int __fastcall P##fast(int, int); \
  int P##exported(int);
API(rtA_) API(rtB_)
int kernel_a(int); int kernel_b(int);
int main(void) {
  int f = 0;
  rtA_set(20); rtB_set(30);
  f += rtA_get() != 20; f += rtB_get() != 30;
  f += rtA_std(1, 2) != 43; f += rtB_std(1, 2) != 63;
  f += rtA_fast(2, 3) != 26; f += rtB_fast(2, 3) != 36;
  f += rtA_exported(1) != 2;
  f += kernel_a(1) != 62; f += kernel_b(1) != 92;
  printf(f ? "leaks %d\n" : "isolated\n", f);
  return f;
}
)";

TEST_F(RewriteRuntimes, MingwI686NamesKeepUnderscoreAndDecorations) {
  ASSERT_TRUE(haveFile("/usr/i686-w64-mingw32/lib/libkernel32.a",
                       "mingw-w64-i686-dev"));
  writeFile("runtime.c", kI386Runtime);
  writeFile("kernel.c", kI386Kernel);
  writeFile("main.c", kI386Main);
  std::string cc = "clang-19 --target=i686-w64-mingw32 -O1";
  ASSERT_TRUE(exitedZero(run(cc + " -c runtime.c && " + cc + " -c main.c && " +
                             cc + " -DKNAME=kernel_a -c kernel.c -o k_a.o && " +
                             cc + " -DKNAME=kernel_b -c kernel.c -o k_b.o")));
  for (const char *c : {"A", "B"}) {
    std::string lower(1, char(c[0] - 'A' + 'a'));
    ASSERT_TRUE(exitedZero(run(rewriteCmd(
        "--match halide_ --export-prefix rt" + std::string(c) +
        "_ --internal-prefix rt" + c + "i_ --runtime runtime.o --kernel k_" +
        lower + ".o --out-dir " + c))));
  }
  RunResult nm = run(tools::nm.path + " A/runtime.o A/k_a.o");
  ASSERT_TRUE(exitedZero(nm));
  for (const char *name :
       {" _rtA_set\n", " _rtA_state\n", " _rtA_std@8\n", " @rtA_fast@8\n",
        " _rtA_exported\n", " _rtAi_helper_internal\n", " _rtA_weak_hook\n",
        " .weak._rtA_weak_hook.default._rtAi_helper_internal\n"})
    EXPECT_NE(nm.out.find(name), std::string::npos) << name << nm.out;
  EXPECT_EQ(nm.out.find("halide"), std::string::npos) << nm.out;
  EXPECT_EQ(nm.out.find("rtAi__"), std::string::npos) << nm.out;
  // The kernel's call sites reference the renamed, still decorated names.
  RunResult refs = run(tools::objdump.path + " -dr A/k_a.o");
  ASSERT_TRUE(exitedZero(refs));
  EXPECT_NE(refs.out.find("IMAGE_REL_I386_REL32\t_rtA_std@8"),
            std::string::npos)
      << refs.out;
  EXPECT_NE(refs.out.find("IMAGE_REL_I386_REL32\t_rtA_get"), std::string::npos)
      << refs.out;
  // MinGW spells the export directive without the underscore.
  RunResult dir = run("llvm-readobj-19 --coff-directives A/runtime.o");
  EXPECT_NE(dir.out.find("-export:rtA_exported"), std::string::npos) << dir.out;
  // LTO: clang spells stdcall/fastcall names in the IR as "\1_f@8".
  ASSERT_TRUE(exitedZero(
      run("mkdir -p lto && " + cc + " -flto -c runtime.c -o lto/runtime.o")));
  ASSERT_TRUE(exitedZero(run(
      rewriteCmd("--match halide_ --export-prefix rtA_ --internal-prefix rtAi_ "
                 "--runtime lto/runtime.o --out-dir ltoA"))));
  RunResult bc = run(tools::nm.path + " ltoA/runtime.o");
  ASSERT_TRUE(exitedZero(bc));
  for (const char *name : {" _rtA_std@8\n", " @rtA_fast@8\n", " _rtA_set\n",
                           " _rtAi_helper_internal\n"})
    EXPECT_NE(bc.out.find(name), std::string::npos) << name << bc.out;
  EXPECT_EQ(bc.out.find("halide"), std::string::npos) << bc.out;
  ASSERT_TRUE(exitedZero(run(cc + " -fuse-ld=lld main.o ltoA/runtime.o "
                                  "A/k_a.o B/runtime.o B/k_b.o -o lto.exe")));

  std::string objects = "main.o A/runtime.o A/k_a.o B/runtime.o B/k_b.o";
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --target=i686-w64-mingw32 --ld-path={ld} "
                       "-Wl,--no-insert-timestamp " +
                           objects + " -o prog.exe",
                       {"prog.exe"}));
  // Wine runs 32-bit programs only with Debian's wine32 (multiarch).
  writeFile("probe.c", "int main(void) { return 7; }\n");
  ASSERT_TRUE(exitedZero(run(cc + " -fuse-ld=lld probe.c -o probe.exe")));
  RunResult imports = run(tools::objdump.path + " -p prog.exe");
  EXPECT_NE(imports.out.find("rtA_exported"), std::string::npos) << imports.out;
  if (!haveTool(tools::wine) || run(wine("./probe.exe"), 120s).exitCode != 7)
    GTEST_SKIP() << "wine cannot run i686 programs here (Debian's wine32 needs "
                    "multiarch): the names, references and exports above are "
                    "checked, the program is not run";
  RunResult r = run(wine("./prog.exe"), 180s);
  EXPECT_EQ(r.exitCode, 0) << describe(r);
  EXPECT_NE(r.out.find("isolated"), std::string::npos) << describe(r);
}

// --- AMDGPU code objects ----------------------------------------------------

// A kernel library: kernels under the MATCH prefix, two entry points outside
// it, HIP-style managed pairs (exported and hidden), loader slots, device
// library control variables.
constexpr const char *kGpuLibrary =
    R"(#define EXPORT __attribute__((visibility("protected")))
#define KERNEL __attribute__((amdgpu_kernel, visibility("protected")))
extern const int __oclc_ABI_version;
__attribute__((visibility("hidden"))) const int __oclc_finite_only_opt = 0;
EXPORT int halide_counter_init __asm__("halide_counter.managed") = 5;
EXPORT int *halide_counter;
__attribute__((visibility("hidden"))) int rt_hidden_init __asm__("rt_hidden.managed") = 6;
__attribute__((visibility("hidden"))) int *rt_hidden;
int halide_state;
EXPORT int gpu_slot_1a2b;
EXPORT int gpu_malloc_box;
__attribute__((visibility("hidden"))) int rt_private_counter;
__attribute__((noinline)) int halide_helper(int x) {
  return x + halide_state + rt_private_counter + __oclc_ABI_version +
         __oclc_finite_only_opt + *rt_hidden;
}
KERNEL void halide_kernel_add(int *p) { *p = halide_helper(*p) + gpu_slot_1a2b + gpu_malloc_box; }
KERNEL void halide_kernel_mul(int *p) { *p *= 3 + *halide_counter; }
KERNEL void my_entry(int *p) { *p = 2; ++rt_private_counter; }
KERNEL void other_entry(int *p) { *p = 4; }
)";

// The kernels' metadata names (.name, .symbol), in order.
std::vector<std::pair<std::string, std::string>>
kernelNames(const std::string &notes) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(notes);
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&](const char *key) -> std::optional<std::string> {
      size_t at = line.find(key);
      if (at == std::string::npos || line.find_first_not_of(' ') != at)
        return std::nullopt;
      std::string v = line.substr(at + std::strlen(key));
      return v.substr(v.find_first_not_of(' '));
    };
    if (auto name = value(".name:"); name && line.find("    .name:") == 0)
      out.push_back({*name, ""});
    else if (auto symbol = value(".symbol:"); symbol && !out.empty())
      out.back().second = *symbol;
  }
  return out;
}

class RewriteAmdgpu : public RewriteRuntimes,
                      public ::testing::WithParamInterface<const char *> {
protected:
  std::string compileGpu(const std::string &src, const std::string &obj) {
    return "clang-19 --target=amdgcn-amd-amdhsa -mcpu=" +
           std::string(GetParam()) + " -nogpulib -O1 -c " + src + " -o " + obj;
  }
  // Every kernel's metadata .name/.symbol is a defined pair in .dynsym, the
  // entry points are as the spec says, nothing under the old prefix is left
  // in `hsaco` or in the rewritten input `input`.
  void expectConsistentCodeObject(const std::string &hsaco,
                                  const std::string &input) {
    RunResult elf = run(tools::readelf.path + " --notes --dyn-syms " + hsaco);
    ASSERT_TRUE(exitedZero(elf));
    std::vector<std::string> names;
    for (const auto &[name, symbol] : kernelNames(elf.out)) {
      names.push_back(name);
      EXPECT_EQ(symbol, name + ".kd");
      // Defined (a section index, not UND) in .dynsym, with its entry.
      EXPECT_TRUE(std::regex_search(
          elf.out,
          std::regex("OBJECT +GLOBAL +PROTECTED +[0-9]+ " + symbol + "\n")))
          << symbol << elf.out;
      EXPECT_TRUE(std::regex_search(
          elf.out,
          std::regex("FUNC +GLOBAL +PROTECTED +[0-9]+ " + name + "\n")))
          << name << elf.out;
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"my_entry", "rtA_kernel_add",
                                               "rtA_kernel_mul", "rtA_other"}));
    for (const char *exported : {" rtA_counter\n", " rtA_counter.managed\n",
                                 " rtA_slot_1a2b\n", " gpu_malloc_box\n"})
      EXPECT_NE(elf.out.find(exported), std::string::npos)
          << exported << elf.out;
    RunResult syms = run(tools::nm.path + " " + input);
    ASSERT_TRUE(exitedZero(syms));
    for (const char *kept :
         {" __oclc_ABI_version\n", " __oclc_finite_only_opt\n",
          " rtAi_rt_hidden\n", " rtAi_rt_hidden.managed\n",
          " rtAi_rt_private_counter\n", " rtA_state\n", " my_entry\n"})
      EXPECT_NE(syms.out.find(kept), std::string::npos) << kept << syms.out;
    EXPECT_EQ((elf.out + syms.out).find("halide_"), std::string::npos)
        << elf.out << syms.out;
  }

  static constexpr const char *kSpec =
      "--match halide_ --export-prefix rtA_ --internal-prefix rtAi_ "
      "--rename gpu_slot_1a2b=rtA_slot_1a2b --rename other_entry=rtA_other ";
};

TEST_P(RewriteAmdgpu, KernelLibraryLinksWithConsistentMetadata) {
  writeFile("lib.c", kGpuLibrary);
  ASSERT_TRUE(exitedZero(run(compileGpu("lib.c", "lib.o"))));
  RunResult dry = run(rewriteCmd(
      std::string(kSpec) + "--runtime lib.o --dry-run --table-out t.json"));
  ASSERT_TRUE(exitedZero(dry));
  for (const char *line :
       {"halide_kernel_add.kd\trtA_kernel_add.kd\truntime\tlib.o\t"
        "descriptor of kernel halide_kernel_add\n",
        "halide_kernel_add\trtA_kernel_add\truntime\tlib.o\t"
        "kernel entry point, with halide_kernel_add.kd\n",
        "halide_counter.managed\trtA_counter.managed\truntime\tlib.o\t"
        "managed value of halide_counter\n",
        "rt_hidden.managed\trtAi_rt_hidden.managed\truntime\tlib.o\t"
        "managed value of rt_hidden\n",
        "halide_kernel_mul.kd\trtA_kernel_mul.kd\truntime\tlib.o\t"
        "NT_AMDGPU_METADATA .symbol\n",
        "gpu_slot_1a2b\trtA_slot_1a2b\truntime\tlib.o\t"
        "loader slot (explicit rename)\n"})
    EXPECT_NE(dry.out.find(line), std::string::npos) << line << dry.out;
  EXPECT_EQ(dry.out.find("my_entry"), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("__oclc"), std::string::npos) << dry.out;
  EXPECT_EQ(dry.out.find("gpu_malloc_box"), std::string::npos) << dry.out;
  EXPECT_NE(readFile("t.json").find(
                R"({"old": "halide_kernel_add", "new": "rtA_kernel_add", )"
                R"("scope": "runtime", "file": "lib.o", )"),
            std::string::npos)
      << readFile("t.json");

  ASSERT_TRUE(exitedZero(
      run(rewriteCmd(std::string(kSpec) + "--runtime lib.o --out-dir A "
                                          "--table-out A/table.json"))));
  EXPECT_TRUE(exists("A/table.json"));
  // Through the daemon the table is an output like the objects: a repeated
  // run (a cache hit) writes it again.
  std::string table = readFile("A/table.json");
  ASSERT_TRUE(exitedZero(
      run("rm A/table.json A/lib.o && " +
          rewriteCmd(std::string(kSpec) + "--runtime lib.o --out-dir A "
                                          "--table-out A/table.json"))));
  EXPECT_EQ(readFile("A/table.json"), table);
  ASSERT_TRUE(
      exitedZero(run(tools::ldLld.path + " -shared A/lib.o -o A/lib.hsaco")));
  expectConsistentCodeObject("A/lib.hsaco", "A/lib.o");
}

// The same library as LTO bitcode: kernels known by calling convention,
// descriptors and the metadata note made by the link's code generator.
TEST_P(RewriteAmdgpu, LtoKernelLibraryLinksWithConsistentMetadata) {
  writeFile("lib.c", kGpuLibrary);
  ASSERT_TRUE(exitedZero(run(compileGpu("lib.c", "lib.o") + " -flto")));
  ASSERT_TRUE(exitedZero(
      run(rewriteCmd(std::string(kSpec) + "--runtime lib.o --out-dir A"))));
  ASSERT_TRUE(exitedZero(run(tools::ldLld.path + " -shared -plugin-opt=mcpu=" +
                             GetParam() + " A/lib.o -o A/lib.hsaco")));
  expectConsistentCodeObject("A/lib.hsaco", "A/lib.o");
}

TEST_P(RewriteAmdgpu, DeviceLibraryNamesAreNeverRenamed) {
  writeFile("lib.c", kGpuLibrary);
  ASSERT_TRUE(exitedZero(run(compileGpu("lib.c", "lib.o"))));
  RunResult r = run(rewriteCmd("--rename __oclc_ABI_version=x "
                               "--runtime lib.o --out-dir A"));
  EXPECT_NE(r.exitCode, 0) << describe(r);
  EXPECT_NE(r.err.find("never renamed"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists("A/lib.o"));
}

// Finished code objects and offload bundles are refused (docs/rewrite.md).
TEST_P(RewriteAmdgpu, CodeObjectsAndOffloadBundlesAreRefused) {
  writeFile("lib.c", kGpuLibrary);
  ASSERT_TRUE(
      exitedZero(run(compileGpu("lib.c", "lib.o") + " && " + tools::ldLld.path +
                     " -shared lib.o -o lib.hsaco")));
  RunResult hsaco =
      run(rewriteCmd(std::string(kSpec) + "--runtime lib.hsaco --out-dir A"));
  EXPECT_EQ(hsaco.exitCode, 1) << describe(hsaco);
  EXPECT_NE(hsaco.err.find("lib.hsaco: is a finished AMDGPU code object "
                           "(ET_DYN): its section .dynsym"),
            std::string::npos)
      << describe(hsaco);
  EXPECT_NE(hsaco.err.find("link them again with ld.lld -shared"),
            std::string::npos)
      << describe(hsaco);
  // A HIP host object: the bundle clang puts in .hip_fatbin, plain and
  // compressed, next to host code the rewrite would otherwise rename.
  for (const char *magic : {"__CLANG_OFFLOAD_BUNDLE__", "CCOB"}) {
    writeFile("host.s", std::string(R"(.text
.globl halide_host_api
halide_host_api:
  ret
.section .hip_fatbin,"a",@progbits
.p2align 12
__hip_fatbin:
.ascii ")") + magic + R"("
.quad 1, 64, 31
.ascii "hipv4-amdgcn-amd-amdhsa--gfx90a"
.p2align 6
.incbin "lib.hsaco"
.section .rodata.str1.1,"aMS",@progbits,1
.asciz "halide_kernel_add"
)");
    ASSERT_TRUE(exitedZero(run("clang-19 -c host.s -o host.o")));
    RunResult host =
        run(rewriteCmd(std::string(kSpec) + "--runtime host.o --out-dir H"));
    EXPECT_EQ(host.exitCode, 1) << describe(host);
    EXPECT_NE(host.err.find("host.o: section .hip_fatbin holds a " +
                            std::string(magic[0] == 'C' ? "compressed " : "") +
                            "clang offload bundle"),
              std::string::npos)
        << describe(host);
    EXPECT_NE(host.err.find("Rewrite the device code before it is bundled"),
              std::string::npos)
        << describe(host);
    EXPECT_FALSE(exists("H/host.o"));
  }
}

// Malformed metadata notes are refused naming the file and the section.
// The first case is a fuzzer finding: MsgPackDocument orders map keys with
// an operator< that hits llvm_unreachable for two keys that are maps
// (SIGILL in linkd-lld, and in llvm-readelf-19 --notes too).
TEST_F(RewriteRuntimes, AmdgpuMalformedMetadataIsRefused) {
  struct Case {
    const char *descsz, *bytes, *message;
  };
  const Case cases[] = {
      {"5", "0x82, 0x80, 0x01, 0x80, 0x02",
       "section .note: a msgpack map key in NT_AMDGPU_METADATA is not a "
       "scalar"},
      {"0x7fffffff", "0x80", "section .note: a note runs past the section"},
      {"1", "0x90", "section .note: the AMDGPU metadata is not a msgpack map"},
      {"3", "0x81, 0xa1", "NT_AMDGPU_METADATA ends inside its msgpack"},
      {"3", "0x81, 0xae, 0x61",
       "NT_AMDGPU_METADATA is not a valid msgpack document"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.bytes);
    writeFile("bad.s", std::string(R"(.text
.globl halide_fn
.type halide_fn,@function
halide_fn:
  s_endpgm
.section .note,"a",@note
.p2align 2
.long 7
.long )") + c.descsz + R"(
.long 32
.asciz "AMDGPU"
.p2align 2
.byte )" + c.bytes + R"(
.p2align 2
)");
    ASSERT_TRUE(exitedZero(run("clang-19 --target=amdgcn-amd-amdhsa "
                               "-mcpu=gfx90a -c bad.s -o bad.o")));
    RunResult r = run(rewriteCmd("--match halide_ --export-prefix rtA_ "
                                 "--runtime bad.o --out-dir out"));
    EXPECT_EQ(r.exitCode, 1) << describe(r);
    EXPECT_NE(r.err.find("bad.o: "), std::string::npos) << describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << describe(r);
    EXPECT_FALSE(exists("out/bad.o"));
  }
}

// Loader slots --match selects stay as they are (explicit renames only):
// --dry-run and --table-out list them, a weak one draws a warning (copies
// rewritten with other prefixes share it in one code object), and a link
// with two specs whose copies would merge one says so, on every run.
TEST_P(RewriteAmdgpu, MatchedSlotsLeftAloneAreReportedAndMergesWarned) {
  writeFile("slots.c", R"(#define SLOT __attribute__((visibility("protected")))
#define KERNEL __attribute__((amdgpu_kernel, visibility("protected")))
__attribute__((weak)) SLOT int halide_weak_slot = 1;
SLOT int halide_slot;
KERNEL void halide_kernel_w(int *p) { *p = halide_weak_slot + halide_slot; }
)");
  ASSERT_TRUE(exitedZero(run(compileGpu("slots.c", "slots.o"))));
  RunResult dry =
      run(rewriteCmd("--match halide_ --export-prefix rtA_ --runtime slots.o "
                     "--dry-run --table-out t.json"));
  ASSERT_TRUE(exitedZero(dry));
  EXPECT_NE(dry.out.find("halide_weak_slot\thalide_weak_slot\truntime\t"
                         "slots.o\tleft alone: a weak loader slot matched by "
                         "--match (explicit --rename only); rewritten copies "
                         "linked into one code object share it\n"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("halide_slot\thalide_slot\truntime\tslots.o\tleft "
                         "alone: a loader slot matched by --match (explicit "
                         "--rename only)\n"),
            std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("halide_kernel_w\trtA_kernel_w\t"), std::string::npos);
  EXPECT_NE(dry.err.find("linkd: warning: slots.o: halide_weak_slot matches "
                         "--match but is a weak loader slot, left alone"),
            std::string::npos)
      << dry.err;
  EXPECT_EQ(dry.err.find("halide_slot "), std::string::npos) << dry.err;
  std::string json = readFile("t.json");
  EXPECT_NE(json.find(R"("left_alone": [)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"({"name": "halide_weak_slot", "scope": "runtime", )"
                      R"("file": "slots.o", "weak": true, )"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"({"name": "halide_slot", "scope": "runtime", )"
                      R"("file": "slots.o", "weak": false, )"),
            std::string::npos)
      << json;

  // Two copies of a runtime with only the weak slot, namespaced by two
  // specs into one code object: LLD keeps one halide_weak_slot, silently.
  writeFile(
      "weak.c",
      R"(#define KERNEL __attribute__((amdgpu_kernel, visibility("protected")))
__attribute__((weak, visibility("protected"))) int halide_weak_slot = 1;
KERNEL void halide_kernel_w(int *p) { *p = halide_weak_slot; }
)");
  ASSERT_TRUE(
      exitedZero(run(compileGpu("weak.c", "rt_a.o") + " && cp rt_a.o rt_b.o")));
  writeFile("a.spec",
            "match = halide_\nexport-prefix = rtA_\nruntime = rt_a.o\n");
  writeFile("b.spec",
            "match = halide_\nexport-prefix = rtB_\nruntime = rt_b.o\n");
  ASSERT_TRUE(exitedZero(
      run(rewriteCmd("--match halide_ --export-prefix rtA_ --runtime rt_a.o "
                     "--out-dir A") +
          " && " +
          rewriteCmd("--match halide_ --export-prefix rtB_ --runtime rt_b.o "
                     "--out-dir B") +
          " && " + tools::ldLld.path +
          " -shared A/rt_a.o B/rt_b.o -o stock.hsaco")));
  std::string link = binPath("ld.linkd") +
                     " -shared --linkd-rewrite=a.spec --linkd-rewrite=b.spec "
                     "rt_a.o rt_b.o -o both.hsaco";
  const std::string warning =
      "linkd: warning: link-time rewriting: halide_weak_slot is a loader slot "
      "that two rewrite specs leave alone (";
  for (int i = 0; i < 2; ++i) { // a miss, then a hit that replays it
    RunResult r = run("rm -f both.hsaco && " + link);
    ASSERT_TRUE(exitedZero(r));
    EXPECT_NE(r.err.find(warning), std::string::npos) << i << r.err;
    EXPECT_TRUE(sameBytes("stock.hsaco", "both.hsaco"));
  }
  EXPECT_EQ(cacheStats()["hits"], 1);
  RunResult local = run("rm both.hsaco && LINKD_DISABLE=1 " + link);
  ASSERT_TRUE(exitedZero(local));
  EXPECT_NE(local.err.find(warning), std::string::npos) << local.err;
  EXPECT_TRUE(sameBytes("stock.hsaco", "both.hsaco"));
  // An explicit rename in one spec gives each copy its own: no warning.
  writeFile("b.spec",
            "match = halide_\nexport-prefix = rtB_\nruntime = rt_b.o\n"
            "rename = halide_weak_slot=rtB_weak_slot\n");
  RunResult renamed = run("rm both.hsaco && " + link);
  ASSERT_TRUE(exitedZero(renamed));
  EXPECT_EQ(renamed.err.find("linkd: warning"), std::string::npos)
      << renamed.err;
  EXPECT_NE(run(tools::nm.path + " both.hsaco").out.find(" rtB_weak_slot\n"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Targets, RewriteAmdgpu,
                         ::testing::Values("gfx90a", "gfx1100"));

} // namespace
} // namespace linkd::e2e
