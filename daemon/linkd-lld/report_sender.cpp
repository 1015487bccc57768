// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/report_sender.h"

#include "child/child_report.h"
#include "daemon/linkd-lld/ordered_writer.h"
#include "daemon/linkd-lld/proc_entries.h"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace linkd::child_report {
namespace {

// Process-global by necessity (see the header). Written by the child's
// main thread, except outputNs (LLD renames on its main thread too).
ChildReport gReport;
bool gSent = false;
pid_t gPid = 0; // a process the tool forks must not report for it
long gFaultsAtRequest = 0;
uint64_t gUserAtRequest = 0; // a reused worker's CPU before this link
uint64_t gSysAtRequest = 0;
char gOutput[4096] = {};

int64_t monotonicNanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint64_t micros(const timeval &tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000000 +
         static_cast<uint64_t>(tv.tv_usec);
}

} // namespace

void noteRequest(bool prestarted, uint32_t linksBefore) {
  gReport = ChildReport{};
  gSent = false;
  gOutput[0] = '\0';
  gReport.requestNs = monotonicNanos();
  gReport.prestarted = prestarted ? 1 : 0;
  gReport.linksBefore = linksBefore;
  gPid = getpid();
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    gFaultsAtRequest = ru.ru_minflt + ru.ru_majflt;
    gUserAtRequest = micros(ru.ru_utime);
    gSysAtRequest = micros(ru.ru_stime);
  }
}

void noteTool() { gReport.toolNs = monotonicNanos(); }

void noteOutput(const char *to) {
  if (gReport.requestNs == 0)
    return;
  gReport.outputNs = monotonicNanos();
  size_t n = std::strlen(to);
  if (n < sizeof(gOutput))
    std::memcpy(gOutput, to, n + 1);
  else
    gOutput[0] = '\0';
}

const char *lastOutput() { return gOutput; }

bool sendOnExit(int status) {
  if (gSent || gReport.requestNs == 0 || getpid() != gPid)
    return false;
  gSent = true;
  int saved = errno;
  gReport.status = status;
  gReport.exitNs = monotonicNanos();
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    gReport.userMicros = micros(ru.ru_utime) - gUserAtRequest;
    gReport.sysMicros = micros(ru.ru_stime) - gSysAtRequest;
    gReport.maxRssKib = static_cast<uint64_t>(ru.ru_maxrss);
    gReport.faults = ru.ru_minflt + ru.ru_majflt - gFaultsAtRequest;
  }
  bool written = writeOrderedReport(encodeChildReport(gReport));
  errno = saved;
  return written;
}

void yieldTheExit() {
  sched_param none{};
  if (!forEachNumberedEntry("/proc/self/task", [&](int tid, int) {
        sched_setscheduler(tid, SCHED_IDLE, &none);
      }))
    sched_setscheduler(0, SCHED_IDLE, &none);
}

} // namespace linkd::child_report
