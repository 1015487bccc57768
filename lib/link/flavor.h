// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Tool flavors and how a program name selects one.
//
// A single client binary is installed under several names (ld.linkd,
// ld64.linkd, lld-link.linkd, wasm-ld.linkd, and the archivers ar.linkd,
// ranlib.linkd, lib.linkd) and may also be reached through a symlink with one
// of the stock tools' names (ld.lld, ld, lld-link, ld64.lld, wasm-ld; ar,
// llvm-ar, ranlib, llvm-ranlib, lib, llvm-lib). Archiver names are recognised
// first, with llvm-ar's rule (the file name's stem ends in "ranlib", "lib" or
// "ar", or has it followed by a non-alphanumeric character, as in
// "llvm-ar-19"); "x86_64-linux-gnu-ar" is an archiver although LLD would read
// "gnu" in it. Every other name gets exactly LLD's rules
// (lld/Common/DriverDispatcher.cpp), with "linkd" names mapped first.
//
// This file is deliberately free of LLVM: the thin client includes it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

// Numbering matches linkd.v1.Flavor on the wire. Ar, Ranlib and Lib are the
// archivers (llvm-ar, llvm-ranlib, llvm-lib), not LLD drivers.
enum class Flavor {
  Unspecified = 0,
  Elf = 1,
  Coff = 2,
  MachO = 3,
  Wasm = 4,
  Ar = 5,
  Ranlib = 6,
  Lib = 7,
  Rewrite = 8, // `linkd-lld rewrite`, through the daemon's Rewrite RPC
};

// True for Ar, Ranlib and Lib.
bool isArchiver(Flavor f);

// Flavor for a program name such as "/usr/bin/ld.linkd" or "x86_64-ld.lld".
// Returns nullopt when LLD would not recognise the name either.
std::optional<Flavor> flavorFromProgramName(std::string_view argv0);

// Flavor from a user-facing name: "elf"/"gnu", "coff"/"link", "macho"/"darwin",
// "wasm", "ar", "ranlib", "lib" (the `--flavor` option of `linkd link`).
std::optional<Flavor> flavorFromName(std::string_view name);

// LLD's `-flavor F` (lld/Common/DriverDispatcher.cpp, getFlavor): "gnu",
// "ld", "ld.lld", "link", "darwin", "ld64", "ld64.lld", "wasm", "ld-wasm",
// any case. nullopt for anything else (LLD: "Unknown flavor: F").
std::optional<Flavor> flavorFromLldFlavorArgument(std::string_view value);

// What the generic `lld` driver does with its command line before it looks
// at argv[0]: `-flavor F` as the first argument (only there) picks the driver
// and is removed. Stock LLD writes `error` to stderr and exits with 1; the
// client does the same before it talks to anybody, so `lld -flavor gnu ...`,
// `ld.lld -flavor gnu ...` and `ld.linkd -flavor gnu ...` link like stock
// `lld -flavor gnu ...` (argv[0] is kept: LLD prefixes its diagnostics with
// it, "lld: error: ...").
struct LeadingFlavor {
  bool present = false;         // argv[1] was "-flavor"
  std::optional<Flavor> flavor; // set when present and valid
  std::string error;            // LLD's message, without the newline
};
LeadingFlavor takeLeadingFlavor(std::vector<std::string> &argv);

// LLD's message when neither `-flavor` nor argv[0] names a driver (stock
// `lld` with no `-flavor`).
constexpr std::string_view kLldGenericDriverMessage =
    "lld is a generic driver.\n"
    "Invoke ld.lld (Unix), ld64.lld (macOS), lld-link (Windows), wasm-ld "
    "(WebAssembly) instead";

// lld-link's lib mode: "/lib" or "-lib" (any case) as its first argument
// makes lld-link run llvm-lib on the rest (lld/COFF/Driver.cpp).
bool isLldLinkLibMode(std::string_view firstArg);

// True when argv[0] names LLD's generic driver itself ("lld", "lld.exe",
// any directory).
bool isGenericLldName(std::string_view argv0);

// Whether LLD runs its MinGW driver for a GNU-flavor command, as LLD 19's
// isPETarget decides (lld/Common/DriverDispatcher.cpp): the first "-m" with
// a value names a PE emulation. `args` is argv[1..]; LLD looks in the
// arguments as given, then in them with response files expanded.
bool selectsMinGWDriver(std::span<const std::string> args);

// LLD's `-flavor` value for the flavor ("gnu", "link", "darwin", "wasm"; ""
// for the archivers).
std::string_view lldFlavorArgument(Flavor f);

// Short stable name for logs and CLI ("elf", "coff", "macho", "wasm", "ar",
// "ranlib", "lib").
std::string_view flavorName(Flavor f);

// The name LLD should see as argv[0]. LLD prefixes its diagnostics with the
// file name of argv[0], so the stock name must be used for output to match:
// "ld.linkd" becomes "ld.lld", "/opt/bin/lld-link.linkd" becomes
// "/opt/bin/lld-link" (COFF records argv[0], made absolute, in PDBs: the
// result is what LLD installed at that place would record). Any other name
// (a symlink called ld.lld or ld, say) is kept as it is. The archivers' own
// names map to LLVM's: "ar.linkd" -> "llvm-ar", "ranlib.linkd" ->
// "llvm-ranlib", "lib.linkd" -> "llvm-lib" (llvm-ar prints argv[0] in its
// diagnostics, so a symlink called "ar" prints "ar: error: ...", as stock
// llvm-ar invoked through a symlink of that name does).
std::string lldProgramName(std::string_view argv0, Flavor f);

// Environment variables the tool reads for this flavor (TZ for llvm-ar's
// `tv` listing, LIB for llvm-lib's search path). The client forwards exactly
// these; the link child unsets all of them and then sets the forwarded ones,
// so the link sees the client's environment, not the daemon's.
// These are the ones that can change the outputs: the cache key holds them.
std::span<const std::string_view> flavorEnvironment(Flavor f);

// Environment variables any tool reads in a link child, whatever the flavor
// (LLVM's temporary directory, HOME, PATH for the crash reporter's
// symbolizer, TZ, ...). The client forwards them with the flavor's; the child
// starts from an empty environment and sets exactly these and the flavor's,
// so nothing of the daemon's environment reaches a link. Not in the cache
// key (they change where temporaries go and how a crash is reported, and a
// crash is never cached).
std::span<const std::string_view> processEnvironment();

} // namespace linkd
