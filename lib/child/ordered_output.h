// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The ordered output channel between a link child and the daemon: every
// write the tool makes to its stdout or stderr, in the order it made them.
//
// Two pipes (one per stream) lose the order between the streams: the daemon
// sees two readable pipes and cannot tell which was written first, and the
// user's `> out 2>&1` then differs from stock (LLD flushes a map file's lines
// before it reports an error). So the child sends both streams through one
// pipe as records, each one write(2) of at most PIPE_BUF bytes (atomic, so
// LLD's threads and a crash handler never tear a record): a stream byte (1 or
// 2), a zero byte, the payload length (u16, little-endian), the payload.
// Longer writes become several records, in order. What bypasses the
// interposed write (a raw system call, glibc's own messages) still arrives
// on the plain stdout/stderr pipes, without an order against the records.
// The child's last record may be its report (stream kReportStream,
// lib/child/child_report.h): its exit status, before it exits.
// Header-only and free of LLVM and gRPC: both sides include it.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace linkd::ordered {

constexpr int kChildFd = 5;         // the channel's fd in the link child
constexpr int kReportStream = 3;    // the child's report, not output
constexpr size_t kHeader = 4;       // stream, 0, u16 length
constexpr size_t kRecordMax = PIPE_BUF;
constexpr size_t kPayloadMax = kRecordMax - kHeader;

// Splits a byte stream read from the channel into (stream, payload) records.
// Bytes of an incomplete record wait in `pending` for the next read.
class Reader {
public:
  // Calls `emit(int stream, std::string_view payload)` for each complete
  // output record in pending + data; a report is kept (report()). False on
  // a malformed record (the rest is then dropped: the child is not linkd's
  // own any more).
  template <typename Emit> bool feed(std::string_view data, Emit &&emit) {
    pending.append(data);
    size_t off = 0;
    bool ok = true;
    while (pending.size() - off >= kHeader) {
      auto stream = static_cast<unsigned char>(pending[off]);
      size_t len = static_cast<unsigned char>(pending[off + 2]) |
                   static_cast<size_t>(
                       static_cast<unsigned char>(pending[off + 3]))
                       << 8;
      if ((stream != 1 && stream != 2 && stream != kReportStream) ||
          pending[off + 1] != 0 || len > kPayloadMax) {
        ok = false;
        off = pending.size();
        break;
      }
      if (pending.size() - off - kHeader < len)
        break;
      std::string_view payload =
          std::string_view(pending).substr(off + kHeader, len);
      if (stream == kReportStream)
        report_.assign(payload);
      else
        emit(static_cast<int>(stream), payload);
      off += kHeader + len;
    }
    pending.erase(0, off);
    return ok;
  }
  bool incomplete() const { return !pending.empty(); }
  // The child's report (child_report.h), once it arrived; empty before.
  const std::string &report() const { return report_; }

private:
  std::string pending;
  std::string report_;
};

} // namespace linkd::ordered
