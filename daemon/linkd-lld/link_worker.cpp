// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/link_worker.h"

#include "child/frame.h"
#include "daemon/linkd-lld/access_recorder.h"
#include "daemon/linkd-lld/bitcode_probe.h"
#include "daemon/linkd-lld/code_pages.h"
#include "daemon/linkd-lld/link_child.h"
#include "daemon/linkd-lld/lld_entry.h"
#include "daemon/linkd-lld/ordered_writer.h"
#include "daemon/linkd-lld/proc_entries.h"
#include "daemon/linkd-lld/report_sender.h"
#include "daemon/linkd-lld/sandbox_child.h"
#include "daemon/linkd-lld/state_record_child.h"
#include "link/flavor.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace linkd {
namespace {

// Links a worker serves before it makes way for a fresh one: a bound on
// whatever LLVM keeps growing across links (interned strings, caches).
constexpr uint32_t kMaxLinksPerWorker = 1000;
// A worker whose resident memory is above this after its link (a big
// link's heap, which glibc would keep after LLD's clean-up) is not kept.
constexpr long kMaxIdleResidentKib = 384 << 10;
// An idle worker gives its free heap and code pages back after this long.
constexpr int kTrimAfterIdleMs = 5000;

// Options, in either spelling (-x or --x, =value or a separate value), that
// set state destroy() does not reset, or that are rare enough not to trust:
// LLVM's own options and LTO (codegen state), the time-trace profiler, the
// reproduce tarball, the thread pool's size, the linker plugin's options.
constexpr std::array<std::string_view, 10> kOptionPrefixes = {
    "mllvm",      "plugin",    "lto",           "thinlto",
    "time-trace", "reproduce", "threads",       "fat-lto-objects",
    "save-temps", "flavor"};

// Variables that change how the tool runs (lld_entry.cpp, LLD's driver).
constexpr std::array<std::string_view, 4> kEnvironment = {
    "LLD_REPRODUCE", "LLD_IN_TEST", "FORCE_LLD_DIAGNOSTICS_CRASH",
    "LLD_VERSION"};

// ELF machines and classes whose LLD 19 target state is per link
// (docs/design.md). Each target object is built by the first link of its
// machine in the process and its base class takes the GOT entry size from
// that link's word size: x86-64 sets 8 itself (x32 too), i386 is only
// ELF32, but AMDGPU has both classes (r600 is ELF32) and sets none, so an
// r600 link would leave 4-byte GOT entries for the amdgcn links after it.
struct ReusableTarget {
  uint16_t machine;
  unsigned char elfClass; // 0: either
};
constexpr std::array<ReusableTarget, 3> kTargets = {{
    {62 /* EM_X86_64 */, 0},
    {3 /* EM_386 */, 0},
    {224 /* EM_AMDGPU */, 2 /* ELFCLASS64 */},
}};

// What GCC's collect2 passes for its LTO plugin, which LLD 19 ignores
// (ELF/Options.td: "plugin", "plugin-opt=-fresolution=",
// "plugin-opt=-pass-through=", and a "plugin-opt=" naming lto-wrapper,
// Driver.cpp): no LLVM option, no LTO state. Without them no link that gcc
// drives (gcc -B, -fuse-ld=lld) would ever run in a used worker.
bool gccPluginOption(std::string_view name) {
  if (name == "plugin" || name.starts_with("plugin="))
    return true;
  if (!name.starts_with("plugin-opt="))
    return false;
  std::string_view v = name.substr(11);
  if (v.starts_with("-fresolution=") || v.starts_with("-pass-through="))
    return true;
  return !v.starts_with("-") && v.find('=') == v.npos &&
         (v.ends_with("lto-wrapper") || v.ends_with("lto-wrapper.exe"));
}

std::string_view optionName(std::string_view a) {
  if (a.starts_with("--"))
    return a.substr(2);
  if (a.starts_with("-"))
    return a.substr(1);
  return {};
}

// -m i386pep, -mthumb2pe, ... (LLD's isPETarget): the MinGW driver, not
// the ELF one.
bool peTarget(std::string_view a, std::string_view next) {
  std::string_view emulation = a == "-m" ? next
                               : a.starts_with("-m") ? a.substr(2)
                                                     : std::string_view();
  return emulation.ends_with("pe") || emulation.ends_with("pep");
}

// The ELF machine and class of the file at `path`, {0, 0} if it is not an
// ELF file.
ReusableTarget elfTarget(const char *path) {
  int fd = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0)
    return {0, 0};
  unsigned char h[20] = {};
  long n = syscall(SYS_pread64, fd, h, sizeof(h), 0);
  syscall(SYS_close, fd);
  if (n != sizeof(h) || std::memcmp(h, "\x7f" "ELF", 4) != 0)
    return {0, 0};
  uint16_t machine = h[5] == 2 ? static_cast<uint16_t>(h[18] << 8 | h[19])
                               : static_cast<uint16_t>(h[19] << 8 | h[18]);
  return {machine, h[4]};
}

size_t threadCount() {
  size_t n = 0;
  forEachNumberedEntry("/proc/self/task", [&](int, int) { ++n; });
  return n;
}

// The threads a worker has between links: the main thread and
// llvm::parallel's whole pool. Computed, not counted: the pool's first
// thread starts the others in the background, and a count taken right after
// prepareForLink saw 4-6 of 17 with 16 threads, which would never match
// again after a link (on a machine with many cores no worker would be
// reused). A pool of one is no pool: LLVM runs its loops on the caller.
size_t workerThreadCount() {
  unsigned pool = toolThreadPoolSize();
  return pool > 1 ? 1 + pool : 1;
}

// Only what a waiting worker holds: stdio, the journal, its socket (and the
// directory being read).
bool onlyWorkerDescriptors() {
  bool clean = true;
  bool read = forEachNumberedEntry("/proc/self/fd", [&](int fd, int dirFd) {
    clean = clean && (fd <= STDERR_FILENO || fd == kJournalFdNumber ||
                      fd == kWorkerFdNumber || fd == dirFd);
  });
  return read && clean;
}

long residentKib() {
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/statm",
                                    O_RDONLY | O_CLOEXEC));
  if (fd < 0)
    return -1;
  char buf[128] = {};
  long n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
  syscall(SYS_close, fd);
  long size = 0, resident = -1;
  if (n <= 0 || std::sscanf(buf, "%ld %ld", &size, &resident) != 2)
    return -1;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Whether this worker may wait for another link, now that its link ended
// well and its report went out.
bool linkLeftItReusable(const WorkerLld &lld, size_t baseThreads,
                        uint32_t served, ReusableTarget out) {
  // A big link's heap stays with glibc after destroy: such a worker exits
  // rather than pay for the clean-up of what it would not keep.
  if (served + 1 >= kMaxLinksPerWorker || sawBitcode() || readsRedirected() ||
      !lld.streamsHealthy() || threadCount() != baseThreads ||
      residentKib() > kMaxIdleResidentKib)
    return false;
  for (const ReusableTarget &t : kTargets)
    if (t.machine == out.machine &&
        (t.elfClass == 0 || t.elfClass == out.elfClass))
      return true;
  return false;
}

// The link's descriptors go: the daemon's pipes see their end.
void closeLinkChannels() {
  int null = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC));
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd)
    if (null >= 0)
      dup2(null, fd);
  if (null > STDERR_FILENO)
    close(null);
  for (int fd = kRecordFdNumber; fd < kJournalFdNumber; ++fd)
    close(fd);
}

// Waits for the zygote's next frame. A worker that waited a while gives
// back its free heap and its code pages (the next link faults in the code
// it needs again: ~400 faults for a hello world, which a link that comes
// after a pause can afford).
bool awaitRequest(Frame &frame, bool idle) {
  if (idle) {
    pollfd p{kWorkerFdNumber, POLLIN, 0};
    if (poll(&p, 1, kTrimAfterIdleMs) == 0) {
      malloc_trim(0);
      dropCodePages();
    }
  }
  return recvFrame(kWorkerFdNumber, frame) == FrameStatus::Ok;
}

// The spare's socket at its fixed number, out of the journal's way.
void placeWorkerSocket(int fd, int &journalFd) {
  if (journalFd == kWorkerFdNumber)
    journalFd = fcntl(journalFd, F_DUPFD_CLOEXEC, kWorkerFdNumber + 1);
  if (fd != kWorkerFdNumber) {
    dup2(fd, kWorkerFdNumber);
    close(fd);
  }
}

} // namespace

bool mayRunInWorker(const v1::LinkRequest &req) {
  if (static_cast<Flavor>(req.flavor()) != Flavor::Elf ||
      req.has_rewrite_plan() || req.more_rewrite_plans_size() > 0 ||
      req.has_stdin_data() || req.argv_size() < 1 || req.has_incremental_plan())
    return false;
  for (std::string_view name : kEnvironment)
    if (req.env().count(std::string(name)) != 0)
      return false;
  for (int i = 1; i < req.argv_size(); ++i) {
    std::string_view a = req.argv(i);
    std::string_view next;
    if (i + 1 < req.argv_size())
      next = req.argv(i + 1);
    if (a.starts_with("@") || peTarget(a, next))
      return false;
    std::string_view name = optionName(a);
    if (gccPluginOption(name)) {
      i += name == "plugin" ? 1 : 0; // its value: the plugin's path
      continue;
    }
    for (std::string_view prefix : kOptionPrefixes)
      if (name.starts_with(prefix))
        return false;
  }
  return true;
}

void serveLinks(int fd, pid_t zygotePid, int journalFd) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != zygotePid)
    _exit(1);
  prctl(PR_SET_NAME, "linkd-spare");
  placeWorkerSocket(fd, journalFd);
  prepareForLink();
  // A daemon setting, from the zygote's environment (a worker's is the last
  // client's); the audit's state record is a fresh child's job.
  audit::RecordPolicy records = stateRecordPolicy();
  size_t baseThreads = workerThreadCount();
  WorkerLld lld;
  for (uint32_t served = 0;; ++served) {
    Frame frame;
    if (!awaitRequest(frame, served > 0))
      _exit(0); // the zygote closed it: no longer wanted
    child_report::noteRequest(/*prestarted=*/true, served);
    prctl(PR_SET_NAME, "linkd-lld");
    v1::LinkRequest req;
    LinkChannels ch;
    if (!channelsOf(frame, journalFd, ch) ||
        !req.ParseFromString(frame.payload))
      _exit(125);
    // The zygote sends SpawnReusable only for links that mayRunInWorker.
    // A link that gets a record exits with it (the exit hook).
    bool reusable = frame.kind == FrameKind::SpawnReusable &&
                    !(ch.recordFd >= 0 &&
                      !audit::stateRecordMapOption(
                           records, static_cast<Flavor>(req.flavor()),
                           {req.argv().begin(), req.argv().end()}, req.cwd(),
                           audit::environmentAddsToTheLink(
                               [&](const char *n) -> const char * {
                                 auto it = req.env().find(n);
                                 return it == req.env().end()
                                            ? nullptr
                                            : it->second.c_str();
                               }),
                           "m")
                           .empty());
    if (!reusable)
      becomeLinker(req, ch);
    ch.keepWorkerFd = true;
    setUpLinkChild(req, ch);
    journalFd = journalFd >= 0 ? kJournalFdNumber : -1;
    lld.link(lldInvocation(req, ch, audit::RecordPolicy::Off));
    // Status 0 (errors end the process in lld.link), in _exit's order: the
    // records, then the report, on which the daemon answers.
    endLinkRecording(0);
    // A sandboxed link's output is a scratch file (its name is the
    // client's), which the daemon removes once it has answered: its target
    // is read before the report. Any other's after it, off the link's path.
    bool sandboxed = sandbox::sandboxActive();
    ReusableTarget out{0, 0};
    if (sandboxed)
      out = elfTarget(sandbox::lastWrittenFile());
    bool reported = child_report::sendOnExit(0);
    stopOrderedOutput();
    // A sandboxed link's worker stays confined (Landlock cannot be undone):
    // the zygote gives it only links confined alike (zygote.cpp).
    sandbox::stopSandbox();
    if (!sandboxed)
      out = elfTarget(child_report::lastOutput());
    bool again = reported && linkLeftItReusable(lld, baseThreads, served, out);
    closeLinkChannels();
    if (!again) {
      child_report::yieldTheExit();
      _exit(0);
    }
    chdir("/");
    lld.cleanUp();
    if (!onlyWorkerDescriptors())
      _exit(0);
    prctl(PR_SET_NAME, "linkd-spare");
    if (!sendFrame(kWorkerFdNumber, FrameKind::Idle, frame.id, {}, {}))
      _exit(0);
  }
}

} // namespace linkd
