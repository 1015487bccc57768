// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// How a line of linkd.log is written: `text` (the time, the level, pid=, then
// the message's key=value fields) or `json` (log_format = json: one JSON
// object a line with the same fields, for log shippers).
//
// Much of what a line says comes from clients: a cwd, an output path, a miss
// reason naming an input, a rewrite spec's error. None of it may forge a
// line, hide in one, or make the file binary (grep gave up on a NUL). Two
// layers see to that:
//   - A client string is logged as logText(s): bare when it is a plain
//     token, else "quoted", with \" \\ \n \r \t and \xNN for every other
//     control byte, DEL, C1 control, line or paragraph separator and byte
//     that is not UTF-8. A field's value then ends where it seems to: a cwd
//     with a space and "rc=0" in it cannot pass for a second field.
//   - The formatter escapes the same bytes (all but \ and ") in the whole
//     message, whatever a caller forgot: every record is one line of UTF-8.
// The JSON formatter reads the fields back from that one line: `key=value`
// words (a quoted value as written there, escapes and all), beside "time",
// "level", "pid" (the daemon's, as text's pid=) and the whole message as
// "msg"; a message field by one of those four names is "field_NAME" (a
// link's child: "field_pid").
#pragma once

#include <fmt/format.h>
#include <spdlog/formatter.h>

#include <memory>
#include <string>
#include <string_view>

namespace linkd {

// A client-supplied string as a log field's value: `cwd={}`, logText(cwd).
struct LogText {
  std::string_view text;
};
inline LogText logText(std::string_view s) { return {s}; }

// `s` as a field value: bare, or quoted and escaped (above); `always`:
// quoted even when it is a plain token.
std::string quoteLogValue(std::string_view s, bool always = false);
// `s` with the bytes a line may not hold escaped (all but \ and ").
std::string escapeLogLine(std::string_view s);
// The fields of an escaped message, as a JSON object's members (without the
// braces): "key":"value",... in their order; a repeated key once.
std::string logFieldsAsJson(std::string_view message);

// The formatter for log_format `format` ("text" or "json"; else text).
std::unique_ptr<spdlog::formatter> makeLogFormatter(std::string_view format);

} // namespace linkd

template <>
struct fmt::formatter<linkd::LogText> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(const linkd::LogText &t, Context &ctx) const {
    return fmt::formatter<std::string_view>::format(
        linkd::quoteLogValue(t.text), ctx);
  }
};
