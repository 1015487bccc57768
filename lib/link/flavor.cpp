#include "link/flavor.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace linkd {
namespace {

bool equalsLower(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// lld::getFlavor: one dash-separated component of the program name.
std::optional<Flavor> lldComponentFlavor(std::string_view s) {
  for (std::string_view n : {"ld", "ld.lld", "gnu"})
    if (equalsLower(s, n))
      return Flavor::Elf;
  for (std::string_view n : {"wasm", "ld-wasm"})
    if (equalsLower(s, n))
      return Flavor::Wasm;
  if (equalsLower(s, "link"))
    return Flavor::Coff;
  for (std::string_view n : {"ld64", "ld64.lld", "darwin"})
    if (equalsLower(s, n))
      return Flavor::MachO;
  return std::nullopt;
}

std::string_view baseName(std::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view stripExe(std::string_view name) {
  if (name.size() > 4 && equalsLower(name.substr(name.size() - 4), ".exe"))
    name.remove_suffix(4);
  return name;
}

constexpr std::string_view kLinkdSuffix = ".linkd";

// Our own names: "<lld name>.linkd", e.g. ld.linkd, ld64.linkd, lld-link.linkd.
std::optional<std::string_view> stripLinkdSuffix(std::string_view name) {
  if (name.size() > kLinkdSuffix.size() && name.ends_with(kLinkdSuffix))
    return name.substr(0, name.size() - kLinkdSuffix.size());
  return std::nullopt;
}

} // namespace

std::optional<Flavor> flavorFromProgramName(std::string_view argv0) {
  std::string_view name = stripExe(baseName(argv0));
  if (auto stem = stripLinkdSuffix(name))
    name = *stem; // "ld" -> ELF, "ld64" -> Mach-O, "lld-link" -> COFF, ...
  // lld::parseProgname: "ld" is GNU; otherwise split on '-' and take the
  // first component LLD knows.
  if (name == "ld")
    return Flavor::Elf;
  size_t start = 0;
  while (start <= name.size()) {
    size_t dash = name.find('-', start);
    std::string_view part = name.substr(start, dash == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : dash - start);
    if (auto f = lldComponentFlavor(part))
      return f;
    if (dash == std::string_view::npos)
      break;
    start = dash + 1;
  }
  return std::nullopt;
}

std::optional<Flavor> flavorFromName(std::string_view name) {
  if (name == "elf" || name == "gnu")
    return Flavor::Elf;
  if (name == "coff" || name == "link")
    return Flavor::Coff;
  if (name == "macho" || name == "darwin")
    return Flavor::MachO;
  if (name == "wasm")
    return Flavor::Wasm;
  return std::nullopt;
}

std::string_view lldFlavorArgument(Flavor f) {
  switch (f) {
  case Flavor::Elf:
    return "gnu";
  case Flavor::Coff:
    return "link";
  case Flavor::MachO:
    return "darwin";
  case Flavor::Wasm:
    return "wasm";
  case Flavor::Rewrite:
  case Flavor::Unspecified:
    break;
  }
  return "";
}

std::string_view flavorName(Flavor f) {
  switch (f) {
  case Flavor::Elf:
    return "elf";
  case Flavor::Coff:
    return "coff";
  case Flavor::MachO:
    return "macho";
  case Flavor::Wasm:
    return "wasm";
  case Flavor::Rewrite:
    return "rewrite";
  case Flavor::Unspecified:
    break;
  }
  return "unspecified";
}

std::string lldProgramName(std::string_view argv0, Flavor f) {
  std::string_view name = baseName(argv0);
  if (!stripLinkdSuffix(stripExe(name)))
    return std::string(argv0);
  std::string_view stock;
  switch (f) {
  case Flavor::Elf:
    stock = "ld.lld";
    break;
  case Flavor::Coff:
    stock = "lld-link";
    break;
  case Flavor::MachO:
    stock = "ld64.lld";
    break;
  case Flavor::Wasm:
    stock = "wasm-ld";
    break;
  case Flavor::Rewrite:
  case Flavor::Unspecified:
    return std::string(argv0);
  }
  // Keep the directory: COFF records argv[0], made absolute, in the PDB.
  return std::string(argv0.substr(0, argv0.size() - name.size())) +
         std::string(stock);
}

std::span<const std::string_view> flavorEnvironment(Flavor f) {
  // Every variable LLD 19.1.7 (Debian's build) reads during a link, per
  // driver, found by listing the getenv call sites in liblld*.a and
  // libLLVM.so; docs/protocol.md says where each is read and what it changes.
  // ELF includes what the MinGW driver (chosen by `-m i386pep`) reads.
  static constexpr std::array<std::string_view, 9> kElf = {
      "LLD_REPRODUCE",
      "LLD_VERSION",
      "ELF_PACKAGE_METADATA",
      "TERM",
      "PWD",
      "LINK",
      "_LINK_",
      "SOURCE_DATE_EPOCH",
      "SYM64_THRESHOLD"};
  static constexpr std::array<std::string_view, 11> kCoff = {
      "LLD_REPRODUCE",
      "TERM",
      "PWD",
      "LINK",
      "_LINK_",
      "SOURCE_DATE_EPOCH",
      "SYM64_THRESHOLD",
      "LIB",
      "VCToolsInstallDir",
      "VCINSTALLDIR",
      "PATH"};
  static constexpr std::array<std::string_view, 6> kMachO = {
      "LLD_REPRODUCE",
      "TERM",
      "PWD",
      "ZERO_AR_DATE",
      "LD_DYLIB_CPU_SUBTYPES_MUST_MATCH",
      "RC_TRACE_DYLIB_SEARCHING"};
  static constexpr std::array<std::string_view, 3> kWasm = {"LLD_REPRODUCE",
                                                            "TERM", "PWD"};
  switch (f) {
  case Flavor::Elf:
    return kElf;
  case Flavor::Coff:
    return kCoff;
  case Flavor::MachO:
    return kMachO;
  case Flavor::Wasm:
    return kWasm;
  case Flavor::Rewrite:
  case Flavor::Unspecified:
    break;
  }
  return {};
}

} // namespace linkd
