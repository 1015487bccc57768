// The link zygote: a single-threaded process that forks one child per link.
//
// LLD keeps process-global state, is not thread-safe, and may call fatal()
// or crash on bad input, so the gRPC process never runs it. At start-up the
// daemon execs `linkd __zygote`, a fresh process with libLLVM loaded and
// relocated and no threads. For each link the daemon sends the request and
// the write ends of two pipes (stdout, stderr) over a Unix socket pair; the
// zygote forks, the child becomes the linker (cwd, umask, environment, fds
// 1/2 = the pipes) and exits with LLD's status. The zygote reaps children
// and reports pid, wait status and resource usage back.
//
// A child that crashes or is killed is only a failed link. If the zygote
// itself dies, pending links fail (clients fall back to local links) and the
// next link starts a new zygote. Children die with the zygote
// (PR_SET_PDEATHSIG), and the zygote dies with the daemon.
#pragma once

#include "linkd/v1/linkd.pb.h"

#include <sys/resource.h>

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace linkd {

// Entry point of `linkd __zygote <control-fd>`. Returns the process exit code.
int runZygote(int controlFd);

struct ChildExit {
  bool ran = false;    // false: the child never started (see error)
  std::string error;   // why the link could not run
  int waitStatus = 0;  // as from waitpid
  uint64_t userMicros = 0;
  uint64_t sysMicros = 0;
  uint64_t maxRssKib = 0;
};

// The daemon's handle on the zygote process. Thread-safe.
class ZygoteClient {
public:
  explicit ZygoteClient(std::string selfExe) : selfExe(std::move(selfExe)) {}
  ~ZygoteClient();
  ZygoteClient(const ZygoteClient &) = delete;
  ZygoteClient &operator=(const ZygoteClient &) = delete;

  // Starts the zygote now. Call before any other thread exists when possible
  // (later restarts exec from a threaded process, which is also safe).
  std::string start();

  struct Spawned {
    std::shared_future<int> pid;        // the link child's pid, or -1
    std::shared_future<ChildExit> exit; // fulfilled when it is reaped
  };
  // Sends one link to the zygote. `outFd`/`errFd` become the child's fds 1/2;
  // the caller keeps ownership of its copies.
  Spawned spawn(const v1::LinkRequest &request, int outFd, int errFd);

  int64_t pid() const;

private:
  struct Pending {
    std::promise<int> pid;
    std::promise<ChildExit> exit;
    bool pidSet = false;
  };
  std::string startLocked();
  void readerLoop(int fd);
  void failAllLocked(const std::string &why);

  std::string selfExe;
  std::mutex sendMu; // serialises writes to the control socket
  mutable std::mutex mu;
  int controlFd = -1;
  pid_t zygotePid = -1;
  uint64_t nextId = 1;
  std::map<uint64_t, Pending> pending;
  std::thread reader;
};

} // namespace linkd
