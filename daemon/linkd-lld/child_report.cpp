#include "daemon/linkd-lld/child_report.h"

#include "child/child_report.h"
#include "daemon/linkd-lld/ordered_output.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

namespace linkd::child_report {
namespace {

// Process-global by necessity (see the header). Written by the child's
// main thread, except outputNs (LLD renames on its main thread too).
ChildReport gReport;
bool gSent = false;
pid_t gPid = 0; // a process the tool forks must not report for it
long gFaultsAtRequest = 0;

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

void noteRequest(bool prestarted) {
  gReport.requestNs = monotonicNanos();
  gReport.prestarted = prestarted ? 1 : 0;
  gPid = getpid();
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    gFaultsAtRequest = ru.ru_minflt + ru.ru_majflt;
}

void noteTool() { gReport.toolNs = monotonicNanos(); }

void noteOutput() {
  if (gReport.requestNs != 0)
    gReport.outputNs = monotonicNanos();
}

void sendOnExit(int status) {
  if (gSent || gReport.requestNs == 0 || getpid() != gPid)
    return;
  gSent = true;
  int saved = errno;
  gReport.status = status;
  gReport.exitNs = monotonicNanos();
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    gReport.userMicros = micros(ru.ru_utime);
    gReport.sysMicros = micros(ru.ru_stime);
    gReport.maxRssKib = static_cast<uint64_t>(ru.ru_maxrss);
    gReport.faults = ru.ru_minflt + ru.ru_majflt - gFaultsAtRequest;
  }
  writeOrderedReport(encodeChildReport(gReport));
  errno = saved;
}

} // namespace linkd::child_report
