#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Seed corpus for tests/fuzz/rewrite_fuzzer.cpp and audit_fuzzer.cpp: small
# real inputs of every
# kind the rewriter reads, compiled here (nothing binary is committed).
#
#   tests/fuzz/make_corpus.sh DIR      # DIR is created; existing files kept
#
# Objects for ELF x86-64 / AArch64, COFF MSVC / MinGW (x86-64, ARM64),
# Mach-O arm64 / x86-64, LLVM bitcode; GNU, BSD/Darwin, COFF and thin
# archives; a COFF short import library; and the shapes the rewriter has
# rules for: MATCH-prefixed functions, inline variables, statics of inline
# functions, template statics (COMDAT groups), weak definitions, .symver,
# dllexport (.drectve /EXPORT:), MinGW .refptr, weak externals with defaults.
# AMDGPU (gfx90a, gfx1100): kernel libraries with kernels, managed pairs,
# loader slots and __oclc_ control variables, a linked code object, and
# objects with a malformed metadata note or msgpack document; an i386 COFF
# (MinGW and MSVC) runtime with stdcall/fastcall names; LTO bitcode with
# constructors and destructors; a host object with a .hip_fatbin bundle.
# The sources need no headers, so every target compiles without a sysroot.
#
#   tests/fuzz/make_corpus.sh --kernel DIR   # seeds for kernel_wire_fuzzer.cpp
#                                          # (make_kernel_corpus.sh)
#   tests/fuzz/make_corpus.sh --farm DIR   # seeds for farm_node_fuzzer.cpp
#
# The farm seeds are whole offloaded links in the fuzzer's frame format
# (kind, 16-bit length, payload): an OffloadStart with its facts, the
# uploads the node asks for (plain and zstd), and the link child's
# questions (stat, read, write, rename, chmod, unlink, a path the node must
# ask the client for, then the client's answer). Encoded with protoc.
set -euo pipefail

if [[ ${1:-} == --kernel ]]; then
  exec "$(dirname "$0")/make_kernel_corpus.sh" "${2:?usage: make_corpus.sh --kernel DIR}"
fi
if [[ ${1:-} == --farm ]]; then
  exec "$(dirname "$0")/make_farm_corpus.sh" "${2:?usage: make_corpus.sh --farm DIR}"
fi
out=${1:?usage: make_corpus.sh DIR}
CXX=${CXX_FOR_CORPUS:-clang++-19}
CC=${CC_FOR_CORPUS:-clang-19}
AR=${AR_FOR_CORPUS:-llvm-ar-19}
LIB=${LIB_FOR_CORPUS:-llvm-lib-19}
DLLTOOL=${DLLTOOL_FOR_CORPUS:-llvm-dlltool-19}

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cat > rt.cpp <<'SRC'
namespace rt {
inline int inlineVar = 1;
int state;
inline int &localStatic() { static int s = 3; return s; }
template <class T> struct Tmpl { static T value; };
template <class T> T Tmpl<T>::value = T(7);
__attribute__((weak)) int weakVar = 5;
__attribute__((noinline)) inline int comdatFn(int x) { return x + inlineVar; }
} // namespace rt
extern "C" int halide_log(const char *);
extern "C" int halide_set(int v) {
  rt::state = v;
  rt::localStatic() = v;
  rt::Tmpl<int>::value = v;
  return rt::comdatFn(v) + rt::weakVar;
}
extern "C" int halide_get() { return rt::state + rt::Tmpl<int>::value; }
extern "C" int external_fn(int);
extern "C" int uses_external(int x) { return external_fn(x) + halide_log("x"); }
SRC

cat > kernel.c <<'SRC'
int halide_set(int);
int halide_get(void);
extern int shared_data;
int kernel_entry(int x) { return halide_set(x) + halide_get() + shared_data; }
int main(void) { return kernel_entry(1); }
SRC

cat > elf_extra.c <<'SRC'
__asm__(".symver old_impl, halide_versioned@VER_1");
__asm__(".symver new_impl, halide_versioned@@VER_2");
int old_impl(void) { return 1; }
int new_impl(void) { return 2; }
__attribute__((weak)) int halide_weak_fn(void) { return 3; }
__attribute__((section("halide_meta"))) int meta_entry = 4;
extern char __start_halide_meta[], __stop_halide_meta[];
long meta_size(void) { return __stop_halide_meta - __start_halide_meta; }
int common_var;
SRC

cat > win_extra.c <<'SRC'
__declspec(dllexport) int halide_exported(int x) { return x; }
__declspec(dllimport) int imported_fn(int);
__declspec(dllexport) int exported_data = 9;
__attribute__((weak)) int halide_weak_fn(void) { return 3; }
extern int halide_data;
int use_both(int x) { return imported_fn(x) + halide_data + halide_weak_fn(); }
SRC

cat > gpu.c <<'SRC'
#define EXPORT __attribute__((visibility("protected")))
#define KERNEL __attribute__((amdgpu_kernel, visibility("protected")))
extern const int __oclc_ABI_version;
__attribute__((visibility("hidden"))) const int __oclc_finite_only_opt = 0;
EXPORT int halide_counter_init __asm__("halide_counter.managed") = 5;
EXPORT int *halide_counter;
int halide_state;
EXPORT int gpu_slot_1a2b;
__attribute__((visibility("hidden"))) int rt_private;
__attribute__((noinline)) int halide_helper(int x) {
  return x + halide_state + rt_private + __oclc_ABI_version + __oclc_finite_only_opt;
}
KERNEL void halide_kernel_add(int *p) { *p = halide_helper(*p) + gpu_slot_1a2b; }
KERNEL void halide_kernel_mul(int *p) { *p *= 3 + *halide_counter; }
KERNEL void my_entry(int *p) { *p = 2; ++rt_private; }
SRC

cat > i386.c <<'SRC'
int halide_state;
__attribute__((weak)) int halide_weak_hook(int x) { return x; }
int helper_internal(int x) { return x + 1; }
int __stdcall halide_std(int a, int b) { return a + b + helper_internal(halide_state); }
int __fastcall halide_fast(int a, int b) { return a * b; }
__declspec(dllexport) int halide_exported(int x) { return x + halide_weak_hook(1); }
SRC

cat > ctors.cpp <<'SRC'
struct S { int v; S() : v(42) {} ~S() { v = 0; } };
S halide_s;
static int &local() { static S s; return s.v; }
__attribute__((destructor)) void rt_fini() { halide_s.v = local(); }
__attribute__((constructor)) static void rt_init() { halide_s.v++; }
SRC

obj() { # triple name src extra-flags...
  local triple=$1 name=$2 src=$3
  shift 3
  local cc=$CC
  [[ $src == *.cpp ]] && cc="$CXX -std=c++17"
  $cc --target="$triple" -O1 -fno-exceptions -ffreestanding "$@" \
    -c "$src" -o "$name"
}

for t in x86_64-linux-gnu aarch64-linux-gnu; do
  obj $t rt-$t.o rt.cpp
  obj $t kernel-$t.o kernel.c
  obj $t extra-$t.o elf_extra.c -fcommon
done
obj x86_64-linux-gnu rt-pic-x86_64-linux-gnu.o rt.cpp -fPIC -ffunction-sections -fdata-sections
obj i686-linux-gnu rt-i686-linux-gnu.o rt.cpp
for t in x86_64-pc-windows-msvc aarch64-pc-windows-msvc x86_64-w64-mingw32; do
  obj $t rt-$t.o rt.cpp -fno-threadsafe-statics -fasynchronous-unwind-tables
  obj $t kernel-$t.o kernel.c
  obj $t extra-$t.o win_extra.c
done
obj x86_64-pc-windows-msvc rt-bigobj-x86_64-pc-windows-msvc.o rt.cpp \
  -fno-threadsafe-statics -Wa,-mbig-obj
for t in arm64-apple-macos11 x86_64-apple-macos11; do
  obj $t rt-$t.o rt.cpp -fno-threadsafe-statics
  obj $t kernel-$t.o kernel.c
done
obj x86_64-linux-gnu rt-x86_64.bc rt.cpp -flto
obj x86_64-linux-gnu kernel-x86_64.bc kernel.c -flto
obj x86_64-pc-windows-msvc rt-msvc.bc rt.cpp -flto -fno-threadsafe-statics
obj x86_64-linux-gnu ctors-x86_64.bc ctors.cpp -flto
obj i686-w64-mingw32 i386-mingw.o i386.c
obj i686-pc-windows-msvc i386-msvc.o i386.c
for cpu in gfx90a gfx1100; do
  $CC --target=amdgcn-amd-amdhsa -mcpu=$cpu -nogpulib -O1 -c gpu.c \
    -o amdgpu-$cpu.o
done
${LLD_FOR_CORPUS:-ld.lld-19} -shared amdgpu-gfx90a.o -o amdgpu-gfx90a.hsaco
# The metadata note broken three ways: a descriptor size past the section,
# a byte msgpack never uses, a document whose root is not a map. The note
# header is 20 bytes (sizes, type, "AMDGPU" padded); its msgpack follows.
note=$(llvm-readelf-19 -S amdgpu-gfx90a.o | awk '$2 == ".note" { print $5 }')
patch() { # file offset bytes
  printf "$3" | dd of="$1" bs=1 seek=$(($2)) conv=notrunc status=none
}
cp amdgpu-gfx90a.o amdgpu-bad-descsz.o
patch amdgpu-bad-descsz.o "0x$note + 4" '\xff\xff\xff\x7f'
cp amdgpu-gfx90a.o amdgpu-bad-msgpack.o
patch amdgpu-bad-msgpack.o "0x$note + 20" '\xc1'
cp amdgpu-gfx90a.o amdgpu-array-root.o
patch amdgpu-array-root.o "0x$note + 20" '\x90'
# A HIP host object: device code in .hip_fatbin as a clang offload bundle.
cat > host.s <<'SRC'
.text
.globl halide_host_api
halide_host_api:
  ret
.section .hip_fatbin,"a",@progbits
.ascii "__CLANG_OFFLOAD_BUNDLE__"
.quad 1, 64, 31
.ascii "hipv4-amdgcn-amd-amdhsa--gfx90a"
.p2align 6
.incbin "amdgpu-gfx90a.hsaco"
SRC
$CC -c host.s -o hip-host.o

# Archives in every format the rewriter keeps.
$AR rcs --format=gnu libgnu.a rt-x86_64-linux-gnu.o kernel-x86_64-linux-gnu.o \
  extra-x86_64-linux-gnu.o
$AR rcs --format=gnu libaarch64.a rt-aarch64-linux-gnu.o extra-aarch64-linux-gnu.o
$AR rcs --format=darwin libdarwin.a rt-arm64-apple-macos11.o \
  kernel-arm64-apple-macos11.o
$AR rcs --format=bsd libbsd.a rt-x86_64-apple-macos11.o
$LIB /out:libcoff.lib rt-x86_64-pc-windows-msvc.o extra-x86_64-pc-windows-msvc.o
$AR rcs --format=gnu libmingw.a rt-x86_64-w64-mingw32.o kernel-x86_64-w64-mingw32.o
$AR rcs --format=gnu libbitcode.a rt-x86_64.bc kernel-x86_64.bc
printf 'LIBRARY halide.dll\nEXPORTS\n  halide_set\n  halide_get\n  halide_data DATA\n' > h.def
$DLLTOOL -m i386:x86-64 -d h.def -l libimport.a
# Thin: members are found next to the archive when the fuzzer runs (it
# names its input fuzz-input.o in the current directory), so the thin
# archive refers to a member that is usually missing: an error path.
$AR rcsT libthin.a rt-x86_64-linux-gnu.o

# Linked modules and LLD maps for audit_fuzzer (docs/audit.md): ELF
# executables with the runtime (one stripped), a PE DLL from
# lld-link, a Mach-O dylib, and the maps their links wrote.
LLD=${LLD_FOR_CORPUS:-/usr/lib/llvm-19/bin/ld.lld}
$LLD --unresolved-symbols=ignore-all -e 0 -Map=elf.map \
  rt-x86_64-linux-gnu.o -o audit-elf.so || true
$LLD --unresolved-symbols=ignore-all -e 0 -s rt-aarch64-linux-gnu.o \
  -o audit-elf-stripped.so || true
${LLD%ld.lld}lld-link /dll /noentry /nodefaultlib /lldmap:coff.map \
  rt-x86_64-pc-windows-msvc.o /out:audit-pe.dll 2>/dev/null || true
${LLD%ld.lld}ld64.lld -arch arm64 -platform_version macos 11.0 11.0 -dylib \
  -undefined dynamic_lookup rt-arm64-apple-macos11.o -o audit-macho.dylib \
  2>/dev/null || true

cp ./*.o ./*.bc ./*.a ./*.lib ./*.hsaco ./*.so ./*.dll ./*.dylib ./*.map "$out"/ 2>/dev/null || true
echo "$(ls "$out" | wc -l) files in $out ($(du -sh "$out" | cut -f1))"
