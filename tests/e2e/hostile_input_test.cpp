// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Hostile input to the local daemon: special files where a link names
// files, response files that never end, links cancelled mid-way, damaged
// cache databases. Each case ends like stock LLD (same bytes, same status),
// with a daemon that is no bigger, holds no more threads or links than
// before, and left nothing behind in the build directory.
#include "harness.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <iterator>
#include <sstream>
#include <vector>

#include <fstream>
#include <regex>
#include <thread>

namespace linkd::e2e {
namespace {

// A program without libc that exits with status 3.
constexpr const char *kExit3 =
    "void _start(void) { __asm__ volatile(\"mov $60, %eax; mov $3, %edi; "
    "syscall\"); }\n";

// A field of /proc/PID/status ("VmRSS", "Threads"), as a number.
long long procStatus(long long pid, const std::string &field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(field + ":"))
      return std::stoll(line.substr(field.size() + 1));
  return -1;
}

// A raw connection to the daemon's socket, as any local process could
// open; -1 on failure.
int connectRaw(const std::string &socketPath) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 &&
      connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the daemon sends on `fd` until it closes the connection (or
// 10 s pass).
std::string readToEnd(int fd) {
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    got.append(buf, static_cast<size_t>(n));
  return got;
}

// CPU time (user + system) the process has used, in clock ticks.
long long cpuTicks(long long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14)
      utime = std::stoll(field);
    if (i == 15)
      stime = std::stoll(field);
  }
  return utime + stime;
}

// `n` connections to the daemon, each sent `bytes` (nothing if empty) and
// held open.
std::vector<int> holdConnections(const std::string &socketPath, int n,
                                 const std::string &bytes) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    int fd = connectRaw(socketPath);
    if (fd < 0)
      break;
    if (!bytes.empty())
      send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  return fds;
}

void closeAll(std::vector<int> &fds) {
  for (int fd : fds)
    close(fd);
  fds.clear();
}

class HostileInputTest : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    writeFile("p.c", kExit3);
    ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  }
  std::string ld() const { return binPath("ld.linkd"); }
  // Starts the daemon with one ordinary link; its status.
  DaemonStatus warmDaemon() {
    EXPECT_TRUE(exitedZero(run(ld() + " p.o -o warm")));
    auto st = daemonStatus();
    EXPECT_TRUE(st.has_value());
    return st.value_or(DaemonStatus{});
  }
  // Waits until the daemon runs no link; false if it never gets there.
  bool idle() {
    auto st = waitForStatus(
        [](const DaemonStatus &s) { return s.activeLinks == 0; }, 20s);
    return st && st->activeLinks == 0;
  }
};

TEST_F(HostileInputTest, AnOutputFifoLinksLikeStockAndIsUncacheable) {
  ASSERT_TRUE(exitedZero(run("mkfifo fifo")));
  Background reader = start("exec cat fifo > stock.bin");
  ASSERT_TRUE(exitedZero(run(tools::ldLld.path + " p.o -o fifo")));
  ASSERT_TRUE(exitedZero(wait(reader)));
  // Through the daemon: the link writes into the FIFO as stock does, and
  // the daemon does not wait on it afterwards.
  warmDaemon();
  reader = start("exec cat fifo > mine.bin");
  auto begin = std::chrono::steady_clock::now();
  RunResult r = run("LINKD_TIMEOUT=30 " + ld() + " p.o -o fifo", 60s);
  ASSERT_TRUE(exitedZero(r));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 10s);
  ASSERT_TRUE(exitedZero(wait(reader, 10s)));
  EXPECT_TRUE(sameBytes("stock.bin", "mine.bin"));
  EXPECT_TRUE(idle());
  EXPECT_EQ(logLines("reason=\"output to a FIFO or device\"").size(), 1u);
  EXPECT_EQ(cacheStats()["uncacheable"], 1);
}

TEST_F(HostileInputTest, ResponseFilesThatNeverEndDoNotHoldTheDaemon) {
  DaemonStatus before = warmDaemon();
  long long threads = procStatus(before.pid, "Threads");
  long long rss = procStatus(before.pid, "VmRSS");
  ASSERT_GT(threads, 0);
  ASSERT_TRUE(exitedZero(run("mkfifo rsp")));
  // `@rsp` (a FIFO nobody writes) and `@/dev/zero` (endless): the link
  // child does what stock does (waits, or reads), the daemon neither; each
  // client gives up, which cancels its link.
  for (const std::string &arg : {"@rsp", "@rsp", "@rsp", "@rsp", "@rsp", "@rsp",
                                 "@rsp", "@rsp", "@/dev/zero"}) {
    Background client = start("exec " + ld() + " " + arg + " p.o -o never");
    std::this_thread::sleep_for(arg == "@rsp" ? 300ms : 1s);
    kill(client.pid, SIGKILL);
    wait(client, 10s);
  }
  EXPECT_TRUE(idle());
  EXPECT_LE(procStatus(before.pid, "Threads"), threads + 4);
  EXPECT_LT(procStatus(before.pid, "VmRSS"), rss + 100 * 1024); // KiB
  // The daemon serves the next link, and a response file that is regular
  // but too big makes a link uncacheable, not a failed one.
  ASSERT_TRUE(exitedZero(
      run("echo p.o > small.rsp && " + ld() + " @small.rsp -o out")));
  EXPECT_EQ(run("./out").exitCode, 3);
  ASSERT_TRUE(exitedZero(
      run("(echo p.o; head -c 70M /dev/zero | tr '\\0' ' ') > big.rsp")));
  ASSERT_TRUE(exitedZero(run(ld() + " @big.rsp -o big")));
  EXPECT_EQ(run("./big").exitCode, 3);
  EXPECT_EQ(logLines("reason=\"response files larger than 64 MiB\"").size(),
            1u);
}

TEST_F(HostileInputTest, DamagedCacheDatabasesAreRebuiltAtStart) {
  // Garbage where both databases belong, as a crash or a full disk can
  // leave them: the daemon moves them aside, starts with an empty cache,
  // and says so.
  ASSERT_TRUE(exitedZero(run("mkdir -p cache && head -c 20000 /dev/urandom "
                             "> cache/index.sqlite && head -c 9000 "
                             "/dev/urandom > cache/statcache.sqlite")));
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o out")));
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o out")));
  EXPECT_EQ(run("./out").exitCode, 3);
  auto s = cacheStats();
  EXPECT_EQ(s["hits"], 1);
  EXPECT_EQ(s["misses"], 1);
  EXPECT_EQ(s["cache_db_rebuilt"], 2);
  EXPECT_TRUE(exists("cache/index.sqlite.damaged"));
  EXPECT_TRUE(exists("cache/statcache.sqlite.damaged"));
  EXPECT_EQ(logLines("was damaged").size(), 2u);
  // The next daemon finds them sound and keeps the entry.
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " stop")));
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o out")));
  EXPECT_EQ(cacheStats()["hits"], 2);
  EXPECT_EQ(logLines("was damaged").size(), 2u);
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " cache clear")));
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o out")));
  EXPECT_EQ(cacheStats()["misses"], 2);
}

// Files in the test directory that look like a link's or linkd's
// temporaries (`out.tmpXXXXXX`, `.out.linkd-XXXXXX`).
std::string litterIn(HostileInputTest &t, const std::string &dir) {
  (void)t;
  std::string found;
  for (const char *glob : {"/*.tmp*", "/.*.linkd-*"}) {
    std::string cmd = "ls -d " + dir + glob + " 2>/dev/null";
    FILE *p = popen(cmd.c_str(), "r");
    char buf[4096];
    while (p && fgets(buf, sizeof(buf), p))
      found += buf;
    if (p)
      pclose(p);
  }
  return found;
}

TEST_F(HostileInputTest, ALinkStoppedMidWriteLeavesNoTemporaries) {
  // A 128 MiB output: LLD writes it as out.tmpXXXXXX for a while, long
  // enough to stop the link in that window (seen by polling for the file).
  writeFile("big.c",
            "const char big[128 << 20] = {1};\n" + std::string(kExit3));
  ASSERT_TRUE(exitedZero(run("clang-19 -c big.c")));
  DaemonStatus d = warmDaemon();
  auto stopMidWrite = [&](const std::string &how) {
    run("rm -f out");
    // Without the cache the child records nothing; a cache miss records
    // its file accesses.
    bool recorded = how != "sigint" && how != "sigkill";
    Background client =
        start("exec " + ld() + (recorded ? "" : " --linkd-no-cache") +
              " big.o -o out");
    bool writing = false;
    for (int i = 0; i < 20000 && !writing; ++i) {
      writing = !litterIn(*this, dir).empty();
      if (!writing)
        std::this_thread::sleep_for(500us);
    }
    ASSERT_TRUE(writing) << how << ": never saw the temporary output";
    if (how == "kill-child") {
      for (pid_t c : childrenOf(static_cast<pid_t>(d.zygotePid)))
        kill(c, SIGKILL);
    } else if (how == "kill-zygote") {
      auto now = daemonStatus(); // the daemon restarts a dead zygote
      ASSERT_TRUE(now);
      kill(static_cast<pid_t>(now->zygotePid), SIGKILL);
    } else {
      kill(client.pid, how == "sigint" ? SIGINT : SIGKILL);
    }
    wait(client, 30s);
    EXPECT_TRUE(idle());
    EXPECT_EQ(litterIn(*this, dir), "") << how;
    run("rm -f out.tmp* .out.linkd-*"); // each case on its own
  };
  stopMidWrite("sigint");      // Ctrl-C: the client dies, the call is cancelled
  stopMidWrite("sigkill");     // the same without the client's goodbye
  stopMidWrite("record");      // a recorded link (a cache miss) cancelled
  stopMidWrite("kill-child");  // the link child killed under the daemon
  stopMidWrite("kill-zygote"); // its zygote killed, which takes it along
  EXPECT_TRUE(exitedZero(run(ld() + " p.o -o after")));
}

TEST_F(HostileInputTest, TemporariesNoDaemonHeardOfAreRemovedByTheNext) {
  // The crash soak's litter: a link child creates out.tmpXXXXXXX while its
  // daemon cannot take the record of it (here: stopped; in the soak: just
  // killed, so the child's write of the record fails and SIGPIPE ends it
  // before LLVM has registered the file for removal). Then the child and
  // the daemon die. Only the child can have told anyone of that file: it
  // journals the name itself, before it creates it, and the next daemon
  // removes it.
  writeFile("big.c",
            "const char big[128 << 20] = {1};\n" + std::string(kExit3));
  ASSERT_TRUE(exitedZero(run("clang-19 -c big.c")));
  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 5) << "never stopped a child before its output";
    DaemonStatus d = warmDaemon();
    run("rm -f out");
    Background client = start("exec " + ld() + " big.o -o out"); // a miss
    std::vector<pid_t> kids;
    for (int i = 0; i < 40000 && kids.empty(); ++i) {
      kids = linkChildrenOf(static_cast<pid_t>(d.zygotePid));
      if (kids.empty())
        std::this_thread::sleep_for(100us);
    }
    ASSERT_FALSE(kids.empty()) << "never saw the link child";
    for (pid_t c : kids)
      kill(c, SIGSTOP);
    bool early = litterIn(*this, dir).empty(); // before its output exists
    kill(static_cast<pid_t>(d.pid), SIGSTOP);
    for (pid_t c : kids)
      kill(c, SIGCONT);
    bool writing = false;
    for (int i = 0; i < 20000 && !writing; ++i) {
      writing = !litterIn(*this, dir).empty();
      if (!writing)
        std::this_thread::sleep_for(500us);
    }
    for (pid_t c : kids)
      kill(c, SIGKILL);
    kill(static_cast<pid_t>(d.pid), SIGKILL);
    ASSERT_TRUE(exitedZero(wait(client, 60s))); // linked locally
    EXPECT_EQ(run("./out").exitCode, 3);
    ASSERT_TRUE(waitUntilGone(static_cast<pid_t>(d.pid), 10s));
    if (!early || !writing) { // the daemon may have seen it: again
      run("rm -f out.tmp* .out.linkd-*");
      continue;
    }
    ASSERT_NE(litterIn(*this, dir), "") << "the child's temporary";
    ASSERT_TRUE(exitedZero(run(ld() + " p.o -o next")));
    EXPECT_EQ(litterIn(*this, dir), "");
    EXPECT_EQ(logLines("temporaries a previous daemon left").size(), 1u);
    break;
  }
}

TEST_F(HostileInputTest, TemporariesOfAKilledDaemonAreRemovedByTheNext) {
  // A cache hit of a 128 MiB output is copied into `.out.linkd-XXXXXX` and
  // renamed; the daemon is killed during the copy. The client links
  // locally; the next daemon removes the half-written copy.
  writeFile("big.c",
            "const char big[128 << 20] = {1};\n" + std::string(kExit3));
  ASSERT_TRUE(exitedZero(
      run("clang-19 -c big.c && " + ld() + " big.o -o out && rm out")));
  DaemonStatus d = warmDaemon();
  waitForStored(2); // stored after the answer
  ASSERT_EQ(cacheStats()["results_stored"], 2);
  Background client = start("exec " + ld() + " big.o -o out");
  bool copying = false;
  for (int i = 0; i < 20000 && !copying; ++i) {
    copying = !litterIn(*this, dir).empty();
    if (!copying)
      std::this_thread::sleep_for(200us);
  }
  ASSERT_TRUE(copying) << "never saw the hit's temporary";
  kill(static_cast<pid_t>(d.pid), SIGKILL);
  ASSERT_TRUE(exitedZero(wait(client, 60s)));
  EXPECT_EQ(run("./out").exitCode, 3);
  EXPECT_NE(litterIn(*this, dir), "") << "the kill came too late";
  ASSERT_TRUE(waitUntilGone(static_cast<pid_t>(d.pid), 10s));
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o next")));
  EXPECT_EQ(litterIn(*this, dir), "");
  EXPECT_EQ(logLines("temporaries a previous daemon left").size(), 1u);

  // The same during a cache miss: the link child writes out2.tmpXXXXXX and
  // dies with the daemon; the next daemon removes what the child left.
  auto again = daemonStatus();
  ASSERT_TRUE(again);
  client = start("exec " + ld() + " big.o -o out2");
  copying = false;
  for (int i = 0; i < 20000 && !copying; ++i) {
    copying = !litterIn(*this, dir).empty();
    if (!copying)
      std::this_thread::sleep_for(200us);
  }
  ASSERT_TRUE(copying) << "never saw the link's temporary";
  kill(static_cast<pid_t>(again->pid), SIGKILL);
  ASSERT_TRUE(exitedZero(wait(client, 60s)));
  EXPECT_EQ(run("./out2").exitCode, 3);
  ASSERT_TRUE(waitUntilGone(static_cast<pid_t>(again->pid), 10s));
  std::this_thread::sleep_for(500ms); // the zygote's children die too
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o next2")));
  EXPECT_EQ(litterIn(*this, dir), "");
  EXPECT_EQ(logLines("temporaries a previous daemon left").size(), 2u);
}

// The thin client's framed wire (lib/wire/link_wire.h) from a hostile local
// process: frames that lie about their length, requests that do not parse
// or that the daemon refuses, connections that say nothing or half the
// magic. Each gets an error frame or a closed connection; none holds up the
// next client or leaves a thread behind.
TEST_F(HostileInputTest, HostileFramesOnTheLocalSocketLeaveTheDaemonServing) {
  DaemonStatus before = warmDaemon();
  long long threads = procStatus(before.pid, "Threads");
  auto frame = [](std::string payload) {
    std::string f = "LKD1";
    uint32_t n = static_cast<uint32_t>(payload.size());
    for (int i = 0; i < 4; ++i)
      f.push_back(static_cast<char>(n >> (8 * i)));
    return f + payload;
  };
  struct Case {
    std::string bytes;
    bool errorFrame; // else: the daemon just closes
  };
  const Case cases[] = {
      {"LKD1\xff\xff\xff\x7fQ", false},   // 2 GiB announced
      {"LKD1\x01\x00\x00\x04Q", false},   // 64 MiB + 1: over the cap
      {frame("Q\xff\xff\xff\xff"), true}, // not a LinkRequest
      {frame("Q"), true},                   // an empty request: no argv
      {frame("X"), true},                   // not a request frame
  };
  for (const Case &c : cases) {
    int fd = connectRaw(socketPath);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(send(fd, c.bytes.data(), c.bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(c.bytes.size()));
    std::string got = readToEnd(fd);
    close(fd);
    if (c.errorFrame) {
      ASSERT_GE(got.size(), 5u) << "no answer to " << c.bytes.size() << " bytes";
      EXPECT_EQ(got[4], 'e') << got;
    }
  }
  // Silent connections, and one that stops half-way through the magic, while
  // a real client links: it is not held up.
  int silent = connectRaw(socketPath), half = connectRaw(socketPath);
  ASSERT_GE(silent, 0);
  ASSERT_GE(half, 0);
  ASSERT_EQ(send(half, "LK", 2, MSG_NOSIGNAL), 2);
  RunResult linked = run(ld() + " p.o -o during", 20s);
  ASSERT_TRUE(exitedZero(linked)) << linked.err;
  EXPECT_EQ(run("./during").exitCode, 3);
  EXPECT_EQ(logLines("link id=").size(), 2u)
      << "the link fell back to a local one";
  close(silent);
  close(half);
  EXPECT_TRUE(idle());
  auto settled = waitForStatus(
      [&](const DaemonStatus &s) {
        return procStatus(s.pid, "Threads") <= threads + 2;
      },
      20s);
  EXPECT_TRUE(settled.has_value())
      << "threads: " << procStatus(before.pid, "Threads") << " (were "
      << threads << ")";
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, before.pid);
}

// A frame's length is a claim, not a payload: connections that announce the
// largest request the daemon takes (64 MiB) and send nothing more cost the
// daemon what they sent, not what they announced.
TEST_F(HostileInputTest, AnnouncedFrameLengthsCostOnlyWhatArrives) {
  DaemonStatus before = warmDaemon();
  long long rss = procStatus(before.pid, "VmRSS");
  ASSERT_GT(rss, 0);
  std::vector<int> held =
      holdConnections(socketPath, 16, std::string("LKD1\x00\x00\x00\x04Q", 9));
  ASSERT_EQ(held.size(), 16u);
  std::this_thread::sleep_for(1s);
  long long grown = procStatus(before.pid, "VmRSS") - rss;
  closeAll(held);
  EXPECT_LT(grown, 64 * 1024) << "KiB more for 16 announced 64 MiB frames";
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o after")));
  EXPECT_EQ(run("./after").exitCode, 3);
  EXPECT_EQ(logLines("link id=").size(), 2u);
}

// Connections that stop after half the magic (slowloris) wait for the rest
// without spinning: the daemon's CPU stays idle while they hang on.
TEST_F(HostileInputTest, HalfAMagicCostsTheDaemonNoCpu) {
  DaemonStatus before = warmDaemon();
  std::vector<int> held = holdConnections(socketPath, 200, "LK");
  ASSERT_EQ(held.size(), 200u);
  std::this_thread::sleep_for(500ms);
  long long ticks = cpuTicks(before.pid);
  std::this_thread::sleep_for(2s);
  long long used = cpuTicks(before.pid) - ticks;
  closeAll(held);
  EXPECT_LT(used, sysconf(_SC_CLK_TCK) / 5)
      << "ticks of CPU in 2 s with 200 half-magic connections";
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o after")));
  EXPECT_EQ(logLines("link id=").size(), 2u);
}

// More connections than the daemon takes at once (1024): it turns the rest
// away at once with an error frame, so their clients link locally, rather
// than spend a thread on each; once they go, it serves again.
TEST_F(HostileInputTest, AFloodOfSilentConnectionsIsCapped) {
  DaemonStatus before = warmDaemon();
  long long threads = procStatus(before.pid, "Threads");
  std::vector<int> held = holdConnections(socketPath, 1100, "");
  ASSERT_EQ(held.size(), 1100u);
  // The last one is over the cap (the daemon accepts in order): told so at
  // once, not after the 10 s a silent connection is given.
  auto asked = std::chrono::steady_clock::now();
  std::string got = readToEnd(held.back());
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 5s);
  ASSERT_GE(got.size(), 5u) << "no error frame over the cap";
  EXPECT_EQ(got[4], 'e') << got;
  EXPECT_LE(procStatus(before.pid, "Threads"), threads + 1024 + 8);
  RunResult during = run(ld() + " p.o -o during", 30s);
  ASSERT_TRUE(exitedZero(during)) << during.err;
  EXPECT_EQ(run("./during").exitCode, 3);
  closeAll(held);
  auto settled = waitForStatus(
      [&](const DaemonStatus &s) {
        return procStatus(s.pid, "Threads") <= threads + 4;
      },
      20s);
  EXPECT_TRUE(settled.has_value());
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o after")));
  EXPECT_EQ(run("./after").exitCode, 3);
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, before.pid);
  EXPECT_EQ(logLines("link id=").size(), 2u) << "the last link fell back";
  EXPECT_EQ(logLines("connections open; turning new ones away").size(), 1u);
}

// No thread to be had for a connection (in the field: the user's process
// limit; here: the daemon's address space capped below a thread's stack).
// The connection is turned away and its client links locally; the daemon
// lives on (std::thread's exception used to end it).
TEST_F(HostileInputTest, NoThreadForAConnectionTurnsItAwayAndTheDaemonLives) {
  DaemonStatus before = warmDaemon();
  long long vm = procStatus(before.pid, "VmSize"); // KiB
  ASSERT_GT(vm, 0);
  rlimit cap{static_cast<rlim_t>(vm) * 1024 + (40 << 20), RLIM_INFINITY};
  ASSERT_EQ(prlimit(static_cast<pid_t>(before.pid), RLIMIT_AS, &cap, nullptr),
            0)
      << std::strerror(errno);
  std::vector<int> held = holdConnections(socketPath, 30, "");
  std::this_thread::sleep_for(1s);
  bool alive = processAlive(static_cast<pid_t>(before.pid));
  rlimit open{RLIM_INFINITY, RLIM_INFINITY};
  prlimit(static_cast<pid_t>(before.pid), RLIMIT_AS, &open, nullptr);
  closeAll(held);
  ASSERT_TRUE(alive) << "the daemon died for want of a thread";
  EXPECT_GE(logLines("no thread for a connection").size(), 1u);
  ASSERT_TRUE(exitedZero(run(ld() + " p.o -o after")));
  EXPECT_EQ(run("./after").exitCode, 3);
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, before.pid);
}

// A request's rewrite spec is read by the daemon itself: a FIFO nobody
// writes (or a device) there is refused with a message naming it, as a bad
// spec is, rather than blocking a daemon thread, and its link, for good.
TEST_F(HostileInputTest, ARewriteSpecThatIsAFifoOrADeviceIsRefused) {
  warmDaemon();
  ASSERT_TRUE(exitedZero(run("mkfifo spec.fifo")));
  for (const std::string &spec :
       {path("spec.fifo"), std::string("/dev/null")}) {
    RunResult r = run(ld() + " --linkd-rewrite=" + spec + " p.o -o out", 20s);
    EXPECT_FALSE(r.timedOut) << spec;
    EXPECT_EQ(r.exitCode, 1) << describe(r);
    EXPECT_NE(r.err.find(spec + ": not a regular file"), std::string::npos)
        << describe(r);
  }
  EXPECT_TRUE(idle());
  EXPECT_EQ(logLines("refused: linkd: error: link-time rewriting").size(), 2u);
}

// Client strings in linkd.log: a cwd that holds a newline and a forged log
// line, an escape sequence and DEL, and an output name with a carriage
// return, a control byte, quotes, a backslash and a line separator
// (U+2028). (Bytes that are not UTF-8 cannot reach the daemon: argv and cwd
// are protobuf strings, and such a request does not parse; its client links
// locally. The unit tests escape them.) Linked twice (a miss, then a hit that
// names the output) with the client's LINKD_LOG=trace (every input path
// logged).
class HostileLogTest : public HostileInputTest {
protected:
  static constexpr std::string_view kCwd =
      "w\n2026-01-01T00:00:00.000 info pid=1 link id=99 forged\x1b[31m\x7f"
      " end";
  static constexpr std::string_view kOut = "o\rut\x01\"q\\ (\xe2\x80\xa8.x";
  // How the log shows them (log_format.h).
  std::string cwdAsLogged() const {
    return dir + "/w\\n2026-01-01T00:00:00.000 info pid=1 link id=99 "
                 "forged\\x1b[31m\\x7f end";
  }
  static std::string outAsLogged() {
    return "o\\rut\\x01\\\"q\\\\ (\\xe2\\x80\\xa8.x";
  }

  void linkWithHostileStrings() {
    std::string cwd = path(std::string(kCwd));
    ASSERT_EQ(mkdir(cwd.c_str(), 0755), 0) << std::strerror(errno);
    setenv("HOSTILE_CWD", cwd.c_str(), 1);
    setenv("HOSTILE_OUT", std::string(kOut).c_str(), 1);
    ASSERT_TRUE(exitedZero(run("cp p.o \"$HOSTILE_CWD/p.o\"")));
    for (int i = 0; i < 2; ++i) {
      RunResult r = run("cd \"$HOSTILE_CWD\" && LINKD_LOG=trace " + ld() +
                        " p.o -o \"$HOSTILE_OUT\"");
      ASSERT_TRUE(exitedZero(r)) << describe(r);
    }
    EXPECT_EQ(run("\"$HOSTILE_CWD/$HOSTILE_OUT\"").exitCode, 3);
    auto s = cacheStats();
    EXPECT_EQ(s["hits"], 1);
    EXPECT_EQ(s["misses"], 1);
  }

  // Every byte of the log is UTF-8 text, one record a line: no NUL, no
  // control byte but the newlines, and grep reads it as text.
  void expectOneLineOfTextPerRecord(const std::string &log) {
    for (size_t i = 0; i < log.size(); ++i) {
      auto c = static_cast<unsigned char>(log[i]);
      ASSERT_FALSE((c < 0x20 && c != '\n') || c == 0x7f)
          << "byte " << int(c) << " at " << i << " of\n"
          << log;
    }
    std::string logPath = stateDir + "/linkd.log";
    RunResult utf8 =
        run("python3 -c 'import sys; open(sys.argv[1], \"rb\").read()"
            ".decode(\"utf-8\")' " +
            logPath);
    EXPECT_TRUE(exitedZero(utf8)) << describe(utf8);
    RunResult grep = run("grep -c forged " + logPath);
    EXPECT_EQ(grep.out.find("inary"), std::string::npos) << describe(grep);
    EXPECT_GE(std::atoi(grep.out.c_str()), 3) << describe(grep);
  }
};

TEST_F(HostileLogTest, ClientStringsAreEscapedOnTheirOwnLine) {
  linkWithHostileStrings();
  std::string log = readFile(stateDir + "/linkd.log");
  expectOneLineOfTextPerRecord(log);
  std::regex record(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} \w+ pid=\d+ .*)");
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    EXPECT_TRUE(std::regex_match(line, record)) << "not a record: " << line;
    EXPECT_FALSE(line.starts_with("2026-01-01T00:00:00.000")) << line;
  }
  auto hit = logLines(" cache=hit ");
  ASSERT_EQ(hit.size(), 1u) << log;
  EXPECT_NE(hit[0].find(" cwd=\"" + cwdAsLogged() + "\""), std::string::npos)
      << hit[0];
  EXPECT_NE(hit[0].find(outAsLogged() + "\" cwd="), std::string::npos)
      << hit[0];
  auto miss = logLines(" cache=miss ");
  ASSERT_EQ(miss.size(), 1u) << log;
  EXPECT_NE(miss[0].find(" cwd=\"" + cwdAsLogged() + "\" argc="),
            std::string::npos)
      << miss[0];
  // trace: the input, named by its path in the hostile directory.
  EXPECT_GE(logLines(" read \"" + cwdAsLogged() + "/p.o\"").size(), 1u) << log;
}

// log_format = json (here LINKD_LOG_FORMAT, as the daemon starts): every
// line parses as a JSON object with the text line's fields, the client's
// strings escaped as there.
TEST_F(HostileLogTest, JsonLinesParseWithTheSameFields) {
  setenv("LINKD_LOG_FORMAT", "json", 1);
  linkWithHostileStrings();
  std::string log = readFile(stateDir + "/linkd.log");
  expectOneLineOfTextPerRecord(log);
  writeFile("check.py", R"(import json, sys
records = []
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    r = json.loads(line)
    assert isinstance(r, dict), n
    for k in ("time", "level", "pid", "msg"):
        assert k in r, (n, k, line)
    records.append(r)
hits = [r for r in records if r.get("cache") == "hit"]
misses = [r for r in records if r.get("cache") == "miss"]
assert len(hits) == 1 and len(misses) == 1, records
assert hits[0]["msg"].startswith("link id="), hits[0]
assert misses[0]["field_pid"].isdigit(), misses[0]
assert misses[0]["flavor"] == "elf", misses[0]
open("hit.cwd", "w", encoding="utf-8").write(hits[0]["cwd"])
open("miss.cwd", "w", encoding="utf-8").write(misses[0]["cwd"])
open("hit.output", "w", encoding="utf-8").write(hits[0]["output"])
print(len(records))
)");
  RunResult check = run("python3 check.py " + stateDir + "/linkd.log");
  ASSERT_TRUE(exitedZero(check)) << describe(check) << log;
  EXPECT_GE(std::atoi(check.out.c_str()), 5);
  EXPECT_EQ(readFile("hit.cwd"), cwdAsLogged());
  EXPECT_EQ(readFile("miss.cwd"), cwdAsLogged());
  std::string out = readFile("hit.output");
  EXPECT_TRUE(out.ends_with(outAsLogged())) << out;
  RunResult config = run(binPath("linkd") + " config");
  EXPECT_NE(config.out.find("log_format = json"), std::string::npos)
      << describe(config);
}

} // namespace
} // namespace linkd::e2e
