// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What one offloaded link's client may describe, checked on the wire before
// a message is parsed. A parsed protobuf message takes several times its
// encoded size (an empty PathFact is 2 bytes on the wire and ~80 in
// memory): a 151 MB first message with 2.5 M directory facts took a node to
// 1.58 GB, and a cap counted after parsing comes too late. The
// farm node reads OffloadUp messages as bytes (farm_service.cpp) and hands
// each to admit() first; only an admitted message is parsed.
#pragma once

#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>
#include <string>

namespace linkd {

struct OffloadCaps {
  // Path facts (files, directories, absent paths) over the whole link: a
  // link of 60,000 objects with its library searches stays far below.
  uint64_t maxFacts = 1 << 18;
  // Bytes of the paths those facts name, over the whole link.
  uint64_t maxPathBytes = 32 << 20;
};

class OffloadBudget {
public:
  explicit OffloadBudget(OffloadCaps caps) : caps(caps) {}
  // Counts the facts and path bytes of one encoded OffloadUp: "" while the
  // link stays within its caps, else why not (then the message must not be
  // parsed). A message too malformed to count is refused too.
  std::string admit(google::protobuf::io::ZeroCopyInputStream &wire);
  uint64_t facts() const { return factCount; }
  uint64_t pathBytes() const { return pathByteCount; }

private:
  OffloadCaps caps;
  uint64_t factCount = 0, pathByteCount = 0;
};

} // namespace linkd
