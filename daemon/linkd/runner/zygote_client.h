// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's handle on the link zygote (daemon/linkd-lld/zygote.h): starts
// it, sends it links, and turns its reports into per-link futures. Thread-safe;
// this side never touches LLVM, so the gRPC process does not even map libLLVM.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>

#include "child/child_report.h"

#include "linkd/v1/linkd.pb.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace linkd {

struct ChildExit {
  bool ran = false;   // false: the child never started (see error)
  std::string error;  // why the link could not run
  int waitStatus = 0; // as from waitpid
  uint64_t userMicros = 0;
  uint64_t sysMicros = 0;
  uint64_t maxRssKib = 0;
};

// How a child that sent its report (child/child_report.h) ends, as its
// reaping would tell.
inline ChildExit reportedExit(const ChildReport &r) {
  ChildExit exit;
  exit.ran = true;
  exit.waitStatus = W_EXITCODE(r.status, 0);
  exit.userMicros = r.userMicros;
  exit.sysMicros = r.sysMicros;
  exit.maxRssKib = r.maxRssKib;
  return exit;
}

// The daemon's handle on the zygote process. Thread-safe.
class ZygoteClient {
public:
  // `lldExe` is the linkd-lld binary.
  // Construct before the daemon raises its own limits: every zygote (also
  // one restarted later) gets the file-descriptor limit the daemon was
  // started with, as a stock linker run from the same shell would.
  explicit ZygoteClient(std::string lldExe);
  ~ZygoteClient();
  ZygoteClient(const ZygoteClient &) = delete;
  ZygoteClient &operator=(const ZygoteClient &) = delete;

  // Starts the zygote now. Call before any other thread exists when possible
  // (later restarts exec from a threaded process, which is also safe).
  std::string start();

  struct Spawned {
    uint64_t id = 0;                    // for release()
    std::shared_future<int> pid;        // the link child's pid, or -1
    std::shared_future<ChildExit> exit; // fulfilled when it is reaped
  };
  // The descriptors a link child is given; the caller keeps its copies.
  struct ChildFds {
    int out = -1, err = -1; // the child's fds 1 and 2
    // The child reports its file accesses here
    // (daemon/linkd-lld/access_recorder.h).
    int records = -1;
    // With `records`: the child runs in the farm sandbox and asks its
    // file-system questions here (lib/child/sandbox_protocol.h).
    int sandbox = -1;
    // The child writes its stdout and stderr here as ordered records
    // (lib/child/ordered_output.h); only what bypasses LLVM's write reaches
    // `out`/`err`.
    int ordered = -1;
  };
  // Sends one link to the zygote. With `reusable` (needs `fds.ordered`),
  // the child may be a reusable worker that goes on after the link
  // (daemon/linkd-lld/link_worker.h): the caller must then call release()
  // once it has the child's report and will not signal its pid again.
  // The daemon's one caller is ChildRunner (runner/child_runner.h).
  Spawned spawn(const v1::LinkRequest &request, const ChildFds &fds,
                bool reusable = false);
  // The link `id` ended as `reported` (the child's report): its exit future
  // gets that, and the zygote may give its process another link.
  void release(uint64_t id, const ChildExit &reported);

  int64_t pid() const;
  // Ends the zygote (and with it any link child) and joins the reader.
  // Pending links fail. Also done by the destructor.
  void stop();
  // LLD's version string, as reported by the zygote ("" until it has).
  std::string lldVersion() const;
  // Waits up to `timeout` for the zygote's version report.
  std::string waitForLldVersion(std::chrono::milliseconds timeout);

private:
  struct rlimit startFdLimit{};
  bool haveStartFdLimit = false;
  struct Pending {
    std::promise<int> pid;
    std::promise<ChildExit> exit;
    bool pidSet = false;
  };
  std::string startLocked();
  void readerLoop(int fd);
  void failAllLocked(const std::string &why);

  std::string lldExe;
  std::string version;
  std::condition_variable versionCv;
  std::mutex sendMu; // serialises writes to the control socket
  mutable std::mutex mu;
  int controlFd = -1;
  pid_t zygotePid = -1;
  uint64_t nextId = 1;
  std::map<uint64_t, Pending> pending;
  std::thread reader;
  bool stopping = false;
};

} // namespace linkd
