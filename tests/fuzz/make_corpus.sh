#!/usr/bin/env bash
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
# The sources need no headers, so every target compiles without a sysroot.
set -euo pipefail

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

cp ./*.o ./*.bc ./*.a ./*.lib ./*.so ./*.dll ./*.dylib ./*.map "$out"/ 2>/dev/null || true
echo "$(ls "$out" | wc -l) files in $out ($(du -sh "$out" | cut -f1))"
