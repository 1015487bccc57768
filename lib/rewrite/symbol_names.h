// The forms a C-level name takes in an object file's symbol table, and how
// a rename of the C-level name carries over to each of them:
//   Mach-O     `_NAME` (the leading underscore stays in front)
//   ELF        `NAME@VER`, `NAME@@VER` (.symver in relocatable objects)
//   COFF       `__imp_NAME` (dllimport), `.refptr.NAME` (MinGW select-any
//              pointer COMDAT), `.weak.NAME.default.OTHER` (the default of a
//              MinGW/LLVM weak external; both names follow)
// A derived form (`__imp_`, `.refptr.`, `.weak.`) never defines NAME itself.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace linkd::rewrite {

enum class NameStyle { Elf, Coff, MachO, Ir };

const char *styleName(NameStyle style);

struct NameForm {
  // The C-level name a rename applies to; empty when the raw name is not
  // one (a Mach-O name without the underscore, an assembler temporary).
  std::string base;
  // True for the derived COFF forms: they reference NAME, never define it.
  bool derived = false;
};

NameForm parseName(NameStyle style, std::string_view raw);

// Maps the C-level name(s) inside `raw` through `mapBase` and reassembles
// the raw form. nullopt when nothing in it is renamed.
using BaseMapper =
    std::function<std::optional<std::string>(std::string_view base)>;
std::optional<std::string> mapName(NameStyle style, std::string_view raw,
                                   const BaseMapper &mapBase);

} // namespace linkd::rewrite
