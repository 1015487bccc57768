// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A link's stdout and stderr as it wrote them: pieces in order.
//
// A user's `> log 2>&1` sees the two streams interleaved, and LLD's order is
// part of its output (it flushes a map before reporting an error). The daemon
// gathers the pieces from the link child's ordered channel
// (lib/child/ordered_output.h), the client writes them in that order, and a
// cached result keeps the order (cache.proto, LinkResult.output_order) so a
// hit replays it exactly. Entries written without an order replay all of
// stdout, then all of stderr, as before.
#pragma once

#include "cache/link_key.h"
#include "linkd/cache/v1/cache.pb.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

struct OutputPiece {
  bool isStderr = false;
  std::string data;
};

class LinkOutput {
public:
  // Adds bytes of one stream; consecutive bytes of a stream join one piece.
  void append(bool isStderr, std::string_view data);
  const std::vector<OutputPiece> &pieces() const { return parts; }
  // All of one stream, for the checks that search a link's output.
  std::string stream(bool isStderr) const;
  bool empty() const { return parts.empty(); }

private:
  std::vector<OutputPiece> parts;
};

// Fills stdout_data, stderr_data and output_order, each piece in its stored
// form (PathMapper::toStoredText: left-out names standing as words become
// their tokens). `embedded` (optional) gets the ids of names that a piece
// contains inside a longer word: the text depends on them exactly.
void storeOutput(const LinkOutput &output, const PathMapper &paths,
                 cache::v1::LinkResult &result,
                 std::set<std::string> *embedded = nullptr);

// The pieces a hit replays, in order, mapped back to local paths. An entry
// without an order (or whose order does not cover its data exactly: it came
// from elsewhere and is not trusted) gives stdout, then stderr.
std::vector<OutputPiece> replayOutput(const cache::v1::LinkResult &result,
                                      const PathMapper &paths);

} // namespace linkd
