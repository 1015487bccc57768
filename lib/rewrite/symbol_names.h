// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The forms a C-level name takes in an object file's symbol table, and how
// a rename of the C-level name carries over to each of them:
//   Mach-O     `_NAME` (the leading underscore stays in front)
//   ELF        `NAME@VER`, `NAME@@VER` (.symver in relocatable objects)
//   COFF       `__imp_NAME` (dllimport), `.refptr.NAME` (MinGW select-any
//              pointer COMDAT), `.weak.NAME.default.OTHER` (the default of a
//              MinGW/LLVM weak external; both names follow)
//   COFF i386  the same forms around the i386 C form of NAME: `_NAME`
//              (cdecl), `_NAME@N` (stdcall), `@NAME@N` (fastcall),
//              `NAME@@N` (vectorcall); the decoration stays on the new name.
//              MSVC C++ names (`?...`) are taken whole, as on x86-64; any
//              other name is not a C-level name and is never renamed.
//   AMDGPU     ELF forms, and `NAME.kd` (a kernel's descriptor) and
//              `NAME.managed` (a HIP managed variable's initial value): the
//              suffix stays, so the pair is always renamed together.
// A derived form (`__imp_`, `.refptr.`, `.weak.`) never defines NAME itself.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace linkd::rewrite {

// IrCoff32: bitcode for i386 Windows, where clang spells stdcall and
// fastcall names as "\1" + the decorated symbol (`\1_f@8`, `\1@f@8`).
// IrAmdgpu: bitcode for AMDGPU, where `X.managed` pairs with `X`.
enum class NameStyle {
  Elf,
  Coff,
  MachO,
  Ir,
  Coff32,
  Amdgpu,
  IrCoff32,
  IrAmdgpu
};

const char *styleName(NameStyle style);

struct NameForm {
  // The C-level name a rename applies to; empty when the raw name is not
  // one (a Mach-O name without the underscore, an assembler temporary).
  std::string base;
  // True for the derived COFF forms: they reference NAME, never define it.
  bool derived = false;
};

NameForm parseName(NameStyle style, std::string_view raw);

// An AMDGPU name without its `.kd` / `.managed` suffix.
std::string_view amdgpuBase(std::string_view raw);

// Names the AMDGPU device libraries and the HIP runtime define or read by
// name (`__oclc_ABI_version`, `__ockl_*`, `__ocml_*`, `__hip_cuid_*`): no
// rule renames them, and an explicit rename of one is refused.
inline bool isDeviceAbiName(std::string_view base) {
  for (std::string_view p :
       {"__oclc_", "__ockl_", "__ocml_", "__irif_", "__hip_cuid_"})
    if (base.starts_with(p))
      return true;
  return false;
}

// True for IR names LLVM reserves (`llvm.global_ctors`, `llvm.used`,
// intrinsics): never renamed, never a definition.
inline bool isLlvmReservedName(std::string_view raw) {
  return raw.starts_with("llvm.");
}

// Maps the C-level name(s) inside `raw` through `mapBase` and reassembles
// the raw form. nullopt when nothing in it is renamed.
using BaseMapper =
    std::function<std::optional<std::string>(std::string_view base)>;
std::optional<std::string> mapName(NameStyle style, std::string_view raw,
                                   const BaseMapper &mapBase);

} // namespace linkd::rewrite
