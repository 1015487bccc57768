// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link-time record of a module's state symbols, for `linkd audit` of
// modules that carry no symbol table (PE images, ELF linked with -s).
//
// A link child whose output will have no symbols asks LLD for a map file
// (ELF -Map, MinGW -Map, lld-link /lldmap) into an anonymous file, and at
// exit reduces it to the state symbols the link placed in writable sections:
// one line per symbol, "K\tNAME\tINPUT\n" with K = D (initialised data),
// B (zero-initialised), T (thread-local); where the child read the input's
// binding, "Kb\tNAME\tINPUT\tSOURCE\n" with b = g (global) or l (local) and
// SOURCE the local's source file (may be empty). The daemon stores that text
// with the cache record of the link, under the digest of each output, so the
// audit finds it again from the module's bytes alone. Symbols from the
// toolchain's own startup files and C runtime archives are left out of the
// findings (every module carries its own C runtime by design); they stay in the
// record, marked by isToolchainInput().
//
// LLD's maps print symbols demangled (LLD's default; turning it off would
// change the link's diagnostics), so a record holds demangled names and the
// audit compares copies by demangled name.
// LLD's ELF and COFF ("lldmap") map files share one layout: numeric columns,
// then the output section at the "Out" column, input sections ("file:(sec)")
// at "In", symbols at "Symbol".
#pragma once

#include "link/flavor.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd::audit {

// Which links get a record, from LINKD_AUDIT_RECORD in the daemon's
// environment: unset, the PE images (lld-link, MinGW: a map costs a few
// per cent of those links, docs/audit.md "Cost"); "1", also ELF links whose
// output has no symbol table (-s) or may lose it later (a build-id, which
// survives `strip`); "0", none.
enum class RecordPolicy { Off, PeImages, All };
RecordPolicy recordPolicyFrom(const char *envValue);

// The option that asks LLD for the record's map at `mapPath` (-Map=,
// /lldmap:), or empty when this link gets no record. A positive list of
// command shapes gets one: an lld-link image link (not lib mode: "/lib" or
// "-lib" first), a MinGW link, and with RecordPolicy::All an ELF link that
// strips or has a build-id; none of whose arguments, response files' included
// (`cwd` resolves them; one left unread counts against), shows the command
// line (-###, a PDB, --reproduce, /linkrepro, LLD_REPRODUCE: `reproduce`),
// writes a map of the user's (LLD writes only the last), links nothing
// (help, version) or names LLD's phases (--time-trace, /time). The link
// child gives the option to LLD right after the flavor, where no option can
// take it as its value (lld_entry.h), so that the parse, the diagnostics and
// the outputs are the user's command's; LLD's own lit suite checks it
// (tests/lld_suite). The daemon and the link child ask the same question,
// `reproduce` being environmentAddsToTheLink's answer.
// Whether the link's environment adds to what LLD does with its arguments
// (`value` looks a variable up): LLD_REPRODUCE (the tarball would show our
// option), and lld-link's LINK and _LINK_ (options before and after the
// arguments, also under the MinGW driver: `LINK=/DEBUG` makes a PDB that
// holds the command line). The `reproduce` argument below.
bool environmentAddsToTheLink(
    const std::function<const char *(const char *)> &value);

std::string stateRecordMapOption(RecordPolicy policy, Flavor flavor,
                                 const std::vector<std::string> &argv,
                                 const std::string &cwd, bool reproduce,
                                 const std::string &mapPath);

// The store's action namespace of state records, keyed by output digest.
inline constexpr const char *kStateRecordNs = "audit-state";
// The base name prefix of the map file a link child writes for the record:
// scratch, never an output of the link.
inline constexpr const char *kMapFilePrefix = "linkd-audit-map-";

struct RecordedSymbol {
  // D data, B bss, T thread-local; W: not a symbol but how many bytes
  // `input` put in writable output sections (`name` holds the number), so
  // that a record naming no state of a module whose inputs wrote data is
  // known for what it is.
  char kind = 'D';
  std::string name;
  std::string input; // the object or "archive(member)" that defined it
  // From the input's own symbol table, where the link child could read it
  // (record_facts.h): 'g' a global (one entity in every module that has the
  // name), 'l' a file-local symbol, 0 unknown (the map does not say).
  char binding = 0;
  // A local's source file as its object names it (ELF STT_FILE, COFF
  // .file): "rt.cpp" also when the object was a driver's temp file.
  std::string source;
};

std::string encodeStateRecord(const std::vector<RecordedSymbol> &symbols);
// False (and `error`) on a malformed record; a record is store data, and a
// store can be corrupt.
bool decodeStateRecord(std::string_view text,
                       std::vector<RecordedSymbol> &symbols,
                       std::string *error);

// The state symbols of an LLD map file (ELF -Map or COFF /lldmap).
std::vector<RecordedSymbol> stateFromLldMap(std::string_view map);

// An output section whose content is mutable state: 'D', 'B', 'T', or 0.
char stateSectionKind(std::string_view outputSection);

// crt1.o, crtbegin.o, libc_nonshared.a(...), libmingw32.a(...), LLD's
// <internal> ...: the toolchain's startup code and C runtime.
bool isToolchainInput(std::string_view input);

} // namespace linkd::audit
