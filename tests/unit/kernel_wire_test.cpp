// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// lib/kernel/kernel_wire: round trips, and hostile payloads (truncated,
// lengths past the end, counts above the caps, trailing bytes) decode to
// nullopt instead of reading past the payload.
#include "kernel/kernel_wire.h"

#include <gtest/gtest.h>

#include <vector>

using namespace linkd::kernel;

namespace {

std::string_view body(const std::string &frame) {
  return std::string_view(frame).substr(1);
}

LinkMsg sample() {
  LinkMsg m;
  m.flavor = 1;
  m.flags = FlagNoCache;
  m.timeoutMs = 5000;
  m.argv = {"lld", "-flavor", "gnu", "-shared", "k.o", "-o", "k.hsaco"};
  m.env = {{"LLD_VERSION", "IREE"}};
  m.inputs.push_back({"k.o", std::string(32, '\x5a'), 1234});
  return m;
}

} // namespace

TEST(KernelWire, LinkRoundTrip) {
  std::string f = encodeLink(sample());
  ASSERT_EQ(static_cast<uint8_t>(f[0]), MsgLink);
  auto m = decodeLink(body(f));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->argv, sample().argv);
  EXPECT_EQ(m->env, sample().env);
  ASSERT_EQ(m->inputs.size(), 1u);
  EXPECT_EQ(m->inputs[0].name, "k.o");
  EXPECT_EQ(m->inputs[0].size, 1234u);
  EXPECT_EQ(m->timeoutMs, 5000u);
}

TEST(KernelWire, ResultRoundTrip) {
  ResultMsg r;
  r.exitCode = 1;
  r.err = "ld.lld: error: undefined symbol: helper\n";
  r.outputs.push_back({"k.hsaco", 0755, std::string("\0ELF", 4)});
  auto d = decodeResult(body(encodeResult(r)));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->exitCode, 1);
  EXPECT_EQ(d->err, r.err);
  ASSERT_EQ(d->outputs.size(), 1u);
  EXPECT_EQ(d->outputs[0].data, r.outputs[0].data);
  EXPECT_EQ(d->outputs[0].mode, 0755u);
}

TEST(KernelWire, EveryTruncationIsRefused) {
  std::string link(body(encodeLink(sample())));
  for (size_t n = 0; n < link.size(); ++n)
    EXPECT_FALSE(decodeLink(std::string_view(link).substr(0, n))) << n;
  EXPECT_FALSE(decodeLink(link + "x")); // trailing bytes
  ResultMsg r;
  r.outputs.push_back({"a", 0644, "abc"});
  std::string res(body(encodeResult(r)));
  // The one cut that is whole: a daemon from before `uncacheable` (its
  // empty string is the last 4 bytes) ends there.
  for (size_t n = 0; n < res.size(); ++n)
    EXPECT_EQ(decodeResult(std::string_view(res).substr(0, n)).has_value(),
              n == res.size() - 4)
        << n;
  std::string err(body(encodeError("x", ErrorKind::Timeout)));
  for (size_t n = 0; n < err.size(); ++n)
    EXPECT_EQ(decodeError(std::string_view(err).substr(0, n)).has_value(),
              n == err.size() - 1)
        << n;
}

TEST(KernelWire, UncacheableAndErrorKinds) {
  ResultMsg r;
  r.uncacheable = "the daemon's cache is off";
  auto d = decodeResult(body(encodeResult(r)));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->uncacheable, r.uncacheable);
  for (ErrorKind k :
       {ErrorKind::CannotRun, ErrorKind::Timeout, ErrorKind::Refused}) {
    auto e = decodeError(body(encodeError("why", k)));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->message, "why");
    EXPECT_EQ(e->kind, k);
  }
  // An older daemon's Error has no kind: it cannot run the link.
  std::string old(body(encodeError("why")));
  old.pop_back();
  auto e = decodeError(old);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, ErrorKind::CannotRun);
}

TEST(KernelWire, HostileLengthsAndCounts) {
  // A wire version we do not speak.
  std::string v2(body(encodeLink(sample())));
  v2[0] = 2;
  EXPECT_FALSE(decodeLink(v2));
  // An argument count far above what the payload could hold.
  std::string big = std::string("\x01\0\0\0", 4) + '\x01' +
                    std::string(8, '\0') + std::string("\xff\xff\xff\x7f", 4);
  EXPECT_FALSE(decodeLink(big));
  // A blob whose data length runs past the payload.
  std::string blob(body(encodeBlobHead(0, 1000)));
  EXPECT_FALSE(decodeBlob(blob + "short"));
  // decodeBlob's data is a view into the payload: the payload must outlive
  // it (a temporary here was read after its end, ASan's finding).
  std::string payload = std::string(body(encodeBlobHead(3, 2))) + "hi";
  auto ok = decodeBlob(payload);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->first, 3u);
  EXPECT_EQ(ok->second, "hi");
}

TEST(KernelWire, InputNames) {
  EXPECT_EQ(checkInputName("k.o"), "");
  EXPECT_EQ(checkInputName("lib/libdevice.a"), "");
  EXPECT_EQ(checkInputName("/tmp/tmpa8w3_9qz"), "");
  for (std::string bad :
       std::vector<std::string>{"", "../k.o", "a/./b", "a//b", "a/", "/", ".",
                                std::string("a\0b", 3)})
    EXPECT_NE(checkInputName(bad), "") << bad;
}
