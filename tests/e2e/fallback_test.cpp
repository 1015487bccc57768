// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// When no daemon can be used the link still happens, locally, with the same
// bytes and diagnostics: a runtime directory that is not private (which the
// client must refuse: whoever controls it could impersonate the daemon), and
// LINKD_DISABLE=1. The fallback says so on every link while the cause lasts
// (a directory to fix), once for a passing one; LINKD_QUIET=1 silences it.
#include "harness.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace linkd::e2e {
namespace {

constexpr std::string_view kWarning = "linkd: warning: ";

class Fallback : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure())
      return;
    writeFile("hello.c", R"(#include <stdio.h>
int main(void) { puts("local"); return 0; }
)");
    ASSERT_TRUE(exitedZero(run("clang-19 -O2 -c hello.c")));
    stock = run("clang-19 --ld-path=" + tools::ldLld.path +
                " hello.o -o hello.stock");
    ASSERT_TRUE(exitedZero(stock));
  }

  // Links hello.o through ld.linkd with `env` prefixed to the command.
  RunResult linkWith(const std::string &env, const std::string &output,
                     std::chrono::milliseconds timeout = 120s) {
    return run(env + " clang-19 --ld-path=" + binPath("ld.linkd") +
                   " hello.o -o " + output,
               timeout);
  }

  // The link worked and produced the stock bytes and stock diagnostics,
  // apart from `warnings` lines starting with "linkd: warning: ".
  void expectLocalLink(const RunResult &r, const std::string &output,
                       size_t warnings) {
    ASSERT_TRUE(exitedZero(r));
    EXPECT_EQ(linesStartingWith(r.err, kWarning).size(), warnings)
        << describe(r);
    EXPECT_EQ(withoutLinesStartingWith(r.err, kWarning), stock.err)
        << describe(r);
    EXPECT_TRUE(sameBytes("hello.stock", output));
    RunResult ran = run("./" + output);
    EXPECT_TRUE(exitedZero(ran));
    EXPECT_EQ(ran.out, "local\n");
  }

  // Something listening on the test's socket that is no daemon (it never
  // accepts, or never reads): the listener, its address in `addr`; -1 on
  // failure (reported).
  int listenWithoutDaemon(int backlog, sockaddr_un &addr) {
    if (!exitedZero(run("mkdir -p -m 700 $(dirname " + socketPath + ")")))
      return -1;
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    addr = sockaddr_un{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
    if (bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) !=
            0 ||
        listen(listener, backlog) != 0) {
      ADD_FAILURE() << socketPath << ": " << std::strerror(errno);
      close(listener);
      return -1;
    }
    return listener;
  }

  // No daemon was started for `socket`, and none runs for this test.
  void expectNoDaemon(const std::string &socket) {
    EXPECT_TRUE(processesWithEnvironment("LINKD_SOCKET=" + socket).empty());
    struct stat st;
    EXPECT_NE(stat(socket.c_str(), &st), 0) << socket << " exists";
    EXPECT_TRUE(daemonProcesses().empty());
    EXPECT_FALSE(exists("state/linkd.log")) << readFile("state/linkd.log");
  }

  RunResult stock;
};

TEST_F(Fallback, RuntimeDirectoryAccessibleByOthers) {
  ASSERT_EQ(mkdir(path("shared").c_str(), 0755), 0);
  ASSERT_EQ(chmod(path("shared").c_str(), 0755), 0); // whatever the umask
  std::string socket = path("shared/linkd.sock");
  std::string env = "LINKD_SOCKET=" + socket;

  RunResult first = linkWith(env, "hello1");
  expectLocalLink(first, "hello1", 1);
  auto warning = linesStartingWith(first.err, kWarning);
  ASSERT_EQ(warning.size(), 1u);
  EXPECT_NE(warning[0].find(path("shared")), std::string::npos) << warning[0];
  EXPECT_NE(warning[0].find("linking locally"), std::string::npos)
      << warning[0];

  // Every link: the cause lasts until someone fixes the directory, and
  // every link meanwhile is local and uncached.
  RunResult second = linkWith(env, "hello2");
  expectLocalLink(second, "hello2", 1);
  EXPECT_EQ(linesStartingWith(second.err, kWarning), warning);
  expectNoDaemon(socket);
}

TEST_F(Fallback, TransientCauseWarnsOnce) {
  // A "daemon" that never answers in time: the client gives up after
  // LINKD_START_TIMEOUT_MS, which passes by itself (a slow start). The local
  // link uses the linkd-lld next to LINKD_BIN.
  ASSERT_EQ(mkdir(path("slow").c_str(), 0700), 0);
  writeFile("slow/linkd", "#!/bin/sh\nsleep 1\n");
  ASSERT_EQ(chmod(path("slow/linkd").c_str(), 0755), 0);
  ASSERT_EQ(
      symlink(binPath("linkd-lld").c_str(), path("slow/linkd-lld").c_str()), 0);
  std::string env =
      "LINKD_BIN=" + path("slow/linkd") + " LINKD_START_TIMEOUT_MS=100";
  RunResult first = linkWith(env, "hello1");
  expectLocalLink(first, "hello1", 1);
  auto warning = linesStartingWith(first.err, kWarning);
  ASSERT_EQ(warning.size(), 1u);
  EXPECT_NE(warning[0].find("did not start within 100 ms"), std::string::npos)
      << warning[0];
  RunResult second = linkWith(env, "hello2");
  expectLocalLink(second, "hello2", 0);
}

TEST_F(Fallback, RuntimeDirectoryOwnedBySomeoneElse) {
  // Only root can hand a directory to another user; as anyone else, /tmp
  // itself (root's, world-writable) is the directory someone else controls.
  std::string socket;
  if (geteuid() == 0) {
    ASSERT_EQ(mkdir(path("foreign").c_str(), 0700), 0);
    ASSERT_EQ(chown(path("foreign").c_str(), 65534, 65534), 0);
    socket = path("foreign/linkd.sock");
  } else {
    socket = "/tmp/linkd-e2e-foreign-" + std::to_string(getpid()) + ".sock";
    atTeardown([socket] { unlink((socket + ".fallback-warned").c_str()); });
  }
  RunResult r = linkWith("LINKD_SOCKET=" + socket, "hello");
  expectLocalLink(r, "hello", 1);
  expectNoDaemon(socket);
}

TEST_F(Fallback, QuietFallbackPrintsNothing) {
  ASSERT_EQ(mkdir(path("shared").c_str(), 0755), 0);
  ASSERT_EQ(chmod(path("shared").c_str(), 0755), 0);
  std::string socket = path("shared/linkd.sock");
  RunResult r = linkWith("LINKD_QUIET=1 LINKD_SOCKET=" + socket, "hello");
  expectLocalLink(r, "hello", 0);
  expectNoDaemon(socket);
}

TEST_F(Fallback, DisableLinksLocallyWithoutDaemon) {
  RunResult r = linkWith("LINKD_DISABLE=1", "hello");
  expectLocalLink(r, "hello", 0);
  expectNoDaemon(socketPath);
  EXPECT_FALSE(daemonStatus().has_value());
  // Also for diagnostics: same text, same status as stock.
  RunResult stockErr = run(tools::ldLld.path + " missing.o -o x");
  RunResult mineErr =
      run("LINKD_DISABLE=1 " + binPath("ld.linkd") + " missing.o -o x");
  EXPECT_NE(stockErr.exitCode, 0);
  EXPECT_EQ(mineErr.exitCode, stockErr.exitCode) << describe(mineErr);
  EXPECT_EQ(mineErr.err, stockErr.err);
  expectNoDaemon(socketPath);
}

// Something on the socket that accepts and never reads (a stopped or wedged
// daemon): a request too big for the socket's buffer (1 MiB of -L paths)
// must not hold the client past LINKD_TIMEOUT; it links locally.
TEST_F(Fallback, ADaemonThatNeverReadsTheRequestTimesOut) {
  sockaddr_un addr{};
  int listener = listenWithoutDaemon(8, addr);
  ASSERT_GE(listener, 0);
  // In scripts: `sh -c` would take the 1 MiB as one argument, over the
  // kernel's 128 KiB limit for one. ld.linkd itself: clang would pass so
  // long a command line in a response file.
  std::string paths;
  for (int i = 0; i < 10; ++i)
    paths += " -L/" + std::string(100000, 'a' + i);
  writeFile("start.c", "void _start(void) {}\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c start.c")));
  writeFile("stock.sh", tools::ldLld.path + " start.o -o start.stock" + paths);
  writeFile("linkd.sh", "LINKD_TIMEOUT=2 exec " + binPath("ld.linkd") +
                            " start.o -o start" + paths);
  ASSERT_TRUE(exitedZero(run("sh stock.sh")));
  auto begin = std::chrono::steady_clock::now();
  RunResult r = run("sh linkd.sh", 60s);
  auto took = std::chrono::steady_clock::now() - begin;
  close(listener);
  r.command = "LINKD_TIMEOUT=2 ld.linkd start.o -o start -L<1 MiB>";
  EXPECT_FALSE(r.timedOut) << "the client waited for the socket forever";
  EXPECT_LT(took, 20s);
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(linesStartingWith(r.err, kWarning).size(), 1u) << describe(r);
  EXPECT_TRUE(sameBytes("start.stock", "start"));
}

// A socket whose owner never accepts (a stopped daemon) with its backlog
// full: connect waits there, and the client must not wait with it past the
// start timeout; it links locally (and starts no daemon in its place: the
// one it finds exits at once).
TEST_F(Fallback, ADaemonThatNeverAcceptsTimesOut) {
  sockaddr_un addr{};
  int listener = listenWithoutDaemon(0, addr);
  ASSERT_GE(listener, 0);
  std::vector<int> queued;
  for (int i = 0; i < 64; ++i) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
      close(fd);
      break;
    }
    queued.push_back(fd);
  }
  ASSERT_LT(queued.size(), 64u) << "the backlog never filled";
  // A daemon binary that exits at once, beside the real linkd-lld (the
  // local link runs the one next to LINKD_BIN).
  ASSERT_TRUE(exitedZero(run("mkdir fakebin && printf '#!/bin/sh\\nexit 1\\n' "
                             "> fakebin/linkd && chmod +x fakebin/linkd && "
                             "ln -s " +
                             binPath("linkd-lld") + " fakebin/")));
  auto begin = std::chrono::steady_clock::now();
  RunResult r = linkWith("LINKD_START_TIMEOUT_MS=1000 LINKD_TIMEOUT=5 "
                         "LINKD_BIN=" +
                             path("fakebin/linkd"),
                         "hello", 60s);
  auto took = std::chrono::steady_clock::now() - begin;
  for (int fd : queued)
    close(fd);
  close(listener);
  EXPECT_FALSE(r.timedOut) << "the client waited in connect forever";
  EXPECT_LT(took, 30s);
  expectLocalLink(r, "hello", 1);
}

} // namespace
} // namespace linkd::e2e
