// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_node/offload_wire.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>

namespace linkd {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

constexpr WireFormatLite::WireType kLen =
    WireFormatLite::WIRETYPE_LENGTH_DELIMITED;

// The field numbers of proto/linkd/v1/farm.proto this reads.
constexpr int kUpStart = 1, kUpFacts = 2; // OffloadUp
constexpr int kStartFacts = 2;            // OffloadStart
constexpr int kPathFactsFacts = 1;        // PathFacts
constexpr int kFactPath = 1;              // PathFact

// Calls `field(number, in)` for every length-delimited field of the message
// in `in` (up to its limit), with `in` limited to that field; skips the
// rest. False if the bytes are not a message.
template <typename F> bool eachLenField(CodedInputStream &in, F &&field) {
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagWireType(tag) != kLen) {
      if (!WireFormatLite::SkipField(&in, tag))
        return false;
      continue;
    }
    uint32_t len = 0;
    if (!in.ReadVarint32(&len) || len > INT32_MAX)
      return false;
    auto limit = in.PushLimit(static_cast<int>(len));
    if (!field(WireFormatLite::GetTagFieldNumber(tag), in, len))
      return false;
    // What the callback left of the field (a truncated one fails here).
    if (int rest = in.BytesUntilLimit(); rest > 0 && !in.Skip(rest))
      return false;
    in.PopLimit(limit);
  }
  return in.ConsumedEntireMessage();
}

} // namespace

std::string
OffloadBudget::admit(google::protobuf::io::ZeroCopyInputStream &wire) {
  CodedInputStream in(&wire);
  bool over = false;
  auto fact = [&](CodedInputStream &f) {
    if (++factCount > caps.maxFacts)
      over = true;
    // Stops at the first path over the caps.
    return eachLenField(f,
                        [&](int number, CodedInputStream &, uint32_t len) {
                          if (number == kFactPath &&
                              (pathByteCount += len) > caps.maxPathBytes)
                            over = true;
                          return !over;
                        }) &&
           !over;
  };
  bool ok = eachLenField(in, [&](int number, CodedInputStream &m, uint32_t) {
    int factField = number == kUpStart   ? kStartFacts
                    : number == kUpFacts ? kPathFactsFacts
                                         : 0;
    if (!factField)
      return true;
    return eachLenField(m, [&](int n, CodedInputStream &f, uint32_t) {
      return n != factField || fact(f);
    });
  });
  if (over)
    return "the link describes more than the node takes (" +
           std::to_string(factCount) + " paths of " +
           std::to_string(pathByteCount) + " bytes; at most " +
           std::to_string(caps.maxFacts) + " paths of " +
           std::to_string(caps.maxPathBytes) + " bytes)";
  if (!ok)
    return "a malformed message";
  return {};
}

} // namespace linkd
