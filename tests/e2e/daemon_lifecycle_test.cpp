// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's own life: `linkd serve` in the foreground (as systemd runs it)
// must end with status 0 and a "stopped" log line however it is asked to
// stop: `linkd stop`, SIGTERM, or its idle timeout. An autostarted daemon
// runs the same code, but its exit status has no parent to see it.
#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

namespace linkd::e2e {
namespace {

class DaemonLifecycle : public E2eTest {
protected:
  // Starts `linkd serve` as our own child and waits until it answers.
  Background serve(const std::string &env = "") {
    Background bg =
        start("exec env " + env + " " + binPath("linkd") + " serve");
    auto st = waitForStatus([](const DaemonStatus &) { return true; });
    EXPECT_TRUE(st.has_value()) << "linkd serve did not come up\n"
                                << describe(wait(bg, 1s));
    if (st)
      EXPECT_EQ(st->pid, bg.pid);
    return bg;
  }

  void linkOnce(const std::string &name) {
    writeFile("ok.c", "void _start(void) {}\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -c ok.c")));
    ASSERT_TRUE(linkBoth(elfLinkers(), "{ld} ok.o -o " + name, {name}));
  }

  // Exit status 0, not a signal; the log says it stopped; the socket is gone.
  void expectCleanExit(const RunResult &r) {
    EXPECT_FALSE(r.timedOut) << describe(r);
    EXPECT_EQ(r.termSignal, 0) << "linkd serve died of a signal\n"
                               << describe(r) << "log:\n"
                               << readFile(stateDir + "/linkd.log");
    EXPECT_EQ(r.exitCode, 0) << describe(r);
    EXPECT_EQ(logLines(" stopped").size(), 1u)
        << readFile(stateDir + "/linkd.log");
    struct stat st;
    EXPECT_NE(stat(socketPath.c_str(), &st), 0) << "socket left behind";
  }
};

TEST_F(DaemonLifecycle, StopExitsCleanly) {
  Background daemon = serve();
  linkOnce("out");
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " stop")));
  expectCleanExit(wait(daemon, 60s));
}

TEST_F(DaemonLifecycle, SigtermStopsLikeStop) {
  Background daemon = serve();
  linkOnce("out");
  ASSERT_EQ(kill(daemon.pid, SIGTERM), 0);
  RunResult r = wait(daemon, 60s);
  expectCleanExit(r);
  EXPECT_EQ(logLines("signal 15 received").size(), 1u)
      << readFile(stateDir + "/linkd.log");
}

TEST_F(DaemonLifecycle, IdleTimeoutExits) {
  Background daemon = serve("LINKD_IDLE_TIMEOUT=1");
  setenv("LINKD_IDLE_TIMEOUT", "1", 1); // the clients agree (else they say so)
  linkOnce("out");
  expectCleanExit(wait(daemon, 30s));
  EXPECT_EQ(logLines("idle for 1 s, exiting").size(), 1u)
      << readFile(stateDir + "/linkd.log");
}

TEST_F(DaemonLifecycle, StopAlwaysSucceeds) {
  // `linkd stop` right after links and a status query, many times over: the
  // stop request must never be cancelled by the shutdown it causes.
  writeFile("ok.c", "void _start(void) {}\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c ok.c")));
  const std::string ld = binPath("ld.linkd");
  int failures = 0;
  std::string firstFailure;
  for (int round = 0; round < 40; ++round) {
    ASSERT_TRUE(exitedZero(run(ld + " ok.o -o a && " + ld + " ok.o -o b && " +
                               binPath("linkd") + " status --json")));
    RunResult stop = run(binPath("linkd") + " stop");
    if (stop.exitCode != 0 && failures++ == 0)
      firstFailure = describe(stop);
  }
  EXPECT_EQ(failures, 0) << "linkd stop failed " << failures
                         << " times in 40; first:\n"
                         << firstFailure;
}

// Which of `pids` hold an open descriptor on `object` (a /proc/PID/fd link
// target such as "pipe:[1234]"), as "pid fd" lines.
std::string holdersOf(const std::vector<pid_t> &pids,
                      const std::string &object) {
  std::string out;
  for (pid_t pid : pids) {
    std::error_code ec;
    std::string fdDir = "/proc/" + std::to_string(pid) + "/fd";
    for (const auto &e : std::filesystem::directory_iterator(fdDir, ec)) {
      std::error_code lec;
      if (std::filesystem::read_symlink(e.path(), lec).string() == object)
        out += std::to_string(pid) + " fd " + e.path().filename().string() +
               " (" + commandLine(pid) + ")\n";
    }
  }
  return out;
}

// `linkd serve` started with a pipe of its starter open, as `out=$(linkd
// serve &)` or a build tool's output capture does: neither the daemon, nor
// its zygote, nor a link child keeps it, so the reader sees EOF once the
// starter has closed its copy (it waited for the daemon's exit before).
TEST_F(DaemonLifecycle, APipeItWasStartedWithIsClosedInItAndItsChildren) {
  // fd 7 of the daemon is the pipe's write end; the reader notes the pipe's
  // name, reads to EOF, then says so.
  Background reader =
      start("( " + binPath("linkd") +
            " serve 7>&1 >/dev/null 2>serve.err & echo $! > daemon.pid ) | "
            "( readlink /proc/self/fd/0 > pipe.name; cat > /dev/null; "
            "echo eof > eof )");
  auto st = waitForStatus([](const DaemonStatus &) { return true; });
  ASSERT_TRUE(st.has_value()) << readFile("serve.err");
  linkOnce("out"); // a link child, and a worker or spare left behind
  RunResult done = wait(reader, 20s);
  std::string pipe = readFile("pipe.name");
  while (!pipe.empty() && pipe.back() == '\n')
    pipe.pop_back();
  ASSERT_TRUE(pipe.starts_with("pipe:")) << pipe;
  std::vector<pid_t> linkd = {static_cast<pid_t>(st->pid),
                              static_cast<pid_t>(st->zygotePid)};
  for (pid_t child : childrenOf(static_cast<pid_t>(st->zygotePid)))
    linkd.push_back(child);
  EXPECT_EQ(holdersOf(linkd, pipe), "");
  EXPECT_FALSE(done.timedOut) << "the reader saw no EOF while the daemon ran";
  EXPECT_TRUE(exists("eof"));
  EXPECT_TRUE(processAlive(static_cast<pid_t>(st->pid)));
}

// A client starts a daemon while another holds the lifetime lock but does
// not answer yet (one started by hand or by systemd, still opening its
// cache): the one it started exits 3, "a daemon is already serving". The
// client keeps connecting until its deadline instead of linking locally,
// where the link is neither counted nor logged. Here the test holds the lock
// and then lets it go: the client starts a daemon again and links through
// it.
TEST_F(DaemonLifecycle, AClientWhoseDaemonFindsTheLockTakenKeepsConnecting) {
  writeFile("ok.c", "void _start(void) {}\n");
  ASSERT_TRUE(exitedZero(
      run("clang-19 -c ok.c && " + tools::ldLld.path + " ok.o -o stock.out")));
  ASSERT_TRUE(exitedZero(
      run("mkdir -p -m 700 " + socketPath.substr(0, socketPath.rfind('/')))));
  int fd = open((socketPath + ".daemon.lock").c_str(),
                O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  struct flock l {};
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  ASSERT_EQ(fcntl(fd, F_OFD_SETLK, &l), 0) << std::strerror(errno);
  Background client = start("LINKD_START_TIMEOUT_MS=30000 " +
                            binPath("ld.linkd") + " ok.o -o out");
  bool yielded = false;
  for (int i = 0; i < 200 && !yielded; ++i) {
    std::this_thread::sleep_for(50ms);
    yielded = !logLines("a daemon is already serving").empty();
  }
  std::this_thread::sleep_for(300ms); // the client has seen it go
  close(fd);
  ASSERT_TRUE(yielded) << readFile(stateDir + "/linkd.log");
  RunResult r = wait(client, 60s);
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_TRUE(sameBytes("stock.out", "out"));
  EXPECT_EQ(logLines("link id=").size(), 1u)
      << "the link did not go through a daemon\n"
      << readFile(stateDir + "/linkd.log");
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->linksTotal, 1u);
}

} // namespace
} // namespace linkd::e2e
