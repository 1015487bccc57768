// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/link_child.h"

#include "child/frame.h"
#include "child/ordered_output.h"
#include "child/sandbox_protocol.h"
#include "daemon/linkd-lld/access_recorder.h"
#include "daemon/linkd-lld/archiver_main.h"
#include "daemon/linkd-lld/incremental_link.h"
#include "daemon/linkd-lld/link_rewrite.h"
#include "daemon/linkd-lld/ordered_writer.h"
#include "daemon/linkd-lld/report_sender.h"
#include "daemon/linkd-lld/rewrite_command.h"
#include "daemon/linkd-lld/sandbox_child.h"
#include "daemon/linkd-lld/state_record_child.h"
#include "daemon/linkd-lld/stock_process.h"
#include "link/flavor.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace linkd {
namespace {

// The child's stdin: the client's, if it sent it (an MRI script), in an
// anonymous file (a pipe could not hold more than its buffer before the tool
// reads); else /dev/null.
void setUpStdin(const v1::LinkRequest &req) {
  int fd = -1;
  if (req.has_stdin_data()) {
    fd = memfd_create("linkd-stdin", MFD_CLOEXEC);
    const std::string &data = req.stdin_data();
    for (size_t off = 0; fd >= 0 && off < data.size();) {
      ssize_t n = write(fd, data.data() + off, data.size() - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        close(fd);
        fd = -1;
        break;
      }
      off += static_cast<size_t>(n);
    }
    if (fd >= 0)
      lseek(fd, 0, SEEK_SET);
  }
  if (fd < 0)
    fd = open("/dev/null", O_RDONLY);
  dup2(fd, STDIN_FILENO);
}


// The channels a link child was given move to their fixed numbers (records
// 3, sandbox 4, ordered output 5, temporaries journal 6; those absent stay
// closed), and every other inherited fd is closed but a reusable worker's
// socket (kWorkerFdNumber). Each moves above those numbers first, so that
// no dup2 overwrites one still to be moved.
void placeChildFds(int recordFd, int sandboxFd, int orderedFd, int journalFd,
                   bool keepWorkerFd) {
  static_assert(kWorkerFdNumber == kJournalFdNumber + 1);
  static_assert(kJournalFdNumber > ordered::kChildFd &&
                ordered::kChildFd > sandbox::kSandboxFd &&
                sandbox::kSandboxFd > kRecordFdNumber);
  int high[4] = {recordFd, sandboxFd, orderedFd, journalFd};
  for (int &fd : high)
    if (fd >= 0 && fd <= kJournalFdNumber)
      fd = fcntl(fd, F_DUPFD, kWorkerFdNumber + 1);
  if (high[0] >= 0)
    dup2(high[0], kRecordFdNumber);
  if (high[1] >= 0)
    dup2(high[1], sandbox::kSandboxFd);
  if (high[2] >= 0)
    dup2(high[2], ordered::kChildFd);
  if (high[3] >= 0)
    dup2(high[3], kJournalFdNumber);
  unsigned first = journalFd >= 0   ? kJournalFdNumber + 1
                   : orderedFd >= 0 ? ordered::kChildFd + 1
                   : sandboxFd >= 0 ? sandbox::kSandboxFd + 1
                   : recordFd >= 0  ? kRecordFdNumber + 1
                                    : kRecordFdNumber;
  if (!keepWorkerFd) {
    close_range(first, ~0U, 0);
    return;
  }
  if (first < kWorkerFdNumber)
    close_range(first, kWorkerFdNumber - 1, 0);
  close_range(kWorkerFdNumber + 1, ~0U, 0);
}

// The link sees the client's environment, never the daemon's: it starts
// empty and gets the variables the tool reads (lib/link/flavor.h) that the
// client had set.
void useClientEnvironment(const v1::LinkRequest &req, Flavor flavor) {
  clearenv();
  for (auto names : {flavorEnvironment(flavor), processEnvironment()})
    for (std::string_view name : names) {
      std::string n(name);
      if (auto it = req.env().find(n); it != req.env().end())
        setenv(n.c_str(), it->second.c_str(), 1);
    }
}

// The rewriter and the archivers, after the same set-up as a link.
[[noreturn]] void becomeOtherTool(const v1::LinkRequest &req, Flavor flavor) {
  child_report::noteTool();
  std::vector<std::string> args(req.argv().begin(), req.argv().end());
  if (flavor == Flavor::Rewrite) {
    StockProcess process(args);
    std::vector<char *> argv;
    for (std::string &a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    int rc = cmdRewrite(static_cast<int>(args.size()), argv.data());
    std::fflush(nullptr);
    _exit(rc);
  }
  args[0] = lldProgramName(args[0], flavor);
  StockProcess process(args);
  archive::ArchiverInvocation inv;
  inv.flavor = flavor;
  inv.argv.assign(req.argv().begin(), req.argv().end());
  inv.stderrIsColorTty = req.stderr_is_color_tty();
  inv.stdinAvailable = req.has_stdin_data();
  archive::runArchiverAndExit(inv);
}

// The tool's heap, set in each child (the zygote keeps glibc's defaults, so
// that a large request it parsed is given back): allocations up to 32 MiB
// (the most glibc's adaptive threshold would reach) come from the heap
// rather than from mmap, so that a growing hash table (LLD's symbol map)
// reuses what its previous size freed instead of faulting in fresh pages,
// and freed memory stays for the rest of the link. A hello-world link:
// ~150 page faults fewer (1820 -> 1670), ~0.5 ms of CPU.
void tuneMalloc() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 1 << 20);
}

} // namespace

SandboxConfinement sandboxConfinement(const v1::LinkRequest &req,
                                      const LinkChannels &ch) {
  if (ch.sandboxFd < 0)
    return {};
  auto dir = [&req](const char *key) {
    auto it = req.env().find(key);
    return it == req.env().end() ? std::string() : it->second;
  };
  return {true, dir(sandbox::kReadDirKey), dir(sandbox::kWriteDirKey),
          dir(sandbox::kRequireKey)};
}

bool channelsOf(const Frame &frame, int journalFd, LinkChannels &ch) {
  bool ordered = frame.kind == FrameKind::SpawnOrdered ||
                 frame.kind == FrameKind::SpawnReusable;
  size_t plain = frame.fds.size() - (ordered ? 1 : 0);
  if (frame.fds.size() < (ordered ? 3u : 2u) || plain > 4)
    return false;
  ch.outFd = frame.fds[0];
  ch.errFd = frame.fds[1];
  ch.recordFd = plain >= 3 ? frame.fds[2] : -1;
  ch.sandboxFd = plain == 4 ? frame.fds[3] : -1;
  ch.orderedFd = ordered ? frame.fds.back() : -1;
  ch.journalFd = journalFd;
  return true;
}


void setUpLinkChild(const v1::LinkRequest &req, const LinkChannels &ch) {
  int outFd = ch.outFd, errFd = ch.errFd, recordFd = ch.recordFd;
  int sandboxFd = ch.sandboxFd, orderedFd = ch.orderedFd;
  int journalFd = ch.journalFd;
  // SIGTERM, not SIGKILL: LLVM's handler (stock_process.h) removes the
  // temporary output the link is writing, then the child dies of it. A
  // daemon killed mid-link leaves nothing behind that it could not journal.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  tuneMalloc();
  setUpStdin(req);
  dup2(outFd, STDOUT_FILENO);
  dup2(errFd, STDERR_FILENO);
  placeChildFds(recordFd, sandboxFd, orderedFd,
                sandboxFd >= 0 ? -1 : journalFd, ch.keepWorkerFd);
  if (orderedFd >= 0)
    startOrderedOutput(ordered::kChildFd);

  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  umask(static_cast<mode_t>(req.umask() & 0777));

  auto flavor = static_cast<Flavor>(req.flavor());
  useClientEnvironment(req, flavor);
  // In the sandbox the client's cwd exists only as a name (every relative
  // path is resolved against it by the sandbox); the real one is "/".
  const std::string &dir = sandboxFd >= 0 ? std::string("/") : req.cwd();
  if (chdir(dir.c_str()) != 0) {
    std::string msg = "linkd: error: cannot change to directory " + req.cwd() +
                      ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(1);
  }
  // A plan is applied before the sandbox starts, with the node's own file
  // system in view: a sandboxed link never carries one. The farm node
  // refuses such requests already (offload_request.h); this holds if a
  // later path forgets to.
  if (sandboxFd >= 0 &&
      (req.has_rewrite_plan() || req.more_rewrite_plans_size() > 0)) {
    const char msg[] = "linkd: error: a sandboxed link carries a rewrite "
                       "plan; refused\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(125);
  }
  // One plan per --linkd-rewrite spec, each over its own inputs.
  std::vector<const v1::RewritePlan *> plans;
  if (req.has_rewrite_plan())
    plans.push_back(&req.rewrite_plan());
  for (const v1::RewritePlan &p : req.more_rewrite_plans())
    plans.push_back(&p);
  if (std::string err = applyRewritePlans(plans); !err.empty()) {
    std::string msg = "linkd: error: link-time rewriting: " + err + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(1);
  }
  if (journalFd >= 0 && sandboxFd < 0)
    startTempJournal(kJournalFdNumber, req.cwd());
  if (recordFd >= 0)
    startAccessRecording(kRecordFdNumber, req.cwd());
  if (sandboxFd >= 0) {
    sandbox::startSandbox(sandbox::kSandboxFd, req.cwd());
    // The farm names the only directories the link may touch; a node that
    // cannot confine the link refuses to run it.
    SandboxConfinement c = sandboxConfinement(req, ch);
    std::string err = sandbox::confineSandbox(c.readDir, c.writeDir);
    if (!err.empty() && c.require == "1") {
      std::string msg = "linkd: error: cannot confine the link: " + err + "\n";
      (void)!write(STDERR_FILENO, msg.data(), msg.size());
      _exit(125);
    }
  }
}

LldInvocation lldInvocation(const v1::LinkRequest &req, const LinkChannels &ch,
                            audit::RecordPolicy records) {
  LldInvocation inv;
  inv.flavor = static_cast<Flavor>(req.flavor());
  inv.argv.assign(req.argv().begin(), req.argv().end());
  inv.stderrIsColorTty = req.stderr_is_color_tty();
  if (ch.recordFd >= 0 && ch.sandboxFd < 0)
    armStateRecord(inv, records);
  return inv;
}

void runTool(const v1::LinkRequest &req, const LinkChannels &ch,
             audit::RecordPolicy records) {
  auto flavor = static_cast<Flavor>(req.flavor());
  if (flavor == Flavor::Rewrite || isArchiver(flavor))
    becomeOtherTool(req, flavor);
  // Only a local link keeps an incremental state: a sandboxed one (a farm
  // node's, a kernel link's) writes nowhere but its scratch directory.
  if (flavor == Flavor::Elf && !req.incremental_plan().state_dir().empty() &&
      ch.sandboxFd < 0)
    runIncrementalLinkAndExit(req, lldInvocation(req, ch, records));
  runLldAndExit(lldInvocation(req, ch, records));
}

void becomeLinker(const v1::LinkRequest &req, const LinkChannels &ch) {
  // A daemon setting, from the zygote's environment, before the client's
  // replaces it.
  audit::RecordPolicy records = stateRecordPolicy();
  setUpLinkChild(req, ch);
  runTool(req, ch, records);
}


} // namespace linkd
