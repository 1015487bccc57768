// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's processes dying under a running link, and hostile bytes on its
// socket. Every case ends with a correct output and a daemon that serves the
// next link.
//
// A link is held "mid-link" deterministically rather than by making it slow:
// its last input is a FIFO, so the link child blocks opening it after reading
// the other inputs. The test kills whatever it means to kill, then writes the
// object's bytes into the FIFO for whoever reads it next (the client's local
// fallback, or a retry), and compares the result with stock ld.lld's link of
// the same file as a regular file.
#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

namespace linkd::e2e {
namespace {

constexpr std::string_view kWarning = "linkd: warning: ";

class Robustness : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure())
      return;
    writeFile("main.c", R"(extern int value;
int result;
void _start(void) { result = value * 2; for (;;) {} }
)");
    writeFile("value.c", "int value = 21;\n");
    writeFile("other.c", "void _start(void) {}\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -O2 -c main.c value.c other.c")));
    // The reference: stock ld.lld with slow.o as a regular file.
    ASSERT_TRUE(exitedZero(run("cp value.o slow.o && " + tools::ldLld.path +
                               " main.o slow.o -o out.stock 2>stock.err && "
                               "rm slow.o && mkfifo slow.o")));
  }

  // Starts `ld.linkd main.o slow.o -o out` and waits until its link child
  // is blocked on the FIFO. Returns the child's pid (0 on failure).
  pid_t startBlockedLink(Background &client) {
    client = start(binPath("ld.linkd") + " main.o slow.o -o out");
    auto st =
        waitForStatus([](const DaemonStatus &s) { return s.activeLinks >= 1; });
    if (!st || st->activeLinks < 1) {
      ADD_FAILURE() << "the link never became active in the daemon";
      return 0;
    }
    daemonAtStart = *st;
    for (int i = 0; i < 1000; ++i) {
      auto kids = linkChildrenOf(static_cast<pid_t>(st->zygotePid));
      if (kids.size() == 1)
        return kids.front();
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "no link child under zygote " << st->zygotePid;
    return 0;
  }

  // Writes value.o into the FIFO once someone opens it for reading.
  ::testing::AssertionResult feedFifo() {
    std::string bytes = readFile("value.o");
    auto deadline = std::chrono::steady_clock::now() + 60s;
    int fd = -1;
    while ((fd = open(path("slow.o").c_str(), O_WRONLY | O_NONBLOCK)) < 0) {
      if (errno != ENXIO)
        return ::testing::AssertionFailure()
               << "open slow.o: " << std::strerror(errno);
      if (std::chrono::steady_clock::now() > deadline)
        return ::testing::AssertionFailure()
               << "nobody opened slow.o for reading within 60 s";
      std::this_thread::sleep_for(5ms);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t w = write(fd, bytes.data() + off, bytes.size() - off);
      if (w <= 0) {
        close(fd);
        return ::testing::AssertionFailure()
               << "write slow.o: " << std::strerror(errno);
      }
      off += static_cast<size_t>(w);
    }
    close(fd);
    return ::testing::AssertionSuccess();
  }

  // The client finished with the stock output and stderr, plus at most one
  // "linkd: warning:" line (a fallback is allowed to say so).
  void expectCorrectResult(const RunResult &r) {
    ASSERT_TRUE(exitedZero(r));
    EXPECT_LE(linesStartingWith(r.err, kWarning).size(), 1u) << describe(r);
    EXPECT_EQ(withoutLinesStartingWith(r.err, kWarning), readFile("stock.err"))
        << describe(r);
    EXPECT_TRUE(sameBytes("out.stock", "out"));
  }

  // A fresh, ordinary link through the daemon (compared with stock).
  // A link the daemon runs (uncached: another output name is the same key,
  // docs/cache.md, and a hit needs no zygote).
  void expectNextLinkServed(const std::string &name) {
    EXPECT_TRUE(linkBoth(elfLinkers(), "LINKD_NOCACHE=1 {ld} other.o -o " + name,
                         {name}));
  }

  DaemonStatus daemonAtStart;
};

TEST_F(Robustness, LinkChildKilledMidLink) {
  Background client;
  pid_t child = startBlockedLink(client);
  ASSERT_GT(child, 0);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_TRUE(waitUntilGone(child, 10s));
  ASSERT_TRUE(feedFifo());
  RunResult r = wait(client);
  expectCorrectResult(r);

  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value()) << "the daemon is gone";
  EXPECT_EQ(st->pid, daemonAtStart.pid);
  EXPECT_GE(st->linksCrashed, 1u) << st->json;
  EXPECT_EQ(logLines("signal=SIGKILL").size(), 1u);
  expectNextLinkServed("next");
}

TEST_F(Robustness, ZygoteKilledBetweenLinks) {
  expectNextLinkServed("first");
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  ASSERT_GT(st->zygotePid, 0);
  ASSERT_EQ(kill(static_cast<pid_t>(st->zygotePid), SIGKILL), 0);
  ASSERT_TRUE(waitUntilGone(static_cast<pid_t>(st->zygotePid), 10s));
  // The next link needs a new zygote; the client must not notice.
  expectNextLinkServed("second");
  auto after = daemonStatus();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->pid, st->pid);
  EXPECT_GT(after->zygotePid, 0) << after->json;
  EXPECT_NE(after->zygotePid, st->zygotePid) << after->json;
}

// The zygote keeps a pre-forked child waiting (zygote.cpp). One killed
// while it waits is replaced, and the next link runs in a spare as usual.
TEST_F(Robustness, SpareKilledBetweenLinks) {
  expectNextLinkServed("first");
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  auto zygote = static_cast<pid_t>(st->zygotePid);
  auto spares = [&] {
    std::vector<pid_t> all = childrenOf(zygote), spare;
    std::vector<pid_t> linking = linkChildrenOf(zygote);
    for (pid_t p : all)
      if (std::find(linking.begin(), linking.end(), p) == linking.end())
        spare.push_back(p);
    return spare;
  };
  std::vector<pid_t> before;
  for (int i = 0; i < 500 && before.empty(); ++i) {
    before = spares();
    if (before.empty())
      std::this_thread::sleep_for(10ms);
  }
  // A fresh spare, and after a link an idle reusable worker as well
  // (link_worker.h): both wait, and either may die while it does.
  ASSERT_GE(before.size(), 1u) << "no spare under zygote " << zygote;
  for (pid_t p : before)
    ASSERT_EQ(kill(p, SIGKILL), 0);
  for (pid_t p : before)
    ASSERT_TRUE(waitUntilGone(p, 10s));
  expectNextLinkServed("second");
  auto after = daemonStatus();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->zygotePid, st->zygotePid) << after->json;
  EXPECT_EQ(after->linksFailed, 0u) << after->json;
  EXPECT_EQ(after->linksCrashed, 0u) << after->json;
  std::vector<pid_t> now = spares();
  ASSERT_GE(now.size(), 1u);
  for (pid_t p : now)
    EXPECT_EQ(std::count(before.begin(), before.end(), p), 0) << p;
  // The replacement ran "second" (the log's outcome line says spare=1).
  auto lines = logLines("argc=");
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find(" spare=1"), std::string::npos) << lines.back();
}

// A spare's thread pool is started before its request with LLD's default
// size (lld_entry.h, prepareForLink): a link that sets its own thread count
// gets a child of its own, and both are identical to stock.
TEST_F(Robustness, ThreadCountOptionsGetTheirOwnChild) {
  expectNextLinkServed("warm");
  for (const char *threads : {"", "--threads=1", "--threads=2"}) {
    std::string name = std::string("t") + (threads[0] ? threads + 10 : "def");
    EXPECT_TRUE(linkBoth(elfLinkers(),
                         std::string("LINKD_NOCACHE=1 {ld} ") + threads +
                             " other.o -o " + name,
                         {name}));
    if (!threads[0])
      continue; // a spare if one was ready (not asserted: timing)
    auto lines = logLines("argc=");
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines.back().find(" spare=0"), std::string::npos)
        << threads << ": " << lines.back();
  }
}

TEST_F(Robustness, ZygoteKilledMidLink) {
  Background client;
  pid_t child = startBlockedLink(client);
  ASSERT_GT(child, 0);
  ASSERT_EQ(kill(static_cast<pid_t>(daemonAtStart.zygotePid), SIGKILL), 0);
  // The link child dies with its zygote (PR_SET_PDEATHSIG).
  EXPECT_TRUE(waitUntilGone(child, 10s))
      << "link child " << child << " outlived its zygote";
  ASSERT_TRUE(feedFifo());
  expectCorrectResult(wait(client));
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value()) << "the daemon is gone";
  EXPECT_EQ(st->pid, daemonAtStart.pid);
  expectNextLinkServed("next");
}

TEST_F(Robustness, DaemonKilledMidLink) {
  Background client;
  pid_t child = startBlockedLink(client);
  ASSERT_GT(child, 0);
  pid_t zygote = static_cast<pid_t>(daemonAtStart.zygotePid);
  ASSERT_EQ(kill(static_cast<pid_t>(daemonAtStart.pid), SIGKILL), 0);
  // Zygote and link child die with the daemon; none may linger as an orphan.
  EXPECT_TRUE(waitUntilGone(zygote, 10s)) << "zygote outlived the daemon";
  EXPECT_TRUE(waitUntilGone(child, 10s)) << "link child outlived the daemon";
  ASSERT_TRUE(feedFifo());
  RunResult r = wait(client);
  expectCorrectResult(r);
  EXPECT_EQ(linesStartingWith(r.err, kWarning).size(), 1u)
      << "the client fell back without saying so\n"
      << describe(r);

  // The next client starts a new daemon.
  expectNextLinkServed("next");
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  EXPECT_NE(st->pid, daemonAtStart.pid);
  EXPECT_EQ(logLines("serving").size(), 2u);
}

// `linkd stop` gives running links 30 s; one still running then is
// cancelled, as gRPC's shutdown cancelled its calls: its child killed and
// its outcome logged before the daemon says it stopped, and its client links
// locally. The daemon does not leave the link's thread running on a torn-down
// service.
TEST_F(Robustness, StopCancelsALinkThatOutlastsTheGrace) {
  Background client;
  pid_t child = startBlockedLink(client);
  ASSERT_GT(child, 0);
  RunResult stop = run(binPath("linkd") + " stop", 60s);
  EXPECT_TRUE(exitedZero(stop)) << describe(stop);
  EXPECT_TRUE(waitUntilGone(static_cast<pid_t>(daemonAtStart.pid), 20s));
  EXPECT_TRUE(waitUntilGone(child, 10s)) << "link child outlived the stop";
  ASSERT_TRUE(feedFifo());
  expectCorrectResult(wait(client));
  std::vector<std::string> lines = logLines("");
  auto at = [&](const std::string &needle) {
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find(needle) != std::string::npos)
        return static_cast<long>(i);
    return -1L;
  };
  long cancelled = at(" signal=SIG"); // stopped by linkd, as a cancel is
  long stopped = at("pid=" + std::to_string(daemonAtStart.pid) + " stopped");
  EXPECT_GE(cancelled, 0) << "the link was not cancelled";
  EXPECT_GT(stopped, cancelled) << "the daemon stopped under its link";
}

// ---------------------------------------------------------------------------
// Garbage on the socket

int connectTo(const std::string &socketPath) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socketPath.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Errors are expected: the daemon may hang up on us mid-write.
void sendBestEffort(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t w = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (w <= 0)
      return;
    data.remove_prefix(static_cast<size_t>(w));
  }
}

void drainFor(int fd, std::chrono::milliseconds d) {
  auto deadline = std::chrono::steady_clock::now() + d;
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0 && read(fd, buf, sizeof(buf)) <= 0)
      return;
  }
}

std::string randomBytes(std::mt19937 &rng, size_t n) {
  std::string s(n, '\0');
  for (char &c : s)
    c = static_cast<char>(rng() & 0xff);
  return s;
}

TEST_F(Robustness, GarbageOnTheSocket) {
  expectNextLinkServed("first");
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  std::mt19937 rng(4242);
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

  std::vector<int> held;
  auto connectOrFail = [&] {
    int fd = connectTo(socketPath);
    EXPECT_GE(fd, 0) << "cannot connect to " << socketPath << ": "
                     << std::strerror(errno);
    return fd;
  };
  {
    // Random bytes, then hang up.
    int fd = connectOrFail();
    sendBestEffort(fd, randomBytes(rng, 64 * 1024));
    drainFor(fd, 200ms);
    close(fd);
  }
  {
    // Half an HTTP/2 preface, held open while the daemon serves others.
    int fd = connectOrFail();
    sendBestEffort(fd, preface.substr(0, 15));
    held.push_back(fd);
  }
  {
    // A full preface, then noise instead of frames.
    int fd = connectOrFail();
    sendBestEffort(fd, preface + randomBytes(rng, 4096));
    drainFor(fd, 200ms);
    close(fd);
  }
  {
    // A preface and a SETTINGS frame announcing 16 MiB it never sends.
    int fd = connectOrFail();
    std::string frame =
        preface + std::string("\xff\xff\xff\x04\x00\x00\x00\x00\x00", 9);
    sendBestEffort(fd, frame + randomBytes(rng, 100));
    held.push_back(fd);
  }
  {
    // Plain HTTP/1.1.
    int fd = connectOrFail();
    sendBestEffort(fd, "GET /linkd.v1.Linkd/Info HTTP/1.1\r\nHost: x\r\n\r\n");
    drainFor(fd, 200ms);
    close(fd);
  }
  // Many idle connections that never say anything.
  for (int i = 0; i < 64; ++i)
    if (int fd = connectTo(socketPath); fd >= 0)
      held.push_back(fd);

  expectNextLinkServed("during");
  for (int fd : held)
    close(fd);
  expectNextLinkServed("after");
  auto after = daemonStatus();
  ASSERT_TRUE(after.has_value()) << "the daemon is gone";
  EXPECT_EQ(after->pid, st->pid) << "the daemon was replaced";
  EXPECT_EQ(logLines("serving").size(), 1u);
}

} // namespace
} // namespace linkd::e2e
