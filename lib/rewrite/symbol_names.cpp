// Name forms per object format (see symbol_names.h).
#include "rewrite/symbol_names.h"

namespace linkd::rewrite {
namespace {

constexpr std::string_view kImp = "__imp_";
constexpr std::string_view kRefptr = ".refptr.";
constexpr std::string_view kWeak = ".weak.";
constexpr std::string_view kWeakDefault = ".default.";

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

std::optional<std::string> mapCoff(std::string_view raw,
                                   const BaseMapper &mapBase) {
  if (auto alias = parseWeakAlias(raw)) {
    auto name = mapBase(alias->name);
    auto other = alias->other.empty() ? std::nullopt : mapBase(alias->other);
    if (!name && !other)
      return std::nullopt;
    return std::string(kWeak) + name.value_or(std::string(alias->name)) +
           std::string(kWeakDefault) +
           other.value_or(std::string(alias->other));
  }
  for (std::string_view prefix : {kImp, kRefptr})
    if (raw.starts_with(prefix)) {
      auto mapped = mapBase(raw.substr(prefix.size()));
      if (!mapped)
        return std::nullopt;
      return std::string(prefix) + *mapped;
    }
  return mapBase(raw);
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
    if (auto alias = parseWeakAlias(raw))
      return {std::string(alias->name), true};
    for (std::string_view prefix : {kImp, kRefptr})
      if (raw.starts_with(prefix))
        return {std::string(raw.substr(prefix.size())), true};
    return {std::string(raw), false};
  case NameStyle::Ir:
    // "\1" marks a name the IR must not mangle: left alone.
    if (raw.starts_with('\1'))
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
    return mapCoff(raw, mapBase);
  case NameStyle::Ir:
    if (raw.starts_with('\1'))
      return std::nullopt;
    return mapBase(raw);
  }
  return std::nullopt;
}

} // namespace linkd::rewrite
