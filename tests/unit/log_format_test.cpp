// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Log lines (lib/log/log_format.h): client strings quoted and
// escaped as field values, whole messages kept to one line of UTF-8, and the
// JSON form's fields read back from the text.
#include "log/log_format.h"

#include <gtest/gtest.h>

namespace linkd {
namespace {

TEST(LogFormat, PlainTokensStayBare) {
  EXPECT_EQ(quoteLogValue("/home/u/build/out.so"), "/home/u/build/out.so");
  EXPECT_EQ(fmt::format("cwd={}", logText("/a/b")), "cwd=/a/b");
  EXPECT_EQ(quoteLogValue(""), "\"\"");
  EXPECT_EQ(quoteLogValue("x", true), "\"x\"");
}

TEST(LogFormat, EverythingElseIsQuotedAndEscaped) {
  EXPECT_EQ(quoteLogValue("a b"), "\"a b\"");
  EXPECT_EQ(quoteLogValue("a\nb\r\tc"), "\"a\\nb\\r\\tc\"");
  EXPECT_EQ(quoteLogValue(std::string("n\0l", 3)), "\"n\\x00l\"");
  EXPECT_EQ(quoteLogValue("\x1b[31m\x7f"), "\"\\x1b[31m\\x7f\"");
  EXPECT_EQ(quoteLogValue("q\"\\"), "\"q\\\"\\\\\"");
  // UTF-8 stays; what is not UTF-8 (a lone lead, a stray continuation,
  // an overlong '/', a surrogate) is escaped byte by byte.
  EXPECT_EQ(quoteLogValue("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(quoteLogValue("\xc3(\x80\xc0\xaf\xed\xa0\x80"),
            "\"\\xc3(\\x80\\xc0\\xaf\\xed\\xa0\\x80\"");
  // C1 controls and the line and paragraph separators break lines in
  // some viewers.
  EXPECT_EQ(quoteLogValue("\xc2\x85\xe2\x80\xa8\xe2\x80\xa9"),
            "\"\\xc2\\x85\\xe2\\x80\\xa8\\xe2\\x80\\xa9\"");
}

TEST(LogFormat, AWholeLineKeepsQuotesAndBackslashes) {
  EXPECT_EQ(escapeLogLine("x=\"a\\nb\" y\nz\x01"), "x=\"a\\nb\" y\\nz\\x01");
}

TEST(LogFormat, JsonFieldsAreTheLinesKeyValueWords) {
  std::string line = "link id=7 flavor=elf pid=123 ok cache=miss "
                     "reason=\"no manifest; \\\"x\\\"\" cwd=\"/a b\" argc=3";
  EXPECT_EQ(logFieldsAsJson(line),
            "\"id\":\"7\",\"flavor\":\"elf\",\"field_pid\":\"123\","
            "\"cache\":\"miss\",\"reason\":\"no manifest; \\\\\\\"x\\\\\\\"\","
            "\"cwd\":\"/a b\",\"argc\":\"3\"");
  EXPECT_EQ(logFieldsAsJson("removed 3 temporaries"), "");
  EXPECT_EQ(logFieldsAsJson("a=1 a=2"), "\"a\":\"1\"");
}

} // namespace
} // namespace linkd
