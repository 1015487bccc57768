// Linker flavors and how a program name selects one.
//
// A single client binary is installed under several names (ld.linkd,
// ld64.linkd, lld-link.linkd, wasm-ld.linkd) and may also be reached through a
// symlink with one of LLD's own names (ld.lld, ld, lld-link, ld64.lld,
// wasm-ld). The flavor comes from argv[0] with exactly LLD's rules
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

// Numbering matches linkd.v1.Flavor on the wire.
enum class Flavor {
  Unspecified = 0,
  Elf = 1,
  Coff = 2,
  MachO = 3,
  Wasm = 4,
  Rewrite = 8, // `linkd-lld rewrite`, through the daemon's Rewrite RPC
};

// Flavor for a program name such as "/usr/bin/ld.linkd" or "x86_64-ld.lld".
// Returns nullopt when LLD would not recognise the name either.
std::optional<Flavor> flavorFromProgramName(std::string_view argv0);

// Flavor from a user-facing name: "elf"/"gnu", "coff"/"link", "macho"/"darwin",
// "wasm" (the `--flavor` option of `linkd link`).
std::optional<Flavor> flavorFromName(std::string_view name);

// LLD's `-flavor` value for the flavor ("gnu", "link", "darwin", "wasm").
std::string_view lldFlavorArgument(Flavor f);

// Short stable name for logs and CLI ("elf", "coff", "macho", "wasm").
std::string_view flavorName(Flavor f);

// The name LLD should see as argv[0]. LLD prefixes its diagnostics with the
// file name of argv[0], so the stock name must be used for output to match:
// "ld.linkd" becomes "ld.lld", "/opt/bin/lld-link.linkd" becomes
// "/opt/bin/lld-link" (COFF records argv[0], made absolute, in PDBs: the
// result is what LLD installed at that place would record). Any other name
// (a symlink called ld.lld or ld, say) is kept as it is.
std::string lldProgramName(std::string_view argv0, Flavor f);

// Environment variables LLD reads for this flavor. The client forwards exactly
// these; the link child unsets all of them and then sets the forwarded ones,
// so the link sees the client's environment, not the daemon's.
std::span<const std::string_view> flavorEnvironment(Flavor f);

} // namespace linkd
