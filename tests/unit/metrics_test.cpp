// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The metrics' building blocks: the text exposition format, label folding,
// latency buckets, and who may scrape.
#include "metrics/histogram.h"
#include "metrics/peer_allow.h"
#include "metrics/prometheus_text.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

namespace linkd {
namespace {

TEST(PrometheusText, KeepsFamiliesTogetherAndEscapesLabels) {
  PrometheusText m;
  m.counter("linkd_a_total", "A", 1, {{"kind", "x"}});
  m.gauge("linkd_b", "B", 2.5);
  m.counter("linkd_a_total", "A", 3, {{"kind", "a \"q\" \\ \n"}});
  EXPECT_EQ(m.str(), "# HELP linkd_a_total A\n"
                     "# TYPE linkd_a_total counter\n"
                     "linkd_a_total{kind=\"x\"} 1\n"
                     "linkd_a_total{kind=\"a \\\"q\\\" \\\\ \\n\"} 3\n"
                     "# HELP linkd_b B\n"
                     "# TYPE linkd_b gauge\n"
                     "linkd_b 2.5\n");
}

TEST(PrometheusText, HistogramsAreCumulativeWithInf) {
  LatencyHistogram h;
  h.observeMicros(50);        // <= 0.0001
  h.observeMicros(3000);      // <= 0.005
  h.observeMicros(600000000); // > 120 s
  PrometheusText m;
  m.histogram("linkd_t_seconds", "T", h.snapshot(), {{"where", "local"}});
  std::string s = m.str();
  EXPECT_NE(s.find("linkd_t_seconds_bucket{where=\"local\",le=\"0.0001\"} 1\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("linkd_t_seconds_bucket{where=\"local\",le=\"0.005\"} 2\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("linkd_t_seconds_bucket{where=\"local\",le=\"120\"} 2\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("linkd_t_seconds_bucket{where=\"local\",le=\"+Inf\"} 3\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("linkd_t_seconds_count{where=\"local\"} 3\n"),
            std::string::npos);
  EXPECT_NE(s.find("linkd_t_seconds_sum{where=\"local\"} 600.00305\n"),
            std::string::npos)
      << s;
}

TEST(PrometheusText, BoundedLabelsDropPaths) {
  EXPECT_EQ(boundedLabel("response file /home/u/x.rsp is not a regular file"),
            "response file <path> is not a regular file");
  EXPECT_EQ(boundedLabel("input changed during the link: a.o"),
            "input changed during the link");
  EXPECT_EQ(boundedLabel(""), "unknown");
  EXPECT_EQ(boundedLabel(std::string(200, 'x')).size(), 80u);
}

sockaddr_storage v4(const char *a) {
  sockaddr_storage s{};
  auto *in = reinterpret_cast<sockaddr_in *>(&s);
  in->sin_family = AF_INET;
  inet_pton(AF_INET, a, &in->sin_addr);
  return s;
}

sockaddr_storage v6(const char *a) {
  sockaddr_storage s{};
  auto *in = reinterpret_cast<sockaddr_in6 *>(&s);
  in->sin6_family = AF_INET6;
  inet_pton(AF_INET6, a, &in->sin6_addr);
  return s;
}

TEST(PeerAllowList, LoopbackAlwaysOthersOnlyByEntry) {
  std::string err;
  auto none = PeerAllowList::parse({}, &err);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->allows(v4("127.0.0.1")));
  EXPECT_TRUE(none->allows(v4("127.3.4.5")));
  EXPECT_TRUE(none->allows(v6("::1")));
  EXPECT_TRUE(none->allows(v6("::ffff:127.0.0.1")));
  EXPECT_FALSE(none->allows(v4("192.0.2.2")));
  EXPECT_FALSE(none->allows(v6("::ffff:192.0.2.2")));
  EXPECT_FALSE(none->allows(v6("2001:db8::1")));

  auto some =
      PeerAllowList::parse({"10.1.0.0/16", "192.0.2.2", "2001:db8::/32"}, &err);
  ASSERT_TRUE(some) << err;
  EXPECT_TRUE(some->allows(v4("10.1.200.3")));
  EXPECT_FALSE(some->allows(v4("10.2.0.1")));
  EXPECT_TRUE(some->allows(v4("192.0.2.2")));
  EXPECT_TRUE(some->allows(v6("::ffff:192.0.2.2")));
  EXPECT_FALSE(some->allows(v4("192.0.2.3")));
  EXPECT_TRUE(some->allows(v6("2001:db8:5::1")));
  EXPECT_FALSE(some->allows(v6("2001:db9::1")));

  EXPECT_FALSE(PeerAllowList::parse({"10.0.0.0/33"}, &err));
  EXPECT_NE(err.find("10.0.0.0/33"), std::string::npos);
  EXPECT_FALSE(PeerAllowList::parse({"example.com"}, &err));
  EXPECT_NE(err.find("example.com"), std::string::npos);
}

} // namespace
} // namespace linkd
