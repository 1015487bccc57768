// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/link_output.h"

namespace linkd {

void LinkOutput::append(bool isStderr, std::string_view data) {
  if (data.empty())
    return;
  if (parts.empty() || parts.back().isStderr != isStderr)
    parts.push_back({isStderr, {}});
  parts.back().data.append(data);
}

std::string LinkOutput::stream(bool isStderr) const {
  std::string all;
  for (const OutputPiece &p : parts)
    if (p.isStderr == isStderr)
      all += p.data;
  return all;
}

void storeOutput(const LinkOutput &output, const PathMapper &paths,
                 cache::v1::LinkResult &result,
                 std::set<std::string> *embedded) {
  std::string out, err;
  std::set<std::string> unused;
  for (const OutputPiece &p : output.pieces()) {
    std::string stored =
        paths.toStoredText(p.data, embedded ? embedded : &unused);
    auto *piece = result.add_output_order();
    piece->set_stderr(p.isStderr);
    piece->set_size(stored.size());
    (p.isStderr ? err : out) += stored;
  }
  result.set_stdout_data(std::move(out));
  result.set_stderr_data(std::move(err));
}

namespace {

// The pieces of output_order, or nothing if they do not cover both streams
// exactly.
std::vector<OutputPiece> orderedPieces(const cache::v1::LinkResult &result) {
  std::vector<OutputPiece> pieces;
  size_t outOff = 0, errOff = 0;
  for (const auto &piece : result.output_order()) {
    const std::string &data =
        piece.stderr() ? result.stderr_data() : result.stdout_data();
    size_t &off = piece.stderr() ? errOff : outOff;
    if (piece.size() > data.size() - off)
      return {};
    pieces.push_back({piece.stderr(), data.substr(off, piece.size())});
    off += piece.size();
  }
  if (outOff != result.stdout_data().size() ||
      errOff != result.stderr_data().size())
    return {};
  return pieces;
}

} // namespace

std::vector<OutputPiece> replayOutput(const cache::v1::LinkResult &result,
                                      const PathMapper &paths) {
  std::vector<OutputPiece> pieces = orderedPieces(result);
  if (pieces.empty())
    pieces = {{false, result.stdout_data()}, {true, result.stderr_data()}};
  for (OutputPiece &p : pieces)
    p.data = paths.toLocal(p.data);
  return pieces;
}

} // namespace linkd
