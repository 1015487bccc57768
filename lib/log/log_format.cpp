// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "log/log_format.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>

#include <unistd.h>

#include <cstdio>
#include <vector>

namespace linkd {
namespace {

// The length of the well-formed UTF-8 sequence at s[i] (1 for ASCII), or 0.
size_t utf8Length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = at(i);
  if (c < 0x80)
    return 1;
  size_t n = c >= 0xC2 && c <= 0xDF   ? 2
             : c >= 0xE0 && c <= 0xEF ? 3
             : c >= 0xF0 && c <= 0xF4 ? 4
                                      : 0;
  if (n == 0 || i + n > s.size())
    return 0;
  for (size_t k = 1; k < n; ++k)
    if ((at(i + k) & 0xC0) != 0x80)
      return 0;
  unsigned char c1 = at(i + 1);
  // Overlong forms, UTF-16 surrogates, beyond U+10FFFF.
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) ||
      (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
    return 0;
  return n;
}

// A character a line must not show as it is: C1 controls (U+0080-U+009F)
// and the line and paragraph separators (U+2028, U+2029), which some
// viewers break lines at.
bool breaksLines(std::string_view s, size_t i, size_t n) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  return (n == 2 && at(i) == 0xC2 && at(i + 1) < 0xA0) ||
         (n == 3 && at(i) == 0xE2 && at(i + 1) == 0x80 &&
          (at(i + 2) == 0xA8 || at(i + 2) == 0xA9));
}

void appendHex(std::string &out, unsigned char c) {
  static const char digits[] = "0123456789abcdef";
  out += "\\x";
  out += digits[c >> 4];
  out += digits[c & 15];
}

// `s` escaped into `out`; `quoteMarks`: \ and " too (a quoted value).
void appendEscaped(std::string &out, std::string_view s, bool quoteMarks) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      appendHex(out, c);
      ++i;
    } else if (quoteMarks && (c == '\\' || c == '"')) {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (size_t n = utf8Length(s, i); n == 0) {
      appendHex(out, c); // not UTF-8
      ++i;
    } else if (breaksLines(s, i, n)) {
      for (size_t k = 0; k < n; ++k)
        appendHex(out, static_cast<unsigned char>(s[i + k]));
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
}

// A value that needs no quotes: printable ASCII, no space, quote, backslash.
bool plainToken(std::string_view s) {
  if (s.empty())
    return false;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7F || c == '"' || c == '\\')
      return false;
  }
  return true;
}

void appendJsonString(std::string &out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += '"';
}

bool keyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

// The message with its bytes escaped, in a copy of `msg` that points at it.
struct EscapedMessage {
  explicit EscapedMessage(const spdlog::details::log_msg &m)
      : text(escapeLogLine(
            std::string_view(m.payload.data(), m.payload.size()))),
        msg(m) {
    msg.payload = spdlog::string_view_t(text.data(), text.size());
  }
  std::string text;
  spdlog::details::log_msg msg;
};

// time level pid=PID message
class TextFormatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg &m,
              spdlog::memory_buf_t &dest) override {
    EscapedMessage e(m);
    line.format(e.msg, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<TextFormatter>();
  }

private:
  spdlog::pattern_formatter line{"%Y-%m-%dT%H:%M:%S.%e %l pid=%P %v"};
};

// {"time":...,"level":...,"pid":...,"msg":...,<the message's fields>}
class JsonFormatter final : public spdlog::formatter {
public:
  void format(const spdlog::details::log_msg &m,
              spdlog::memory_buf_t &dest) override {
    spdlog::memory_buf_t when;
    time.format(m, when);
    EscapedMessage e(m);
    std::string out = "{\"time\":";
    appendJsonString(out, std::string_view(when.data(), when.size()));
    out += ",\"level\":";
    auto level = spdlog::level::to_string_view(m.level);
    appendJsonString(out, std::string_view(level.data(), level.size()));
    out += ",\"pid\":" + std::to_string(getpid()) + ",\"msg\":";
    appendJsonString(out, e.text);
    if (std::string fields = logFieldsAsJson(e.text); !fields.empty())
      out += ',' + fields;
    out += "}\n";
    dest.append(out.data(), out.data() + out.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

private:
  spdlog::pattern_formatter time{"%Y-%m-%dT%H:%M:%S.%e%z",
                                 spdlog::pattern_time_type::local, ""};
};

} // namespace

std::string quoteLogValue(std::string_view s, bool always) {
  if (!always && plainToken(s))
    return std::string(s);
  std::string out = "\"";
  appendEscaped(out, s, true);
  out += '"';
  return out;
}

std::string escapeLogLine(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  appendEscaped(out, s, false);
  return out;
}

std::string logFieldsAsJson(std::string_view s) {
  // The fields the line itself has: "time", "level", "pid", "msg" are the
  // formatter's; a message field by one of those names is "field_NAME".
  std::string out;
  std::vector<std::string> seen = {"time", "level", "pid", "msg"};
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ')
      ++i;
    size_t start = i;
    while (i < s.size() && keyChar(s[i]))
      ++i;
    bool field = i > start && i < s.size() && s[i] == '=';
    std::string_view key = s.substr(start, i - start);
    if (!field) {
      while (i < s.size() && s[i] != ' ')
        ++i;
      continue;
    }
    ++i; // '='
    std::string_view value;
    if (i < s.size() && s[i] == '"') {
      size_t open = ++i;
      while (i < s.size() && s[i] != '"')
        i += s[i] == '\\' && i + 1 < s.size() ? 2 : 1;
      value = s.substr(open, std::min(i, s.size()) - open);
      if (i < s.size())
        ++i; // the closing quote
    } else {
      size_t open = i;
      while (i < s.size() && s[i] != ' ')
        ++i;
      value = s.substr(open, i - open);
    }
    std::string name(key);
    if (name == "time" || name == "level" || name == "pid" || name == "msg")
      name = "field_" + name;
    bool repeated = false;
    for (const std::string &k : seen)
      repeated = repeated || k == name;
    if (repeated)
      continue;
    seen.push_back(name);
    if (!out.empty())
      out += ',';
    appendJsonString(out, name);
    out += ':';
    appendJsonString(out, value);
  }
  return out;
}

std::unique_ptr<spdlog::formatter> makeLogFormatter(std::string_view format) {
  if (format == "json")
    return std::make_unique<JsonFormatter>();
  return std::make_unique<TextFormatter>();
}

} // namespace linkd
