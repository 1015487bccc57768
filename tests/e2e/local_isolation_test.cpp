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

// Refused peers do not write the log at will: the
// other user opens and closes 300 connections to the daemon's socket; each
// is refused, at most LogLimit::kBurst of them are logged in a minute, and
// the daemon goes on serving its user.
TEST_F(LocalIsolationTest, RefusedPeersDoNotFillTheLog) {
  auto before = daemonOpenToOthers();
  ASSERT_TRUE(before);
  RunResult flood =
      asOther("/usr/bin/python3 -c \"import socket\nfor i in range(300):\n"
              "    s = socket.socket(socket.AF_UNIX)\n    s.connect(\\\"" +
              socketPath + "\\\")\n    s.recv(1)\n    s.close()\"");
  ASSERT_TRUE(exitedZero(flood)) << describe(flood);
  size_t lines =
      logLines("refused a connection: peer uid " + std::to_string(uid)).size();
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 10u);
  ASSERT_TRUE(exitedZero(run(binPath("ld.linkd") + " other/p.o -o after")));
  EXPECT_EQ(run("./after").exitCode, 3);
  auto after = daemonStatus();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->pid, before->pid);
  EXPECT_EQ(after->linksTotal, before->linksTotal + 1);
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

// The thin client asks who accepted (SO_PEERCRED), not only who owns the
// socket file: the other user listens on a socket that then becomes ours
// (root chowns it here; in life, a file replaced between the owner check and
// connect). The client sends nothing there and links locally.
TEST_F(LocalIsolationTest, TheClientSendsNothingToASocketAnotherUserServes) {
  std::string sock = path("other/fake.sock");
  Background fake = start(
      "cd other && exec setpriv --reuid=" + std::to_string(uid) +
      " --regid=" + std::to_string(uid) +
      " --clear-groups /usr/bin/python3 -c \"import socket, sys\n"
      "s = socket.socket(socket.AF_UNIX)\ns.bind('fake.sock')\ns.listen(8)\n"
      "while True:\n    c, _ = s.accept()\n    c.settimeout(2)\n"
      "    try: data = c.recv(65536)\n    except OSError: data = b''\n"
      "    open('received', 'ab').write(data)\n    c.close()\"");
  atTeardown([fake] { kill(fake.pid, SIGKILL); });
  for (int i = 0; i < 500 && !exists("other/fake.sock"); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(exitedZero(run("chown root " + sock)));
  RunResult link = run("LINKD_SOCKET=" + sock + " " + binPath("ld.linkd") +
                       " other/p.o -o mine");
  ASSERT_TRUE(exitedZero(link)) << describe(link);
  EXPECT_NE(link.err.find("is served by uid " + std::to_string(uid)),
            std::string::npos)
      << describe(link);
  EXPECT_EQ(run("./mine").exitCode, 3);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(run("cat other/received 2>/dev/null | wc -c").out, "0\n");
}

// liblinkd and a blob socket another user serves: a
// shared runtime directory (XDG_RUNTIME_DIR, LINKD_SOCKET in /tmp) where the
// other user listens on linkd.sock.blob. The library must not connect to a
// socket file that is not its user's, nor send anything to a peer of
// another uid when the file is (root chowned it: the peer check); it links
// locally, with stock's bytes, and the fake server receives nothing.
TEST_F(LocalIsolationTest, TheLibraryRefusesAnotherUsersBlobSocket) {
  if (access("/usr/bin/python3", X_OK) != 0)
    GTEST_SKIP() << "python3 is not installed";
  ASSERT_TRUE(exitedZero(run("mkdir -m 1777 shared")));
  writeFile("fake.py", R"(import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
open(sys.argv[2], "w").write("ready\n")
while True:
    c, _ = s.accept()
    c.settimeout(5)
    got = b""
    try:
        while len(got) < 1 << 16:
            b = c.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    with open(sys.argv[2], "a") as f:
        f.write("received %d bytes\n" % len(got))
    c.close()
)");
  ASSERT_TRUE(exitedZero(run("chmod 644 fake.py")));
  std::string sock = path("shared/linkd.sock");
  std::string log = path("shared/fake.log");
  Background fake = start("exec setpriv --reuid=" + std::to_string(uid) +
                          " --regid=" + std::to_string(uid) +
                          " --clear-groups /usr/bin/python3 " +
                          path("fake.py") + " " + sock + ".blob " + log);
  atTeardown(
      [this] { run("pkill -u " + std::to_string(uid) + " -f fake.py"); });
  for (int i = 0; i < 200 && !exists("shared/fake.log"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(exists("shared/fake.log"));

  writeFile("k.c", "int counter; int bump(void) { return ++counter; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c k.c -o k.o && "
                             "ld.lld-19 -shared k.o -o k.stock")));
  writeFile("t.py", R"(import linkd
obj = open("k.o", "rb").read()
r = linkd.link_result(["-shared", "k.o", "-o", "k.so"], inputs={"k.o": obj})
open("k.so", "wb").write(r.outputs["k.so"])
print(r.served)
)");
  std::string py = "LINKD_SOCKET=" + sock +
                   " LINKD_NO_AUTOSTART=1 "
                   "LINKD_FALLBACK_LINKER=/usr/bin/ld.lld-19 PYTHONPATH=" +
                   binDir() + "/../lib/python python3 t.py";
  // The socket file is the other user's.
  RunResult owned = run(py);
  ASSERT_TRUE(exitedZero(owned)) << describe(owned);
  EXPECT_EQ(owned.out, "local\n");
  EXPECT_TRUE(sameBytes("k.stock", "k.so"));
  // The file made ours; the peer is still the other user.
  ASSERT_TRUE(exitedZero(run("chown 0:0 " + sock + ".blob")));
  RunResult peer = run(py);
  ASSERT_TRUE(exitedZero(peer)) << describe(peer);
  EXPECT_EQ(peer.out, "local\n");
  EXPECT_TRUE(sameBytes("k.stock", "k.so"));
  // The peer check needs a connection (SO_PEERCRED), closed unused: the
  // other user's server got no byte of the request.
  EXPECT_EQ(readFile("shared/fake.log"), "ready\nreceived 0 bytes\n");
}

// liblinkd's no-daemon links keep their private directory between links
//. A temp cleaner removes it; the other user makes one
// of the same name whose work/k.o is a symbolic link to a file of ours.
// The next link must not write through it: the directory is not the one
// given back, so a new one is made and the planted one left alone.
TEST_F(LocalIsolationTest, AVanishedPrivateDirectoryIsNotReusedByName) {
  if (access("/usr/bin/python3", X_OK) != 0)
    GTEST_SKIP() << "python3 is not installed";
  ASSERT_TRUE(exitedZero(run("mkdir -m 1777 tmp")));
  writeFile("precious", "the victim's file\n");
  writeFile("k.c", "int counter; int bump(void) { return ++counter; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c k.c -o k.o && "
                             "ld.lld-19 -shared k.o -o k.stock")));
  // Links once, waits for `go`, links again.
  writeFile("jit.py", R"(import os, sys, time, linkd
obj = open("k.o", "rb").read()
def once(n):
    r = linkd.link_result(["-shared", "k.o", "-o", "k.so"], inputs={"k.o": obj},
                          local_only=True)
    open("k%d.so" % n, "wb").write(r.outputs["k.so"])
once(1)
open("linked-once", "w").close()
while not os.path.exists("go"):
    time.sleep(0.02)
once(2)
)");
  Background jit = start("TMPDIR=" + path("tmp") +
                         " LINKD_FALLBACK_LINKER=/usr/bin/ld.lld-19 "
                         "PYTHONPATH=" +
                         binDir() + "/../lib/python python3 jit.py");
  for (int i = 0; i < 400 && !exists("linked-once"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(exists("linked-once"));
  RunResult dirs = run("ls -d tmp/linkd-kernel.*");
  ASSERT_TRUE(exitedZero(dirs)) << describe(dirs);
  std::string dir = dirs.out.substr(0, dirs.out.find('\n'));
  ASSERT_EQ(dirs.out, dir + "\n") << "one private directory expected";
  // The cleaner, then the other user at the same name.
  ASSERT_TRUE(exitedZero(run("rm -rf " + dir)));
  ASSERT_TRUE(exitedZero(asOther(
      "mkdir -m 755 " + path(dir) + " " + path(dir) + "/work " + path(dir) +
      "/view " + path(dir) + "/view/empty && ln -s " + path("precious") + " " +
      path(dir) + "/work/k.o && chmod 777 " + path(dir) + "/work")));
  writeFile("go", "");
  RunResult done = wait(jit);
  ASSERT_TRUE(exitedZero(done)) << describe(done);
  EXPECT_EQ(readFile("precious"), "the victim's file\n");
  EXPECT_TRUE(sameBytes("k.stock", "k1.so"));
  EXPECT_TRUE(sameBytes("k.stock", "k2.so"));
  // The planted directory is as its maker left it.
  EXPECT_TRUE(exitedZero(run("test -L " + dir + "/work/k.o")));
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

// A cache directory named through another user's symbolic link: the link in a
// shared directory points at the user's own private directory when the daemon
// checks it, and at the other user's once the daemon runs. The daemon refuses
// such a link (cache off, said in the log), and nothing of the user's ever
// lands in the other's directory.
TEST_F(LocalIsolationTest, ACacheDirectoryThroughAnotherUsersLinkIsNotUsed) {
  ASSERT_TRUE(exitedZero(run("mkdir -m 1777 shared && mkdir -m 700 mine")));
  ASSERT_TRUE(
      exitedZero(asOther("mkdir -m 700 " + path("shared/evil") + " && ln -s " +
                         path("mine") + " " + path("shared/cache"))));
  std::string env = "LINKD_CACHE_DIR=" + path("shared/cache") + " ";
  ASSERT_TRUE(exitedZero(run(env + binPath("ld.linkd") + " other/p.o -o x")));
  EXPECT_EQ(run("./x").exitCode, 3);
  ASSERT_TRUE(exitedZero(
      asOther("ln -sfn " + path("shared/evil") + " " + path("shared/cache"))));
  ASSERT_TRUE(exitedZero(run(env + binPath("ld.linkd") + " other/p.o -o y")));
  EXPECT_EQ(run("./y").exitCode, 3);
  EXPECT_EQ(logLines("cache off: " + path("shared/cache") +
                     " is a symbolic link of uid " + std::to_string(uid))
                .size(),
            1u);
  EXPECT_EQ(run("ls -A shared/evil").out, "");
  EXPECT_EQ(run("ls -A mine").out, "");
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

// A per-user daemon's metrics on loopback serve its own
// user's scrapes; another local user's get 403 (the peer's socket owner,
// asked of the kernel), unless metrics_allow names loopback.
TEST_F(LocalIsolationTest, ADaemonsMetricsServeOnlyItsOwnUser) {
  ASSERT_TRUE(haveTool(tools::curl));
  int port = freePort();
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  auto startDaemon = [&](const std::string &conf,
                         const std::string &listen = "") {
    run(binPath("linkd") + " stop");
    writeFile("linkd.conf", "metrics_listen = " + listen +
                                std::to_string(port) + "\n" + conf);
    ASSERT_TRUE(exitedZero(run(binPath("ld.linkd") + " other/p.o -o mine")));
    for (int i = 0; i < 500 && !portAccepts(port); ++i)
      std::this_thread::sleep_for(10ms);
  };
  startDaemon("");
  RunResult mine = run("curl -s -i --max-time 10 " + url);
  EXPECT_NE(mine.out.find(" 200 "), std::string::npos) << describe(mine);
  EXPECT_NE(mine.out.find("linkd_"), std::string::npos) << describe(mine);
  RunResult theirs = asOther("curl -s -i --max-time 10 " + url);
  EXPECT_NE(theirs.out.find(" 403 "), std::string::npos) << describe(theirs);
  EXPECT_EQ(theirs.out.find("linkd_"), std::string::npos) << describe(theirs);
  EXPECT_FALSE(logLines("a process of uid " + std::to_string(uid)).empty());
  // IPv6, and IPv4 peers of a dual-stack listener (IPv4-mapped).
  startDaemon("", "[::]:");
  for (std::string host : {"127.0.0.1", "[::1]"}) {
    std::string at = "http://" + host + ":" + std::to_string(port) + "/metrics";
    mine = run("curl -s -i --max-time 10 " + at);
    EXPECT_NE(mine.out.find(" 200 "), std::string::npos) << describe(mine);
    theirs = asOther("curl -s -i --max-time 10 " + at);
    EXPECT_NE(theirs.out.find(" 403 "), std::string::npos) << describe(theirs);
  }
  // Opened by the operator.
  startDaemon("metrics_allow = 127.0.0.1\n");
  theirs = asOther("curl -s -i --max-time 10 " + url);
  EXPECT_NE(theirs.out.find(" 200 "), std::string::npos) << describe(theirs);
}

} // namespace
} // namespace linkd::e2e
