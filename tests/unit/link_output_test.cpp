// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The order of a link's stdout and stderr: the link child's records as the
// daemon reads them (lib/child/ordered_output.h), and the order a cached
// result keeps and a hit replays (lib/cache/link_output.h), including
// entries that come from elsewhere and do not add up.
#include "cache/link_output.h"
#include "child/child_report.h"
#include "child/ordered_output.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using linkd::LinkOutput;
using linkd::OutputPiece;
using linkd::PathMapper;

std::string record(int stream, const std::string &payload) {
  std::string r;
  r.push_back(static_cast<char>(stream));
  r.push_back('\0');
  r.push_back(static_cast<char>(payload.size() & 0xff));
  r.push_back(static_cast<char>(payload.size() >> 8));
  return r + payload;
}

using Seen = std::vector<std::pair<int, std::string>>;

TEST(OrderedRecords, SplitAcrossReadsInOrder) {
  std::string bytes = record(1, "map\n") + record(2, "error: x\n") +
                      record(1, std::string(4000, 'm'));
  linkd::ordered::Reader reader;
  Seen seen;
  auto emit = [&](int s, std::string_view p) { seen.emplace_back(s, p); };
  // One byte at a time: every record still comes out whole, in order.
  for (char c : bytes)
    ASSERT_TRUE(reader.feed(std::string_view(&c, 1), emit));
  EXPECT_FALSE(reader.incomplete());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], (std::pair<int, std::string>{1, "map\n"}));
  EXPECT_EQ(seen[1], (std::pair<int, std::string>{2, "error: x\n"}));
  EXPECT_EQ(seen[2].second.size(), 4000u);
}

TEST(OrderedRecords, MalformedIsRefused) {
  linkd::ordered::Reader reader;
  Seen seen;
  auto emit = [&](int s, std::string_view p) { seen.emplace_back(s, p); };
  EXPECT_FALSE(reader.feed(record(4, "x"), emit)); // no such stream
  EXPECT_TRUE(seen.empty());
  std::string tooLong = record(1, "");
  tooLong[2] = '\xff';
  tooLong[3] = '\xff'; // longer than a record can be
  linkd::ordered::Reader second;
  EXPECT_FALSE(second.feed(tooLong, emit));
  EXPECT_TRUE(seen.empty());
}

TEST(OrderedRecords, TheChildsReportIsKeptNotEmitted) {
  linkd::ChildReport sent;
  sent.status = 3;
  sent.prestarted = 1;
  sent.requestNs = 10;
  sent.toolNs = 20;
  sent.outputNs = 30;
  sent.exitNs = 40;
  sent.faults = 7;
  sent.maxRssKib = 1234;
  std::string bytes =
      record(2, "warning: w\n") +
      record(linkd::ordered::kReportStream, linkd::encodeChildReport(sent));
  linkd::ordered::Reader reader;
  Seen seen;
  auto emit = [&](int s, std::string_view p) { seen.emplace_back(s, p); };
  ASSERT_TRUE(reader.feed(bytes.substr(0, 9), emit));
  EXPECT_TRUE(reader.report().empty());
  ASSERT_TRUE(reader.feed(bytes.substr(9), emit));
  ASSERT_EQ(seen.size(), 1u); // the report is not output
  auto got = linkd::decodeChildReport(reader.report());
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 3);
  EXPECT_EQ(got->prestarted, 1u);
  EXPECT_EQ(got->outputNs, 30);
  EXPECT_EQ(got->exitNs, 40);
  EXPECT_EQ(got->faults, 7);
  EXPECT_EQ(got->maxRssKib, 1234u);
  EXPECT_FALSE(linkd::decodeChildReport("short"));
}

TEST(LinkOutput, JoinsConsecutiveBytesOfAStream) {
  LinkOutput out;
  out.append(false, "a");
  out.append(false, "b");
  out.append(true, "W");
  out.append(false, "");
  out.append(false, "c");
  ASSERT_EQ(out.pieces().size(), 3u);
  EXPECT_EQ(out.stream(false), "abc");
  EXPECT_EQ(out.stream(true), "W");
}

std::vector<std::pair<bool, std::string>> flat(
    const std::vector<OutputPiece> &pieces) {
  std::vector<std::pair<bool, std::string>> v;
  for (const OutputPiece &p : pieces)
    v.emplace_back(p.isStderr, p.data);
  return v;
}

TEST(LinkOutput, StoredOrderReplaysWithLocalPaths) {
  LinkOutput out;
  out.append(true, "warning: /src/a.o\n");
  out.append(false, "map of /src/a.o\n");
  out.append(true, "warning: end\n");
  PathMapper paths = PathMapper::forBaseDir("/src");
  linkd::cache::v1::LinkResult result;
  linkd::storeOutput(out, paths, result);
  EXPECT_EQ(result.stderr_data().find("/src"), std::string::npos)
      << "stored with the base dir's token";
  PathMapper elsewhere = PathMapper::forBaseDir("/other");
  auto replayed = flat(linkd::replayOutput(result, elsewhere));
  std::vector<std::pair<bool, std::string>> want = {
      {true, "warning: /other/a.o\n"},
      {false, "map of /other/a.o\n"},
      {true, "warning: end\n"}};
  EXPECT_EQ(replayed, want);
}

TEST(LinkOutput, EntriesWithoutAnOrderReplayStdoutThenStderr) {
  linkd::cache::v1::LinkResult result;
  result.set_stdout_data("map\n");
  result.set_stderr_data("warning\n");
  auto replayed = flat(linkd::replayOutput(result, PathMapper()));
  std::vector<std::pair<bool, std::string>> want = {{false, "map\n"},
                                                    {true, "warning\n"}};
  EXPECT_EQ(replayed, want);
}

TEST(LinkOutput, AnOrderThatDoesNotAddUpIsIgnored) {
  linkd::cache::v1::LinkResult result;
  result.set_stdout_data("map\n");
  result.set_stderr_data("warning\n");
  auto *p = result.add_output_order();
  p->set_stderr(true);
  p->set_size(1u << 30); // beyond the data: a hostile or broken entry
  auto replayed = flat(linkd::replayOutput(result, PathMapper()));
  std::vector<std::pair<bool, std::string>> want = {{false, "map\n"},
                                                    {true, "warning\n"}};
  EXPECT_EQ(replayed, want);
  result.mutable_output_order(0)->set_size(3); // covers too little
  EXPECT_EQ(flat(linkd::replayOutput(result, PathMapper())), want);
}

} // namespace
