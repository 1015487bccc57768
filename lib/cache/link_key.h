// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The action key of a link, and whether the link can be cached at all.
//
// Key = SHA-256 over: the key format version, linkd's and LLD's versions, the
// flavor, the program path LLD sees (argv[0]), the argument vector with
// every response file expanded, the environment variables LLD reads (TERM
// excepted: the colour decision is keyed directly), the umask (it sets the
// outputs' mode bits) and whether diagnostics are coloured.
//
// ELF (MinGW included) and Wasm links are keyed by content, not by name
// (lib/cache/arg_roles.h, lib/cache/link_names.h): each input, output and
// search directory is a token for its role, options LLD ignores are
// dropped, the working directory is a prefix the key does not hold, and
// paths under the base dir are held relative to the working directory.
// What the link read is in the manifest by content; whether a left-out name
// reached the outputs is checked when the result is stored
// (lib/cache/name_check.h; a MinGW image carries its own base name, which
// is searched for too). COFF (lld-link) and Mach-O outputs embed paths
// (PDB path, install name, debug map): their keys hold every argument and
// the working directory as given.
//
// Uncacheable links (each with a reason, counted per reason) run normally:
// --reproduce / LLD_REPRODUCE, --time-trace, output to stdout, input from
// stdin, --build-id=uuid, a random --shuffle-sections seed, and COFF/MinGW
// links whose output carries the current time (no /Brepro, /timestamp: or
// SOURCE_DATE_EPOCH; MinGW without --no-insert-timestamp) unless the
// "coff_timestamp" sloppiness is set.
#pragma once

#include "cache/link_names.h"
#include "digest/digest.h"
#include "link/link_invocation.h"
#include "link/response_files.h"

#include <map>
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

struct LinkAnalysis {
  Digest key;
  std::vector<std::string> uncacheable; // empty: cacheable
  std::set<std::string> responseFiles;  // absolute; covered by the key
  // How this link's paths and diagnostics are stored: the names the key
  // left out (lib/cache/link_names.h); empty when it left out none.
  PathMapper paths;
  // Options dropped from the key because LLD ignores them (for the log).
  std::vector<std::string> ignoredOptions;
  // Why no name was left out although the flavor allows it (or empty).
  std::string namesMatter;
  // What the key holds, field by field, and the same as the link spelled
  // it (for explaining a miss), with the primary output's absolute path.
  std::vector<std::string> keyFields;
  std::vector<std::string> localFields;
  std::vector<std::string> env; // NAME=value
  std::string cwd, baseDir, other;
  // The named inputs the key holds by content ("spelling=sha256 hex", or
  // "=-" for one that is missing), in order; empty when it holds none.
  std::vector<std::string> keyedInputs;
  std::string primaryOutput;
  // Which kind of request (its flavor): a miss is explained against the
  // last request of the same kind for the same output (ranlib's against
  // ranlib's, not against the `ar` that made the archive).
  std::string requestKind;
  // Archive updates (lib/cache/archive_key.h): files the request reads and
  // then replaces (the archive `ar r` updates), keyed by their content as it
  // was before the request; absolute.
  std::set<std::string> replacedInputs;
  // Archive requests may succeed without writing anything (`ranlib` on an
  // archive that has a symbol table); such results are stored too.
  bool resultMayBeEmpty = false;
  // Some output the link names is the null device: it links here, never on
  // a farm node (whose answer could name the device as an output).
  bool nullOutputs = false;
  // Every output the link names is the null device (`-o /dev/null`: the
  // probes of configure scripts). Nothing it writes is kept, so its result
  // is its diagnostics and exit status, and a failure is stored too: with
  // no output to open, LLD's failure follows from what the key and the
  // manifest hold (docs/cache.md, "Probes").
  bool onlyNullOutputs = false;
  // Such a link's named ELF objects are keyed without their STT_FILE names
  // (object_identity.h): their absolute paths, which the manifest leaves to
  // the key (without "." parts), with the digest of their bytes when keyed
  // (the store refuses a link that read other bytes); and those names,
  // which no stored diagnostic may contain.
  std::map<std::string, Digest> identityKeyed;
  std::set<std::string> fileSymbols;
  // Digests of input files taken before the link ran (absolute paths
  // without "." parts): the named inputs the key holds by content, and
  // those LinkCache::hashRecentInputs found changed in the tick the link
  // began. The store keeps a file changed in that tick only if it still
  // has these bytes (LinkCache::store).
  std::map<std::string, Digest> digestsBeforeLink;
};

// PWD as LLVM's sys::fs::current_path reads it (the only way LLD 19 and
// llvm-ar see it: make_absolute for --reproduce, Mach-O's N_OSO stabs, the
// member paths of thin archives): its value when it is an absolute path
// naming the working directory by another spelling (a symbolic link), else
// "" — a PWD that names another directory (`make -C lib` leaves the top
// directory in it) or the working directory as getcwd spells it changes
// nothing LLD does.
std::string keyedPwd(const LinkInvocation &inv);

// `stats` (optional): with it, a content key of a link that names few input
// files (a configure test, a JIT kernel, a one-step compile-and-link; at most
// kKeyedInputs) also holds their content digests, so the many links that
// differ only in their temp object each get a key of their own instead of
// crowding one manifest's 16 input sets. Large links (hundreds of named
// objects) leave it to the manifest: stat-checking them twice would double
// a hit's cost.
constexpr size_t kKeyedInputs = 16;
class StatCache;

// The response file an `@file` argument names, if `expanded` read it.
const ResponseFile *expandedResponseFile(const std::string &arg,
                                         const std::string &cwd,
                                         const ExpandedArgs &expanded);
// An `@file` argument that `expanded` read: keyed by its content (gcc's
// collect2 names them /tmp/ccXXXXXX) and recorded in `responseFiles`.
// False for any other argument (the caller keys it as written).
bool keyResponseFile(const std::string &arg, const std::string &cwd,
                     const ExpandedArgs &expanded, Sha256 &h,
                     std::set<std::string> &responseFiles);
LinkAnalysis analyzeLink(const LinkInvocation &inv, const KeyContext &ctx,
                         StatCache *stats = nullptr);

} // namespace linkd
