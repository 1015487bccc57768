// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// libFuzzer target over the kernel library's kernel wire (lib/kernel/
// kernel_wire.h) past its framing: the bytes are a stream of frames as they
// arrive on <socket>.blob (or, from the daemon, at liblinkd), read through a
// socket pair with readFrame, and each payload goes to the decoder its type
// byte names, as the daemon's blob listener and liblinkd dispatch them. A
// decoded Link then gets the daemon's own checks (kernel_request.h) and its
// cache key; every decoded message is encoded again and must decode to the
// same message (a decoder that accepts what its encoder cannot produce, or
// loses a field, is a finding too).
//
// Crashes, sanitizer reports, leaks and aborts here are findings.
// Built only with -DLINKD_FUZZ=ON (tests/fuzz/CMakeLists.txt); seeds from
// tests/fuzz/make_corpus.sh --kernel DIR.
#include "daemon/linkd/service/kernel_cache.h"
#include "daemon/linkd/service/kernel_request.h"
#include "kernel/kernel_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

namespace {

using namespace linkd;
using namespace linkd::kernel;

void require(bool ok) {
  if (!ok)
    std::abort();
}

bool sameLink(const LinkMsg &a, const LinkMsg &b) {
  if (a.version != b.version || a.flavor != b.flavor || a.flags != b.flags ||
      a.timeoutMs != b.timeoutMs || a.argv != b.argv || a.env != b.env ||
      a.inputs.size() != b.inputs.size())
    return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (a.inputs[i].name != b.inputs[i].name ||
        a.inputs[i].sha256 != b.inputs[i].sha256 ||
        a.inputs[i].size != b.inputs[i].size)
      return false;
  return true;
}

bool sameResult(const ResultMsg &a, const ResultMsg &b) {
  if (a.exitCode != b.exitCode || a.termSignal != b.termSignal ||
      a.cacheHit != b.cacheHit || a.blobsUploaded != b.blobsUploaded ||
      a.out != b.out || a.err != b.err || a.outputs.size() != b.outputs.size())
    return false;
  for (size_t i = 0; i < a.outputs.size(); ++i)
    if (a.outputs[i].name != b.outputs[i].name ||
        a.outputs[i].mode != b.outputs[i].mode ||
        a.outputs[i].data != b.outputs[i].data)
      return false;
  return true;
}

std::string_view body(const std::string &encoded) {
  return std::string_view(encoded).substr(1);
}

void link(std::string_view p) {
  auto m = decodeLink(p);
  if (!m)
    return;
  auto again = decodeLink(body(encodeLink(*m)));
  require(again && sameLink(*m, *again));
  std::vector<Digest> digests;
  std::string why = checkKernelLink(*m, 1ull << 30, digests);
  if (why.empty()) {
    require(digests.size() == m->inputs.size());
    for (const WireInput &in : m->inputs)
      require(blobViewPath(in.name).front() == '/');
  }
  (void)kernelKey(*m, "LLD 19.1.7");
}

void need(std::string_view p) {
  auto m = decodeNeed(p);
  if (!m)
    return;
  auto again = decodeNeed(body(encodeNeed(*m)));
  require(again && *again == *m);
}

void blob(std::string_view p) {
  auto m = decodeBlob(p);
  if (!m)
    return;
  // The data is a view into the payload, exactly its tail.
  require(m->second.data() >= p.data() &&
          m->second.data() + m->second.size() == p.data() + p.size());
  std::string again = encodeBlobHead(m->first, m->second.size());
  again.append(m->second);
  auto back = decodeBlob(body(again));
  require(back && back->first == m->first && back->second == m->second);
}

void result(std::string_view p) {
  auto m = decodeResult(p);
  if (!m)
    return;
  auto again = decodeResult(body(encodeResult(*m)));
  require(again && sameResult(*m, *again));
}

void healthReply(std::string_view p) {
  auto m = decodeHealthReply(p);
  if (!m)
    return;
  auto again = decodeHealthReply(body(encodeHealthReply(*m)));
  require(again && again->version == m->version &&
          again->lldVersion == m->lldVersion &&
          again->activeLinks == m->activeLinks &&
          again->linksTotal == m->linksTotal && again->hits == m->hits &&
          again->misses == m->misses);
}

void error(std::string_view p) {
  auto m = decodeError(p);
  if (!m)
    return;
  auto again = decodeError(body(encodeError(m->message, m->kind)));
  require(again && again->message == m->message && again->kind == m->kind);
}

void dispatch(const std::string &payload) {
  require(!payload.empty()); // readFrame never yields an empty frame
  std::string_view p = std::string_view(payload).substr(1);
  switch (static_cast<uint8_t>(payload[0])) {
  case MsgLink:
    return link(p);
  case MsgNeed:
    return need(p);
  case MsgBlob:
    return blob(p);
  case MsgResult:
    return result(p);
  case MsgHealthReply:
    return healthReply(p);
  case MsgError:
    return error(p);
  default: // Health has no body; anything else is refused by both sides
    return;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
    return 0;
  // The writer is a thread so that inputs larger than the socket buffer
  // still arrive whole; the reader stops at the first bad frame, as the
  // daemon and liblinkd do.
  std::thread writer([&] {
    (void)writeRaw(
        sp[1], {std::string_view(reinterpret_cast<const char *>(data), size)});
    shutdown(sp[1], SHUT_WR);
  });
  std::string payload;
  while (readFrame(sp[0], payload, 2000, 64u << 20))
    dispatch(payload);
  close(sp[0]);
  writer.join();
  close(sp[1]);
  return 0;
}
