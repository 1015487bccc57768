// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A farm link's caps on what its client describes, counted on the wire
// before parsing (2.5 M directory facts in one message
// took a node to 1.58 GB).
#include "daemon/linkd/farm_client/output_policy.h"
#include "daemon/linkd/farm_node/offload_wire.h"
#include "linkd/v1/farm.pb.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <unistd.h>

namespace linkd {
namespace {

std::string admit(OffloadBudget &b, const std::string &wire) {
  google::protobuf::io::ArrayInputStream in(wire.data(),
                                            static_cast<int>(wire.size()));
  return b.admit(in);
}

v1::OffloadUp startWith(int facts, const std::string &path) {
  v1::OffloadUp m;
  m.mutable_start()->mutable_link()->add_argv("ld.lld");
  for (int i = 0; i < facts; ++i) {
    v1::PathFact *f = m.mutable_start()->add_facts();
    f->set_path(path);
    f->set_kind(v1::PathFact::DIRECTORY);
  }
  return m;
}

TEST(OffloadBudget, CountsTheFactsOfEveryMessageOfALink) {
  OffloadBudget b({/*maxFacts=*/10, /*maxPathBytes=*/1000});
  EXPECT_EQ(admit(b, startWith(6, "/usr/lib/x").SerializeAsString()), "");
  EXPECT_EQ(b.facts(), 6u);
  EXPECT_EQ(b.pathBytes(), 6u * 10);
  v1::OffloadUp answer;
  for (int i = 0; i < 4; ++i)
    answer.mutable_facts()->add_facts()->set_path("/a");
  EXPECT_EQ(admit(b, answer.SerializeAsString()), "");
  EXPECT_EQ(b.facts(), 10u);
  // One more fact is over the link's cap, whatever the message.
  v1::OffloadUp more;
  more.mutable_facts()->add_facts(); // an empty fact: 2 bytes on the wire
  std::string why = admit(b, more.SerializeAsString());
  EXPECT_NE(why.find("more than the node takes"), std::string::npos) << why;
}

TEST(OffloadBudget, CountsPathBytes) {
  OffloadBudget b({1000, 100});
  EXPECT_EQ(admit(b, startWith(1, std::string(100, 'p')).SerializeAsString()),
            "");
  EXPECT_NE(admit(b, startWith(1, "q").SerializeAsString()), "");
}

TEST(OffloadBudget, BlobChunksCostNothing) {
  OffloadBudget b({1, 1});
  v1::OffloadUp chunk;
  chunk.mutable_blob()->set_data(std::string(1 << 20, 'x'));
  chunk.mutable_blob()->set_digest(std::string(32, 'd'));
  EXPECT_EQ(admit(b, chunk.SerializeAsString()), "");
  EXPECT_EQ(b.facts(), 0u);
}

TEST(OffloadBudget, RefusesWhatIsNotAMessage) {
  OffloadBudget b({1000, 1000});
  std::string wire = startWith(3, "/x").SerializeAsString();
  EXPECT_NE(admit(b, wire.substr(0, wire.size() - 2)), ""); // truncated
  OffloadBudget c({1000, 1000});
  EXPECT_NE(admit(c, std::string("\x0a\xff\xff\xff\xff\x0f", 6)), "");
}

// A flood of directory facts at a scale a unit test affords: 300,000 nameless
// directory facts (1.2 MB on the wire) are refused before any is parsed.
TEST(OffloadBudget, ManyTinyFactsAreRefusedOnTheWire) {
  OffloadBudget b({OffloadCaps{}.maxFacts, OffloadCaps{}.maxPathBytes});
  std::string wire;
  v1::OffloadUp m = startWith(300000, "");
  wire = m.SerializeAsString();
  EXPECT_LT(wire.size(), 2u << 20);
  EXPECT_NE(admit(b, wire), "");
  EXPECT_EQ(b.facts(), OffloadCaps{}.maxFacts + 1); // stopped at the first over
}

TEST(OutputPolicy, OnlyTheLinksOutputsAndNeverOverADeviceOrFifo) {
  char dir[] = "/tmp/linkd-policy.XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string d = dir;
  ASSERT_EQ(mkfifo((d + "/fifo").c_str(), 0600), 0);
  v1::LinkRequest req;
  req.set_flavor(v1::FLAVOR_ELF);
  req.set_cwd(d);
  req.set_umask(022);
  for (const char *a : {"ld.linkd", "a.o", "-o", "out", "-Map=/dev/null",
                        "--dependency-file=fifo"})
    req.add_argv(a);
  OutputPolicy policy(req);
  OutputPolicy::Admitted out = policy.admit(d + "/out", 0755);
  EXPECT_EQ(out.path, d + "/out") << out.refusal;
  EXPECT_EQ(out.mode, 0755u);
  EXPECT_NE(policy.admit("/dev/null", 0644).refusal.find("not a regular"),
            std::string::npos);
  EXPECT_NE(policy.admit(d + "/fifo", 0644).refusal.find("not a regular"),
            std::string::npos);
  EXPECT_NE(policy.admit(d + "/other", 0644).refusal.find("does not write"),
            std::string::npos);
  EXPECT_NE(policy.admit(d + "/out", 04755).refusal.find("setuid"),
            std::string::npos);
  std::system(("rm -rf " + d).c_str());
}

} // namespace
} // namespace linkd
