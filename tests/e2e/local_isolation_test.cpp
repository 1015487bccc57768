// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Isolation between local users (docs/design.md, "Trust boundaries"): a second
// user, made with useradd and run with setpriv, tries the daemon of the
// first, squats its runtime directory, and offers it a cache directory it
// can write. The daemon serves only its own uid, the client keeps to a
// private location, and an open cache directory turns the cache off.
#include "harness.h"

#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace linkd::e2e {
namespace {

constexpr const char *kUser = "linkd-e2e";
const Tool setpriv{"/usr/bin/setpriv", "util-linux"};
const Tool useradd{"/usr/sbin/useradd", "passwd"};

// A program without libc that exits with status 3.
constexpr const char *kExit3 =
    "void _start(void) { __asm__ volatile(\"mov $60, %eax; mov $3, %edi; "
    "syscall\"); }\n";

class LocalIsolationTest : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (geteuid() != 0)
      GTEST_SKIP() << "needs root (useradd, setpriv)";
    ASSERT_TRUE(haveTool(setpriv));
    ASSERT_TRUE(haveTool(useradd));
    ASSERT_TRUE(exitedZero(
        run(std::string("flock /tmp/linkd-e2e-useradd.lock sh -c 'id -u ") +
            user + " >/dev/null 2>&1 || useradd -m " + user + "'")));
    passwd *pw = getpwnam(user.c_str());
    ASSERT_NE(pw, nullptr);
    uid = pw->pw_uid;
    home = pw->pw_dir;
    // The other user works in a directory of its own inside the test's.
    ASSERT_TRUE(exitedZero(
        run("chmod 711 . && mkdir -p other && chown " + user + " other")));
    // The binaries where the other user can run them: the build tree may sit
    // under a directory only root can enter (a CI clone in a mktemp dir).
    ASSERT_TRUE(exitedZero(run(
        "mkdir -p bin && chmod 755 bin && for b in ld.linkd linkd linkd-lld "
        "farm_peer; do ln -f " + binPath("") + "/$b bin/$b 2>/dev/null || "
        "cp -p " + binPath("") + "/$b bin/$b; done")));
    writeFile("p.c", kExit3);
    ASSERT_TRUE(exitedZero(run("clang-19 -c p.c -o other/p.o && chmod 644 "
                               "other/p.o")));
  }
  // `command` as the other user, in other/, with a clean environment plus
  // `env` (NAME=VALUE ...).
  RunResult asOther(const std::string &command, const std::string &env = "") {
    return run("cd other && setpriv --reuid=" + std::to_string(uid) +
               " --regid=" + std::to_string(uid) +
               " --clear-groups env -i PATH=/usr/bin:/bin HOME=" + home +
               " LINKD_IDLE_TIMEOUT=30 " + env + " sh -c '" + command + "'");
  }
  // A daemon started by one link of ours, its socket and directory opened
  // to everyone; its status (nullopt: reported).
  std::optional<DaemonStatus> daemonOpenToOthers() {
    std::string sockDir = socketPath.substr(0, socketPath.rfind('/'));
    if (!exitedZero(run(binPath("ld.linkd") + " other/p.o -o mine")) ||
        !exitedZero(
            run("chmod 755 " + sockDir + " && chmod 666 " + socketPath))) {
      ADD_FAILURE() << "cannot start the daemon or open its socket";
      return std::nullopt;
    }
    return daemonStatus();
  }
  // `name` from the copy the other user can run (SetUp).
  std::string otherBin(const std::string &name) { return path("bin/" + name); }
  std::string user = kUser; // another for a test that limits its processes
  uid_t uid = 0;
  std::string home;
};

TEST_F(LocalIsolationTest, TheDaemonServesOnlyItsOwnUser) {
  // The socket made reachable, as a careless chmod would: the daemon still
  // refuses the other user's connection before gRPC reads it.
  auto before = daemonOpenToOthers();
  ASSERT_TRUE(before);
  RunResult info = asOther(otherBin("farm_peer") + " info unix:" + socketPath);
  EXPECT_EQ(info.out.find("status=0 "), std::string::npos) << describe(info);
  EXPECT_GE(
      logLines("refused a connection: peer uid " + std::to_string(uid)).size(),
      1u);
  // Its client sees a socket it does not own, says so, and links locally.
  RunResult link = asOther(otherBin("ld.linkd") + " p.o -o out",
                           "LINKD_SOCKET=" + socketPath);
  ASSERT_TRUE(exitedZero(link));
  EXPECT_NE(link.err.find("belongs to uid 0"), std::string::npos)
      << describe(link);
  EXPECT_EQ(run("./other/out").exitCode, 3);
  auto after = daemonStatus();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->linksTotal, before->linksTotal);
}

// The thin client's framed wire from the other user: its client reaches the
// socket through a symlink of its own (so the owner check passes) and sends
// a well-formed request; the daemon refuses the peer before reading it, and
// the client links locally.
TEST_F(LocalIsolationTest, AnotherUsersFramedRequestIsRefusedUnread) {
  auto before = daemonOpenToOthers();
  ASSERT_TRUE(before);
  ASSERT_TRUE(exitedZero(asOther("ln -s " + socketPath + " sock")));
  RunResult link = asOther(otherBin("ld.linkd") + " p.o -o out",
                           "LINKD_SOCKET=" + path("other/sock"));
  ASSERT_TRUE(exitedZero(link)) << describe(link);
  EXPECT_EQ(run("./other/out").exitCode, 3);
  EXPECT_GE(
      logLines("refused a connection: peer uid " + std::to_string(uid)).size(),
      1u);
  auto after = daemonStatus();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->linksTotal, before->linksTotal);
  EXPECT_EQ(after->pid, before->pid);
}

TEST_F(LocalIsolationTest, ASquattedRuntimeDirectoryIsAvoidedAndWarnedAbout) {
  // Root made /tmp/linkd-<uid> of the other user first, open to all.
  std::string squat = "/tmp/linkd-" + std::to_string(uid);
  ASSERT_TRUE(exitedZero(run("rm -rf " + squat + " && mkdir -m 777 " + squat)));
  atTeardown([this, squat] {
    asOther(otherBin("linkd") + " stop");
    run("rm -rf " + squat + " " + home + "/.cache/linkd");
  });
  for (const char *out : {"a", "b"}) {
    RunResult r = asOther(otherBin("ld.linkd") + " p.o -o " + out);
    ASSERT_TRUE(exitedZero(r));
    EXPECT_NE(r.err.find("warning: " + squat + " is owned by uid 0"),
              std::string::npos)
        << describe(r);
    EXPECT_EQ(run(std::string("./other/") + out).exitCode, 3);
  }
  // The links went through the user's own daemon, in the fallback place;
  // nothing was made in the squatted directory.
  RunResult stats = asOther(otherBin("linkd") + " stats --json");
  EXPECT_NE(stats.out.find("\"requests\": 2"), std::string::npos)
      << describe(stats);
  EXPECT_TRUE(
      exitedZero(run("test -S " + home + "/.cache/linkd/run/linkd.sock")));
  EXPECT_EQ(run("ls -A " + squat).out, "");
}

TEST_F(LocalIsolationTest, ACacheDirectoryOthersCanWriteIsNotUsed) {
  ASSERT_TRUE(exitedZero(run("mkdir -m 777 shared")));
  std::string env = "LINKD_CACHE_DIR=" + path("shared") + " ";
  ASSERT_TRUE(exitedZero(run(env + binPath("ld.linkd") + " other/p.o -o x")));
  EXPECT_EQ(run("./x").exitCode, 3);
  EXPECT_EQ(logLines("cache off: " + path("shared") +
                     " is writable by other users (mode 0777)")
                .size(),
            1u);
  EXPECT_NE(run(binPath("linkd") + " stats --json").exitCode, 0);
  EXPECT_EQ(run("ls -A shared").out, "");
}

// Tasks (threads) of `uid` now, from /proc: what RLIMIT_NPROC counts.
long tasksOf(uid_t uid) {
  long n = 0;
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator("/proc", ec)) {
    std::ifstream in(e.path() / "status");
    long threads = 0;
    bool theirs = false;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("Uid:"))
        theirs = std::stol(line.substr(4)) == static_cast<long>(uid);
      else if (line.starts_with("Threads:"))
        threads = std::stol(line.substr(8));
    }
    if (theirs)
      n += threads;
  }
  return n;
}

// A connection flood from the daemon's own user at its process limit
// (`ulimit -u`, RLIMIT_NPROC) on both doors, the socket and <socket>.blob:
// connections that get no thread are turned away, the daemon lives and
// serves the next link. (The blob socket's std::thread threw, and the daemon
// died.) A user of its own, so that no other test's processes count.
class FloodAtTheProcessLimit : public LocalIsolationTest {
protected:
  FloodAtTheProcessLimit() { user = "linkd-e2e-flood"; }
};

TEST_F(FloodAtTheProcessLimit, BothSocketsTurnAwayWhatGetsNoThread) {
  std::string sock = path("other/run/linkd.sock");
  std::string env =
      "LINKD_SOCKET=" + sock + " LINKD_STATE_DIR=" + path("other/state") +
      " LINKD_CACHE_DIR=" + path("other/cache") + " LINKD_CONFIG=/dev/null";
  // What the user's daemon, idle, counts against the limit: started by a
  // link, then stopped.
  ASSERT_TRUE(exitedZero(asOther(otherBin("ld.linkd") + " p.o -o first", env)));
  long idle = tasksOf(uid);
  ASSERT_TRUE(exitedZero(asOther(otherBin("linkd") + " stop", env)));
  // `linkd serve` under `ulimit -u`: room for 40 threads more than that.
  Background daemon = start(
      "cd other && exec setpriv --reuid=" + std::to_string(uid) +
      " --regid=" + std::to_string(uid) +
      " --clear-groups env -i PATH=/usr/bin:/bin HOME=" + home + " " + env +
      " LINKD_IDLE_TIMEOUT=60 bash -c 'ulimit -u " + std::to_string(idle + 40) +
      " && exec " + otherBin("linkd") + " serve'");
  atTeardown([this, env, daemon] {
    asOther(otherBin("linkd") + " stop", env);
    if (processAlive(daemon.pid))
      kill(daemon.pid, SIGKILL);
  });
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    std::this_thread::sleep_for(50ms);
    up = exitedZero(asOther(otherBin("linkd") + " status", env));
  }
  ASSERT_TRUE(up) << describe(wait(daemon, 1s));
  std::string log = path("other/state/linkd.log");
  pid_t pid = daemon.pid;
  ASSERT_TRUE(exitedZero(run("test -S " + sock + ".blob")));
  writeFile("other/flood.py", R"(import socket, struct, sys, time
held = []
for p in sys.argv[1:]:
    for _ in range(200):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A blocking connect (a full backlog makes it wait), for 5 s at most.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                     struct.pack("ll", 5, 0))
        s.connect(p)
        held.append(s)
time.sleep(2)
for s in held:
    s.close()
print(len(held))
)");
  RunResult flood =
      asOther("python3 flood.py " + sock + " " + sock + ".blob", env);
  EXPECT_TRUE(exitedZero(flood)) << describe(flood);
  ASSERT_TRUE(processAlive(pid)) << "the daemon died in the flood\n"
                                 << readFile(log);
  std::string text = readFile(log);
  EXPECT_NE(text.find("kernel socket: no thread for a connection"),
            std::string::npos)
      << text;
  // The flood's threads go, and the daemon serves a link again.
  std::this_thread::sleep_for(1s);
  RunResult after = asOther(otherBin("ld.linkd") + " p.o -o after", env);
  ASSERT_TRUE(exitedZero(after)) << describe(after);
  EXPECT_EQ(run("./other/after").exitCode, 3);
  EXPECT_EQ(std::atol(readFile(sock + ".daemon.lock").c_str()), long(pid));
  size_t links = 0;
  std::istringstream in(readFile(log));
  for (std::string line; std::getline(in, line);)
    links += line.find("link id=") != std::string::npos;
  EXPECT_EQ(links, 2u) << readFile(log);
}

} // namespace
} // namespace linkd::e2e
