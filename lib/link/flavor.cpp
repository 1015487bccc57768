// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

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

// llvm::sys::path::stem: the file name without its last extension.
std::string_view stem(std::string_view fileName) {
  if (fileName == "." || fileName == "..")
    return fileName;
  size_t dot = fileName.find_last_of('.');
  return dot == std::string_view::npos ? fileName : fileName.substr(0, dot);
}

// llvm-ar's test for a tool name in the stem: its last occurrence (ignoring
// case) ends the stem or is followed by a character that is not a letter or
// digit ("llvm-ar-19", "Lib", "x86_64-linux-gnu-ranlib").
bool stemNamesTool(std::string_view s, std::string_view tool) {
  if (s.size() < tool.size())
    return false;
  for (size_t i = s.size() - tool.size() + 1; i-- > 0;) {
    if (!equalsLower(s.substr(i, tool.size()), tool))
      continue;
    size_t end = i + tool.size();
    return end == s.size() || !std::isalnum(static_cast<unsigned char>(s[end]));
  }
  return false;
}

// The archivers, in llvm-ar's order: "ranlib" before "lib" (it ends in it),
// both before "ar". dlltool, which llvm-ar also answers to, is not ours.
std::optional<Flavor> archiverFlavor(std::string_view argv0) {
  std::string_view s = stem(baseName(argv0));
  if (stemNamesTool(s, "dlltool"))
    return std::nullopt;
  if (stemNamesTool(s, "ranlib"))
    return Flavor::Ranlib;
  if (stemNamesTool(s, "lib"))
    return Flavor::Lib;
  if (stemNamesTool(s, "ar"))
    return Flavor::Ar;
  return std::nullopt;
}

} // namespace

bool isArchiver(Flavor f) {
  return f == Flavor::Ar || f == Flavor::Ranlib || f == Flavor::Lib;
}

std::optional<Flavor> flavorFromProgramName(std::string_view argv0) {
  if (auto archiver = archiverFlavor(argv0))
    return archiver;
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
  if (name == "ar")
    return Flavor::Ar;
  if (name == "ranlib")
    return Flavor::Ranlib;
  if (name == "lib")
    return Flavor::Lib;
  return std::nullopt;
}

std::optional<Flavor> flavorFromLldFlavorArgument(std::string_view value) {
  return lldComponentFlavor(value);
}

LeadingFlavor takeLeadingFlavor(std::vector<std::string> &argv) {
  LeadingFlavor out;
  if (argv.size() < 2 || argv[1] != "-flavor")
    return out;
  out.present = true;
  if (argv.size() < 3) {
    out.error = "missing arg value for '-flavor'";
    return out;
  }
  out.flavor = flavorFromLldFlavorArgument(argv[2]);
  if (!out.flavor) {
    out.error = "Unknown flavor: " + argv[2];
    return out;
  }
  argv.erase(argv.begin() + 1, argv.begin() + 3);
  return out;
}

bool selectsMinGWDriver(std::span<const std::string> args) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-m") {
      std::string_view m = args[i + 1];
      return m == "i386pe" || m == "i386pep" || m == "thumb2pe" ||
             m == "arm64pe" || m == "arm64ecpe";
    }
  return false;
}

bool isGenericLldName(std::string_view argv0) {
  return equalsLower(stripExe(baseName(argv0)), "lld");
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
  case Flavor::Ar:
  case Flavor::Ranlib:
  case Flavor::Lib:
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
  case Flavor::Ar:
    return "ar";
  case Flavor::Ranlib:
    return "ranlib";
  case Flavor::Lib:
    return "lib";
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
  case Flavor::Ar:
    stock = "llvm-ar";
    break;
  case Flavor::Ranlib:
    stock = "llvm-ranlib";
    break;
  case Flavor::Lib:
    stock = "llvm-lib";
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
  // FORCE_LLD_DIAGNOSTICS_CRASH and LLD_IN_TEST are read by the stock `lld`
  // executable's main (lld/tools/lld/lld.cpp), which the link child repeats:
  // in the key because a hit must not skip the crash or the repeated runs.
  static constexpr std::array<std::string_view, 11> kElf = {
      "LLD_REPRODUCE",
      "LLD_VERSION",
      "FORCE_LLD_DIAGNOSTICS_CRASH",
      "LLD_IN_TEST",
      "ELF_PACKAGE_METADATA",
      "TERM",
      "PWD",
      "LINK",
      "_LINK_",
      "SOURCE_DATE_EPOCH",
      "SYM64_THRESHOLD"};
  static constexpr std::array<std::string_view, 13> kCoff = {
      "LLD_REPRODUCE",
      "FORCE_LLD_DIAGNOSTICS_CRASH",
      "LLD_IN_TEST",
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
  // HOME: `-oso_prefix ~` expands it (MachO/Driver.cpp, real_path with
  // expand_tilde); the key holds it only for such links (lib/cache/link_key).
  static constexpr std::array<std::string_view, 9> kMachO = {
      "LLD_REPRODUCE",
      "FORCE_LLD_DIAGNOSTICS_CRASH",
      "LLD_IN_TEST",
      "HOME",
      "TERM",
      "PWD",
      "ZERO_AR_DATE",
      "LD_DYLIB_CPU_SUBTYPES_MUST_MATCH",
      "RC_TRACE_DYLIB_SEARCHING"};
  static constexpr std::array<std::string_view, 5> kWasm = {
      "LLD_REPRODUCE", "FORCE_LLD_DIAGNOSTICS_CRASH", "LLD_IN_TEST", "TERM",
      "PWD"};
  // llvm-ar reads no variable on Linux (OBJECT_MODE is AIX-only); its `tv`
  // listing prints local times. llvm-lib searches LIB for its inputs. Both
  // make a thin archive's member paths absolute (sys::fs::make_absolute),
  // which reads PWD when it names the working directory.
  static constexpr std::array<std::string_view, 2> kAr = {"TZ", "PWD"};
  static constexpr std::array<std::string_view, 2> kLib = {"LIB", "PWD"};
  switch (f) {
  case Flavor::Elf:
    return kElf;
  case Flavor::Coff:
    return kCoff;
  case Flavor::MachO:
    return kMachO;
  case Flavor::Wasm:
    return kWasm;
  case Flavor::Ar:
    return kAr;
  case Flavor::Lib:
    return kLib;
  case Flavor::Ranlib:
  case Flavor::Rewrite:
  case Flavor::Unspecified:
    break;
  }
  return {};
}

std::span<const std::string_view> processEnvironment() {
  // What LLVM 19.1.7 (libLLVM.so, found by listing its getenv and
  // sys::Process::GetEnv call sites) and glibc read at run time in any tool,
  // whatever the flavor: the temporary directory (sys::path::
  // system_temp_directory: the crash reporter's symbolizer output, LTO
  // temporaries), HOME (sys::path::home_directory, `~` in real_path), PATH
  // (findProgramByName: llvm-symbolizer), the crash reporter's switches,
  // terminal width, the XDG directories (user_config/cache_directory), the
  // AMDGPU module splitter's log, and TZ (glibc's localtime). Other glibc
  // variables (LD_LIBRARY_PATH, MALLOC_*, GLIBC_TUNABLES) are read once when a
  // process starts, which for a link child was the zygote's start; glibc reads
  // no locale variable since LLVM never calls setlocale.
  static constexpr std::array<std::string_view, 21> kProcess = {
      "HOME",
      "TMPDIR",
      "TMP",
      "TEMP",
      "TEMPDIR",
      "PATH",
      "PWD",
      "TERM",
      "COLUMNS",
      "TZ",
      "LLVM_DISABLE_SYMBOLIZATION",
      "LLVM_SYMBOLIZER_PATH",
      "LLVM_ENABLE_SYMBOLIZER_MARKUP",
      "FORCE_LLD_DIAGNOSTICS_CRASH",
      "LLD_IN_TEST",
      "LLD_VERSION",
      "SOURCE_DATE_EPOCH",
      "XDG_CACHE_HOME",
      "XDG_CONFIG_HOME",
      "AMD_SPLIT_MODULE_LOG_DIR",
      "AMD_SPLIT_MODULE_LOG_PRIVATE"};
  return kProcess;
}

bool isLldLinkLibMode(std::string_view a) {
  if (a.size() != 4 || (a[0] != '/' && a[0] != '-'))
    return false;
  for (size_t i = 1; i < 4; ++i)
    if ((a[i] | 0x20) != "lib"[i - 1])
      return false;
  return true;
}

} // namespace linkd
