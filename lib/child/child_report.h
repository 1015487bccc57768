// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a link child tells the daemon about itself on its way out: the exit
// status it is about to exit with, its resource usage, and when it reached
// each phase of its life. It is the last record on the ordered output
// channel (lib/child/ordered_output.h, stream kReportStream), written after
// every other record and after the access records were flushed.
//
// Why: a child's exit is not free. Tearing down the address space of a
// hello-world link, then the zygote's SIGCHLD, wait4 and its Exited frame,
// cost ~1 ms of wall time before the pipes close and the daemon learns the
// status. With the report the daemon answers the client as soon as LLD has
// written the output and said how it ends; the reaping happens after.
// A child that dies by a signal sends no report: the daemon then waits for
// the pipes and the reap, as before.
//
// Times are CLOCK_MONOTONIC nanoseconds (the daemon's steady_clock), so the
// daemon can put its own points on the same line. Header-only, free of LLVM
// and gRPC: both sides include it.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

struct ChildReport {
  int32_t status = 0;      // the argument of _exit
  uint32_t prestarted = 0; // 1: a pre-forked child (zygote.h) ran it
  uint32_t linksBefore = 0; // links its process served before this one
  uint32_t reserved = 0;
  int64_t requestNs = 0;   // the child has its request (after fork or wait)
  int64_t toolNs = 0;      // LLD (or the archiver, the rewriter) starts
  int64_t outputNs = 0;    // its last rename (the output committed); 0: none
  int64_t exitNs = 0;      // _exit called
  int64_t faults = 0;      // page faults from the request to _exit
  uint64_t userMicros = 0; // CPU time from the request to _exit
  uint64_t sysMicros = 0;
  uint64_t maxRssKib = 0;  // the process's peak
};

inline constexpr size_t kChildReportSize = 16 + 5 * 8 + 3 * 8;

inline std::string encodeChildReport(const ChildReport &r) {
  std::string s(kChildReportSize, '\0');
  char *p = s.data();
  auto put = [&p](const auto &v) {
    std::memcpy(p, &v, sizeof(v));
    p += sizeof(v);
  };
  put(r.status);
  put(r.prestarted);
  put(r.linksBefore);
  put(r.reserved);
  put(r.requestNs);
  put(r.toolNs);
  put(r.outputNs);
  put(r.exitNs);
  put(r.faults);
  put(r.userMicros);
  put(r.sysMicros);
  put(r.maxRssKib);
  return s;
}

inline std::optional<ChildReport> decodeChildReport(std::string_view s) {
  if (s.size() != kChildReportSize)
    return std::nullopt;
  ChildReport r;
  const char *p = s.data();
  auto get = [&p](auto &v) {
    std::memcpy(&v, p, sizeof(v));
    p += sizeof(v);
  };
  get(r.status);
  get(r.prestarted);
  get(r.linksBefore);
  get(r.reserved);
  get(r.requestNs);
  get(r.toolNs);
  get(r.outputNs);
  get(r.exitNs);
  get(r.faults);
  get(r.userMicros);
  get(r.sysMicros);
  get(r.maxRssKib);
  return r;
}

// The report a child sent (`s`, as read off the ordered channel), if it is
// one and says how the child exits: an _exit status 0-255. Anything else
// (nothing sent, a malformed record) leaves the daemon to wait for the reap.
inline std::optional<ChildReport> decodeExitReport(std::string_view s) {
  if (s.empty())
    return std::nullopt;
  std::optional<ChildReport> r = decodeChildReport(s);
  if (!r || r->status < 0 || r->status > 255)
    return std::nullopt;
  return r;
}

} // namespace linkd
