// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One request's log lines at the level its client asked for.
//
// The daemon logs at its own level (log_level, LINKD_LOG when it started). A
// client with LINKD_LOG=debug in its environment wants to see why *its* link
// missed, without restarting the daemon: the request carries the client's
// LINKD_LOG, and its lines (the miss reason, what was stored, trace's
// inputs) are written at that level, straight to the daemon's sinks, while
// every other request's stay at the daemon's. A quieter level (warn) also
// quiets that request's lines.
#pragma once

#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include <string>

namespace linkd {

class RequestLog {
public:
  RequestLog() : level(spdlog::get_level()) {}
  // `name`: the client's LINKD_LOG; empty or unknown: the daemon's level.
  explicit RequestLog(const std::string &name) : RequestLog() {
    if (name.empty())
      return;
    auto l = spdlog::level::from_str(name);
    if (l != spdlog::level::off || name == "off")
      level = l;
  }

  // Whether a line at `l` is written (worth formatting).
  bool on(spdlog::level::level_enum l) const {
    return l >= level && level != spdlog::level::off;
  }
  // False when the request's level is the daemon's (no need to say so).
  bool ownLevel() const { return level != spdlog::get_level(); }

  template <typename... Args>
  void log(spdlog::level::level_enum l, spdlog::format_string_t<Args...> fmt,
           Args &&...args) const {
    if (!on(l))
      return;
    spdlog::logger *logger = spdlog::default_logger_raw();
    if (logger->should_log(l)) {
      logger->log(l, fmt, std::forward<Args>(args)...);
      return;
    }
    // Below the daemon's level: past the logger's filter, to its sinks.
    spdlog::memory_buf_t buf;
    fmt::vformat_to(fmt::appender(buf), fmt,
                    fmt::make_format_args(std::forward<Args>(args)...));
    spdlog::details::log_msg msg(logger->name(), l,
                                 spdlog::string_view_t(buf.data(), buf.size()));
    for (auto &sink : logger->sinks())
      if (sink->should_log(l))
        sink->log(msg);
    logger->flush();
  }

private:
  spdlog::level::level_enum level;
};

} // namespace linkd
