// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One way to run a link child, for the three paths that do: the local link
// (service/link_request.cpp), the kernel link (service/kernel_link.cpp) and
// the farm node's link (farm_node/farm_service.cpp). The runner makes the
// child's channels, sends the request to the zygote, pumps everything the
// child writes until it is done, and ends it one way: a child stopped by the
// caller is asked to stop as Ctrl-C asks stock LLD (SIGINT, on which LLVM
// removes the output it is writing) and killed if it has not within a
// second; a child that sent its report (lib/child/child_report.h) is
// answered from it, and a reusable worker goes back to its zygote. A spawn
// that failed before LLD ran (a zygote that died since the last link) is
// retried once on fresh channels.
//
// What differs between the paths is the caller's: the request and the
// channels (sandboxed, recorded, reusable), and what is made of what the
// child writes (ChildHooks).
#pragma once

#include "daemon/linkd/runner/zygote_client.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace linkd {

// Which channels a link child gets beside its stdout and stderr.
struct ChildChannels {
  bool records = false;  // it reports its file accesses
  bool sandbox = false;  // it asks its file-system questions (needs records)
  bool ordered = true;   // its stdout and stderr arrive as ordered records
  bool reusable = false; // it may be a reusable worker (needs ordered)
};

// What the caller makes of the child's writes. Any hook may be empty; a hook
// that returns false stops the link (the runner then ends the child).
struct ChildHooks {
  // A piece of the child's stdout or stderr, in the order written;
  // consecutive pieces of one stream in one read come as one.
  std::function<bool(bool isStderr, std::string_view data)> output;
  // Access records as they arrive (daemon/linkd-lld/access_recorder.h),
  // and, after a child that was stopped or died of a signal, the rest.
  std::function<void(std::string_view records)> records;
  // One question of a sandboxed child (lib/child/sandbox_protocol.h):
  // answer it now or later through ChildRunner::answer().
  std::function<bool(std::string_view question)> question;
  // A descriptor of the caller's, polled beside the child's, and what to do
  // when it is readable (the farm node's messages from its client).
  int extraFd = -1;
  std::function<bool()> extraReadable;
  // Every turn of the pump, at least every 100 ms: deadlines, cancellation.
  std::function<bool()> tick;
};

// How one link child ran.
struct ChildRun {
  std::string error;      // its channels could not be made: it never ran
  bool stopped = false;   // it was ended before it was done
  std::string stopReason; // the pump's own ("" when a hook stopped it)
  int pid = -1;           // -1 if it never started
  ChildExit exit;
  std::optional<ChildReport> report; // its own, sent before it exited
  std::chrono::steady_clock::time_point spawned;  // the request was sent
  std::chrono::steady_clock::time_point pumped;   // the pump ended
  std::chrono::steady_clock::time_point reported; // its report arrived
  int64_t spawnedFileClockNs = 0; // `spawned` on the file clock (file_time.h)
};

class ChildRunner {
public:
  // `label` names the link in the runner's log lines ("link id=7").
  ChildRunner(ZygoteClient &zygote, ChildChannels channels, std::string label);
  ChildRunner(const ChildRunner &) = delete;
  ChildRunner &operator=(const ChildRunner &) = delete;

  // Runs `request` in a link child until it is done or a hook stops it.
  ChildRun run(const v1::LinkRequest &request, ChildHooks &hooks);

  // Answers the sandboxed child's open question; for hooks while run()
  // pumps (no-op otherwise).
  void answer(std::string_view reply) const;

private:
  struct Pipes;
  ChildRun attempt(const v1::LinkRequest &request, ChildHooks &hooks);
  bool pump(Pipes &p, ChildHooks &hooks, ChildRun &run);
  void end(Pipes &p, ChildHooks &hooks, ZygoteClient::Spawned &child,
           ChildRun &run);

  ZygoteClient &zygote;
  ChildChannels channels;
  std::string label;
  int sandboxFd = -1; // the daemon's end while run() pumps
};

} // namespace linkd
