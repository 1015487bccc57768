// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Verification of a content key (lib/cache/link_names.h): which of the names
// the key left out a result depends on.
//
// After a miss, while the result is stored (before its manifest is written):
// - each output's bytes (as the store reads them: OutputScan), stdout and
//   stderr are searched for every left-out name (its spelling and its
//   absolute form; the working directory and the base dir as prefixes). A
//   name found in an output is required exactly: the manifest's input set
//   records it, and a link with another name (or checkout) does not match
//   that set. Output bytes are never patched.
// - a name in a diagnostic standing as a whole word is stored as its token
//   and replayed with the current link's name; one that is part of a longer
//   word is required exactly instead.
// - an input name the link did not read, or an output name it did not write,
//   was not a file of the link (an option value we did not know): required
//   exactly.
// - inputs that are linker scripts with SECTIONS (whose patterns match input
//   file names) or LLVM bitcode (module names come from file names): every
//   input name is required exactly.
#pragma once

#include "cache/access_log.h"
#include "cache/link_names.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

struct NameCheck {
  // Ids of the names required as they are: true when the absolute form is
  // required too, false when only the spelling reached the result (an
  // output named "libf.so" whose DT_SONAME is "libf.so" is the same in
  // every checkout).
  std::map<std::string, bool> exact;
  // Why each of them is required, by id (the first reason found).
  std::map<std::string, std::string> whyById;
  std::string stdoutStored, stderrStored;
  uint64_t scannedBytes = 0;
  uint64_t micros = 0;    // wall clock
  uint64_t cpuMicros = 0; // this thread's CPU time
  std::string why; // the first reason a name is required (for the log)
};

class PatternScan;

// The search of a link's outputs for the left-out names, fed with their
// bytes as the store reads them (LocalStore::putBlobFromFile's sink): each
// piece is searched while it is in cache, instead of reading every output
// once more (W1: 137 MB; a second pread of the file LLD wrote cost as much
// as the search itself, ~20 ms). A match may span two pieces of an output,
// never two outputs.
class OutputScan {
public:
  explicit OutputScan(const PathMapper &names);
  ~OutputScan();
  OutputScan(const OutputScan &) = delete;
  OutputScan &operator=(const OutputScan &) = delete;

  // The next output starts; the sink for its bytes, in order. Empty when
  // no name was left out: nothing to search, the store reads nothing for it.
  std::function<void(std::string_view)> startOutput();
  // What the sink calls.
  void feed(std::string_view piece);

private:
  friend NameCheck checkNames(const PathMapper &, const AccessLog &,
                              const OutputScan &, const std::string &,
                              const std::string &);
  struct Pattern {
    std::string text;
    std::string id;
    bool absolute;
  };
  std::vector<Pattern> pats;
  std::unique_ptr<PatternScan> scan;
  std::vector<bool> found;
  std::string tail; // the current output's last longest()-1 bytes
  uint64_t bytes = 0, micros = 0, cpuMicros = 0; // time spent in feed
};

// After `outputs` has seen every output's bytes.
NameCheck checkNames(const PathMapper &names, const AccessLog &log,
                     const OutputScan &outputs, const std::string &stdoutData,
                     const std::string &stderrData);

// Searches `data` for each of `patterns`; marks found[i] for each found.
// Exposed for tests and the benchmark.
class PatternScan {
public:
  explicit PatternScan(std::vector<std::string> patterns);
  void scan(std::string_view data, std::vector<bool> &found) const;
  size_t longest() const { return maxLen; }
  size_t size() const { return patterns.size(); }

private:
  std::vector<std::string> patterns; // sorted
  std::vector<size_t> original;      // index before sorting
  size_t maxLen = 0;
  std::vector<unsigned char> firstBytes;
};

} // namespace linkd
