// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// libFuzzer target over a farm node's message loop (offload_messages.h):
// what one offloaded link does with the client's OffloadUp messages and the
// sandboxed link child's questions, without the gRPC server, the zygote or
// a child. The bytes are a sequence of frames, each
//   kind (1 byte) | length (2 bytes, little-endian) | payload
// where an even kind is a serialized OffloadUp from the client (the first
// frame goes to start(), as the first message of a call does) and an odd
// kind is a question from the child (lib/child/sandbox_protocol.h). The
// node's blob store and each link's scratch directory live under
// /tmp/linkd-farm-fuzz; uploads whose bytes hash to the digest they name
// are stored, as on a node.
//
// Errors are statuses; crashes, sanitizer reports and leaks are findings.
// Built only with -DLINKD_FUZZ=ON (tests/fuzz/CMakeLists.txt).
#include "daemon/linkd/farm_node/offload_messages.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace {

struct Node {
  linkd::BlobStore blobs{"/tmp/linkd-farm-fuzz/store", 64 << 20};
  uint64_t links = 0;
  Node() {
    spdlog::set_level(spdlog::level::off);
    std::filesystem::create_directories("/tmp/linkd-farm-fuzz/links");
    (void)blobs.open();
  }
};

// The next frame, or false at the end of the input.
bool nextFrame(std::string_view &in, uint8_t &kind, std::string_view &payload) {
  if (in.size() < 3)
    return false;
  kind = static_cast<uint8_t>(in[0]);
  size_t len = static_cast<uint8_t>(in[1]) |
               static_cast<size_t>(static_cast<uint8_t>(in[2])) << 8;
  in.remove_prefix(3);
  payload = in.substr(0, len);
  in.remove_prefix(payload.size());
  return true;
}

void runLink(Node &node, std::string_view in, const std::string &scratch) {
  linkd::BlobOwners owners;
  size_t sent = 0;
  linkd::OffloadMessages msgs(node.blobs, owners, node.links, "fuzz", scratch,
                              1 << 20, [&](const linkd::v1::OffloadDown &m) {
                                sent += m.ByteSizeLong();
                                return true;
                              });
  uint8_t kind = 0;
  std::string_view payload;
  if (!nextFrame(in, kind, payload))
    return;
  linkd::v1::OffloadUp first;
  if (!first.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
      !msgs.start(first).ok())
    return;
  while (nextFrame(in, kind, payload)) {
    if (kind % 2 == 1) {
      (void)msgs.ask(payload);
      continue;
    }
    linkd::v1::OffloadUp m;
    if (!m.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
        !msgs.take(m).ok())
      return;
    (void)msgs.answerPending();
  }
  (void)msgs.view().outputs();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Node node;
  std::string scratch = "/tmp/linkd-farm-fuzz/links/" +
                        std::to_string(getpid()) + "-" +
                        std::to_string(++node.links);
  runLink(node, std::string_view(reinterpret_cast<const char *>(data), size),
          scratch);
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
  if (node.links % 1024 == 0)
    node.blobs.evict();
  return 0;
}
