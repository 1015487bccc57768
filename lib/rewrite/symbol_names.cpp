// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Name forms per object format (see symbol_names.h).
#include "rewrite/symbol_names.h"

namespace linkd::rewrite {
namespace {

constexpr std::string_view kImp = "__imp_";
constexpr std::string_view kRefptr = ".refptr.";
constexpr std::string_view kWeak = ".weak.";
constexpr std::string_view kWeakDefault = ".default.";

constexpr std::string_view kAmdgpuSuffixes[] = {".kd", ".managed"};

struct WeakAlias {
  std::string_view name, other;
};

std::optional<WeakAlias> parseWeakAlias(std::string_view raw) {
  if (!raw.starts_with(kWeak))
    return std::nullopt;
  raw.remove_prefix(kWeak.size());
  size_t at = raw.find(kWeakDefault);
  if (at == std::string_view::npos || at == 0)
    return std::nullopt;
  return WeakAlias{raw.substr(0, at), raw.substr(at + kWeakDefault.size())};
}

// The i386 C form of a name: decoration around the C-level base.
struct Decorated {
  std::string_view prefix, base, suffix;
};

bool allDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == s.npos;
}

std::optional<Decorated> parseI386(std::string_view raw) {
  if (raw.size() > 1 && raw.front() == '?')
    return Decorated{{}, raw, {}}; // MSVC C++: the whole name
  size_t at = raw.rfind('@');
  bool sized = at != raw.npos && at > 0 && allDigits(raw.substr(at + 1));
  if (raw.size() > 1 && raw.front() == '@' && sized && at > 1)
    return Decorated{raw.substr(0, 1), raw.substr(1, at - 1), raw.substr(at)};
  if (raw.size() > 1 && raw.front() == '_') {
    if (sized && at > 1)
      return Decorated{raw.substr(0, 1), raw.substr(1, at - 1), raw.substr(at)};
    return Decorated{raw.substr(0, 1), raw.substr(1), {}};
  }
  if (sized && at > 1 && raw[at - 1] == '@' && at > 2)
    return Decorated{{}, raw.substr(0, at - 1), raw.substr(at - 1)};
  return std::nullopt;
}

// `raw` is one name, not a derived form: the base through mapBase.
std::optional<std::string> mapPlain(NameStyle style, std::string_view raw,
                                    const BaseMapper &mapBase) {
  if (style != NameStyle::Coff32)
    return mapBase(raw);
  std::optional<Decorated> d = parseI386(raw);
  if (!d)
    return std::nullopt;
  auto mapped = mapBase(d->base);
  if (!mapped)
    return std::nullopt;
  return std::string(d->prefix) + *mapped + std::string(d->suffix);
}

std::string plainBase(NameStyle style, std::string_view raw) {
  if (style != NameStyle::Coff32)
    return std::string(raw);
  std::optional<Decorated> d = parseI386(raw);
  return d ? std::string(d->base) : std::string();
}

std::optional<std::string> mapCoff(NameStyle style, std::string_view raw,
                                   const BaseMapper &mapBase) {
  if (auto alias = parseWeakAlias(raw)) {
    auto name = mapPlain(style, alias->name, mapBase);
    auto other = alias->other.empty() ? std::nullopt
                                      : mapPlain(style, alias->other, mapBase);
    if (!name && !other)
      return std::nullopt;
    return std::string(kWeak) + name.value_or(std::string(alias->name)) +
           std::string(kWeakDefault) +
           other.value_or(std::string(alias->other));
  }
  for (std::string_view prefix : {kImp, kRefptr})
    if (raw.starts_with(prefix)) {
      auto mapped = mapPlain(style, raw.substr(prefix.size()), mapBase);
      if (!mapped)
        return std::nullopt;
      return std::string(prefix) + *mapped;
    }
  return mapPlain(style, raw, mapBase);
}

std::optional<std::string> mapElf(std::string_view raw,
                                  const BaseMapper &mapBase) {
  size_t at = raw.find('@');
  std::string_view version =
      at == std::string_view::npos ? std::string_view{} : raw.substr(at);
  auto mapped = mapBase(raw.substr(0, at));
  if (!mapped)
    return std::nullopt;
  return *mapped + std::string(version);
}

} // namespace

std::string_view amdgpuBase(std::string_view raw) {
  for (std::string_view suffix : kAmdgpuSuffixes)
    if (raw.size() > suffix.size() && raw.ends_with(suffix))
      return raw.substr(0, raw.size() - suffix.size());
  return raw;
}

const char *styleName(NameStyle style) {
  switch (style) {
  case NameStyle::Elf:
    return "elf";
  case NameStyle::Coff:
    return "coff";
  case NameStyle::MachO:
    return "macho";
  case NameStyle::Ir:
    return "bitcode";
  case NameStyle::IrCoff32:
    return "bitcode-i386-windows";
  case NameStyle::IrAmdgpu:
    return "bitcode-amdgpu";
  case NameStyle::Coff32:
    return "coff-i386";
  case NameStyle::Amdgpu:
    return "amdgpu";
  }
  return "?";
}

NameForm parseName(NameStyle style, std::string_view raw) {
  switch (style) {
  case NameStyle::MachO:
    if (raw.size() > 1 && raw.front() == '_')
      return {std::string(raw.substr(1)), false};
    return {};
  case NameStyle::Elf:
    return {std::string(raw.substr(0, raw.find('@'))), false};
  case NameStyle::Coff:
  case NameStyle::Coff32:
    if (auto alias = parseWeakAlias(raw))
      return {plainBase(style, alias->name), true};
    for (std::string_view prefix : {kImp, kRefptr})
      if (raw.starts_with(prefix))
        return {plainBase(style, raw.substr(prefix.size())), true};
    return {plainBase(style, raw), false};
  case NameStyle::Amdgpu:
    return {std::string(amdgpuBase(raw.substr(0, raw.find('@')))), false};
  case NameStyle::IrCoff32:
    if (raw.starts_with('\1')) // the symbol, decorated (`_f@4`, `@f@4`)
      return parseName(NameStyle::Coff32, raw.substr(1));
    [[fallthrough]];
  case NameStyle::IrAmdgpu:
    if (style == NameStyle::IrAmdgpu && !raw.starts_with('\1') &&
        !isLlvmReservedName(raw))
      return {std::string(amdgpuBase(raw)), false};
    [[fallthrough]];
  case NameStyle::Ir:
    // "\1" marks a name the IR must not mangle: left alone.
    if (raw.starts_with('\1') || isLlvmReservedName(raw))
      return {};
    return {std::string(raw), false};
  }
  return {};
}

std::optional<std::string> mapName(NameStyle style, std::string_view raw,
                                   const BaseMapper &mapBase) {
  if (raw.empty())
    return std::nullopt;
  switch (style) {
  case NameStyle::MachO: {
    if (raw.size() < 2 || raw.front() != '_')
      return std::nullopt;
    auto mapped = mapBase(raw.substr(1));
    if (!mapped)
      return std::nullopt;
    return "_" + *mapped;
  }
  case NameStyle::Elf:
    return mapElf(raw, mapBase);
  case NameStyle::Coff:
  case NameStyle::Coff32:
    return mapCoff(style, raw, mapBase);
  case NameStyle::Amdgpu:
    return mapElf(raw,
                  [&](std::string_view name) -> std::optional<std::string> {
                    std::string_view base = amdgpuBase(name);
                    auto mapped = mapBase(base);
                    if (!mapped)
                      return std::nullopt;
                    return *mapped + std::string(name.substr(base.size()));
                  });
  case NameStyle::IrCoff32:
    if (raw.starts_with('\1')) {
      auto mapped = mapName(NameStyle::Coff32, raw.substr(1), mapBase);
      if (!mapped)
        return std::nullopt;
      return "\1" + *mapped;
    }
    [[fallthrough]];
  case NameStyle::IrAmdgpu:
    if (style == NameStyle::IrAmdgpu && !raw.starts_with('\1') &&
        !isLlvmReservedName(raw)) {
      std::string_view base = amdgpuBase(raw);
      auto mapped = mapBase(base);
      if (!mapped)
        return std::nullopt;
      return *mapped + std::string(raw.substr(base.size()));
    }
    [[fallthrough]];
  case NameStyle::Ir:
    if (raw.starts_with('\1') || isLlvmReservedName(raw))
      return std::nullopt;
    return mapBase(raw);
  }
  return std::nullopt;
}

} // namespace linkd::rewrite
