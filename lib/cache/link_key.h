// The action key of a link, and whether the link can be cached at all.
//
// Key = SHA-256 over: the key format version, linkd's and LLD's versions, the
// flavor, the program path LLD sees (argv[0]), the working directory, the
// argument vector with every response file replaced by its content, the
// environment variables LLD reads (TERM excepted: the colour decision is keyed
// directly), the umask (it sets the outputs' mode bits) and whether diagnostics
// are coloured.
//
// With a base dir, ELF (non-MinGW) and Wasm links key on paths relative to it
// ("$BASE" replaces the prefix in arguments, response files, cwd and PWD), so
// two checkouts at different places share entries. COFF, MinGW and Mach-O
// outputs embed absolute paths (PDB path, install name, debug map), so their
// keys always use the paths as given.
//
// Uncacheable links (each with a reason, counted per reason) run normally:
// --reproduce / LLD_REPRODUCE, --time-trace, output to stdout, input from
// stdin, --build-id=uuid, a random --shuffle-sections seed, and COFF/MinGW
// links whose output carries the current time (no /Brepro, /timestamp: or
// SOURCE_DATE_EPOCH; MinGW without --no-insert-timestamp) unless the
// "coff_timestamp" sloppiness is set.
#pragma once

#include "digest/digest.h"
#include "link/link_invocation.h"

#include <set>
#include <string>
#include <vector>

namespace linkd {

struct KeyContext {
  std::string linkdVersion;
  std::string lldVersion;
  std::string baseDir;              // empty: no relativisation
  std::set<std::string> sloppiness; // e.g. "coff_timestamp"
};

// Maps paths between their local spelling and the stored one ("$BASE/...").
class PathMapper {
public:
  explicit PathMapper(std::string baseDir = {});
  bool active() const { return !base.empty(); }
  // Replaces every occurrence of the base dir (as a whole path prefix).
  std::string toStored(const std::string &text) const;
  std::string toLocal(const std::string &text) const;

private:
  std::string base;
};

struct LinkAnalysis {
  Digest key;
  std::vector<std::string> uncacheable; // empty: cacheable
  std::set<std::string> responseFiles;  // absolute; covered by the key
  PathMapper paths;                     // how this link's paths are stored
  // Archive updates (lib/cache/archive_key.h): files the request reads and
  // then replaces (the archive `ar r` updates), keyed by their content as it
  // was before the request; absolute.
  std::set<std::string> replacedInputs;
  // Archive requests may succeed without writing anything (`ranlib` on an
  // archive that has a symbol table); such results are stored too.
  bool resultMayBeEmpty = false;
};

LinkAnalysis analyzeLink(const LinkInvocation &inv, const KeyContext &ctx);

} // namespace linkd
