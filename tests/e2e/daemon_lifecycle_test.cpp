// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's own life: `linkd serve` in the foreground (as systemd runs it)
// must end with status 0 and a "stopped" log line however it is asked to
// stop: `linkd stop`, SIGTERM, or its idle timeout. An autostarted daemon
// runs the same code, but its exit status has no parent to see it.
#include "harness.h"

#include <signal.h>
#include <sys/stat.h>

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

} // namespace
} // namespace linkd::e2e
