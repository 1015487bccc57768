// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The shared cache across CI workers, against real servers from Debian:
// redis-server and nginx (WebDAV) started by each test in its directory.
// A "worker" is a daemon with its own socket and local store; workers share
// only the remote tier. Counters come from `linkd stats --json`.
#include "tier_workers.h"

#include <functional>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <thread>

namespace linkd::e2e {
namespace {

const Tool redisServer{"/usr/bin/redis-server", "redis-server"};
const Tool redisCli{"/usr/bin/redis-cli", "redis-tools"};
const Tool nginx{"/usr/sbin/nginx", "nginx-light"};

class SharedCacheTest : public TierWorkersTest {
protected:
  // Starts redis-server on a Unix socket in the test directory.
  std::string startRedis() {
    EXPECT_TRUE(haveTool(redisServer));
    std::string sock = path("redis.sock");
    // exec: the server replaces the shell, so the pid killed at teardown is
    // the server's.
    Background bg =
        start("exec " + redisServer.path + " --port 0 --unixsocket " + sock +
              " --save '' --appendonly no");
    atTeardown([this, bg] {
      kill(bg.pid, SIGTERM);
      wait(bg, 10s);
    });
    for (int i = 0; i < 1000 && !exists("redis.sock"); ++i)
      std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(exists("redis.sock"));
    redisPid = bg.pid;
    return "redis+unix://" + sock;
  }

  // Starts nginx with WebDAV on a loopback port; returns the tier URL.
  std::string startNginx() {
    EXPECT_TRUE(haveTool(nginx));
    int port = freePort();
    run("mkdir -p nginx/data nginx/body && chmod 777 nginx/data");
    // As root, nginx's workers would run as nobody, who cannot enter this
    // test's private directory.
    std::string user = geteuid() == 0 ? "user root; " : "";
    writeFile("nginx/nginx.conf",
              user + "worker_processes 1; daemon off; pid " +
                  path("nginx/pid") + "; error_log " + path("nginx/error.log") +
                  ";\nevents {}\nhttp { client_body_temp_path " +
                  path("nginx/body") +
                  "; client_max_body_size 0; access_log off;\n"
                  "server { listen 127.0.0.1:" +
                  std::to_string(port) + "; root " + path("nginx/data") +
                  ";\nlocation / { dav_methods PUT DELETE; "
                  "create_full_put_path on; dav_access user:rw all:r; } } }\n");
    Background bg = start("exec " + nginx.path + " -c " +
                          path("nginx/nginx.conf") + " -p " + path("nginx"));
    atTeardown([this, bg] {
      kill(bg.pid, SIGTERM);
      wait(bg, 10s);
    });
    // Ready when it accepts connections (a worker that found it down would
    // open its circuit breaker and skip it for the rest of the test).
    bool up = false;
    for (int i = 0; i < 1000 && !up; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      up = connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0;
      close(fd);
      if (!up)
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(up) << "nginx did not start: " << readFile("nginx/error.log");
    return "http://127.0.0.1:" + std::to_string(port) + "/linkd";
  }

  // Worker A links (miss) and publishes; worker B, empty local store, hits.
  void shareBetweenWorkers(const std::string &remote) {
    stockReference();
    std::string a = worker("a", remote), b = worker("b", remote);
    ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
    EXPECT_TRUE(sameBytes("ref", "outA"));
    waitForRemoteWrites(a, 3); // output, result, manifest
    ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
    EXPECT_TRUE(sameBytes("ref", "outB"));
    auto sb = stats(b);
    EXPECT_EQ(sb["hits"], 1);
    EXPECT_GE(sb["remote_hits"], 2);
    // Each thing it took from the remote is backfilled: the manifest and
    // the result before the answer, the output after it (in the
    // background, at a low priority: waited for, up to 20 s).
    for (int i = 0; i < 400 && sb["remote_backfills"] < sb["remote_hits"];
         ++i) {
      std::this_thread::sleep_for(50ms);
      sb = stats(b);
    }
    EXPECT_GE(sb["remote_backfills"], sb["remote_hits"]);
    // B's local store now has it: the next link hits without the remote.
    long long remoteHits = sb["remote_hits"];
    ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
    EXPECT_TRUE(sameBytes("ref", "outB"));
    EXPECT_EQ(stats(b)["remote_hits"], remoteHits);
    EXPECT_EQ(run("./outB").out, "42\n");
  }

  // The replay of one entry over another key's against the tier at `url`:
  // `keys()` lists its action keys ("ac:<hex>" lines), `copy(from, to)` copies
  // one entry over another key's (non-empty on success).
  void replayedEntry(
      const std::string &url, const std::function<std::string()> &keys,
      const std::function<std::string(const std::string &, const std::string &)>
          &copy) {
    auto linkWith = [&](const std::string &env, const std::string &id,
                        const std::string &keep) {
      return run(
          env + "rm -f out && clang-19 --ld-path=" + binPath("ld.linkd") +
          " main.o lib.o -Wl,--build-id=" + id + " -o out && mv out " + keep);
    };
    ASSERT_TRUE(exitedZero(run("clang-19 -fuse-ld=lld main.o lib.o "
                               "-Wl,--build-id=0xbb -o refbb")));
    std::string w = worker("writer", url);
    ASSERT_TRUE(exitedZero(linkWith(w, "0xaa", "outaa")));
    waitForRemoteWrites(w, 3);
    std::string before = keys();
    ASSERT_TRUE(exitedZero(linkWith(w, "0xbb", "outbb")));
    waitForRemoteWrites(w, 6);
    std::string after = keys();
    auto only = [](const std::string &lines) {
      return lines.substr(3, lines.find('\n') - 3);
    };
    ASSERT_EQ(std::count(before.begin(), before.end(), '\n'), 1) << before;
    std::string aa = only(before), bb;
    std::istringstream in(after);
    for (std::string k; std::getline(in, k);)
      if (k != "ac:" + aa)
        bb = k.substr(3);
    ASSERT_EQ(bb.size(), 64u) << after;
    ASSERT_NE(copy(aa, bb), "");
    std::string r = worker("reader", url + "?mode=read-only");
    ASSERT_TRUE(exitedZero(linkWith(r, "0xbb", "outReader")));
    EXPECT_TRUE(sameBytes("refbb", "outReader"));
    auto sr = stats(r);
    EXPECT_EQ(sr["hits"], 0);
    EXPECT_GE(sr["remote_rejected"], 1);
    EXPECT_EQ(workerLog("reader", "the entry for key " + bb + " is rejected"),
              1u);
  }

  pid_t redisPid = -1;
};

TEST_F(SharedCacheTest, RedisWorkerBHitsWhatWorkerALinked) {
  shareBetweenWorkers(startRedis());
}

TEST_F(SharedCacheTest, HttpWorkerBHitsWhatWorkerALinked) {
  shareBetweenWorkers(startNginx());
}

TEST_F(SharedCacheTest, LargeOutputsStreamFromBothTiers) {
  // Above 16 MiB blobs are stored raw and streamed (Redis: pipelined
  // GETRANGE pieces; HTTP: one GET) into the output, verified on the way.
  writeFile("lib.c", "const char big[24 << 20] = {1, 2, 3};\n"
                     "int lib(void) { return big[1] + 40; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c lib.c")));
  stockReference();
  ASSERT_GT(readFile("ref").size(), 24u << 20);
  for (const std::string &url : {startRedis(), startNginx()}) {
    std::string tag = url.starts_with("redis") ? "r" : "h";
    std::string a = worker("a" + tag, url), b = worker("b" + tag, url);
    ASSERT_TRUE(exitedZero(linkAs(a, "outA" + tag)));
    waitForRemoteWrites(a, 3);
    ASSERT_TRUE(exitedZero(linkAs(b, "outB" + tag)));
    EXPECT_TRUE(sameBytes("ref", "outB" + tag)) << url;
    auto sb = stats(b);
    EXPECT_EQ(sb["hits"], 1) << url;
    EXPECT_GE(sb["remote_bytes_read"], 24 << 20) << url;
    EXPECT_EQ(run("./outB" + tag).out, "42\n");
  }
}

TEST_F(SharedCacheTest, ReadOnlyWorkerHitsButNeverWrites) {
  std::string url = startNginx();
  stockReference();
  std::string ro = worker("ro", url + "?mode=read-only");
  ASSERT_TRUE(exitedZero(linkAs(ro, "outRO")));
  EXPECT_TRUE(sameBytes("ref", "outRO"));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(run("find nginx/data -type f | wc -l").out, "0\n");
  EXPECT_EQ(stats(ro)["remote_writes"], 0);
  // A read-write worker publishes; the read-only one then hits.
  std::string rw = worker("rw", url);
  ASSERT_TRUE(exitedZero(linkAs(rw, "outRW")));
  waitForRemoteWrites(rw, 3);
  RunResult files = run("find nginx/data -type f | wc -l");
  std::string ro2 = worker("ro2", url + "?mode=read-only");
  ASSERT_TRUE(exitedZero(linkAs(ro2, "outRO")));
  EXPECT_TRUE(sameBytes("ref", "outRO"));
  EXPECT_EQ(stats(ro2)["hits"], 1);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(run("find nginx/data -type f | wc -l").out, files.out);
}

TEST_F(SharedCacheTest, UnsignedEntriesAreRejectedByKeyedReaders) {
  std::string url = startRedis();
  stockReference();
  writeFile("key", "fleet-secret-1\n");
  // A worker without the key publishes (its entries are unsigned).
  std::string rogue = worker("rogue", url);
  ASSERT_TRUE(exitedZero(linkAs(rogue, "outRogue")));
  waitForRemoteWrites(rogue, 3);
  // A keyed worker must not trust them: a miss, counted, correct output.
  std::string keyed =
      worker("keyed", url, "LINKD_REMOTE_KEY_FILE=" + path("key"));
  ASSERT_TRUE(exitedZero(linkAs(keyed, "outKeyed")));
  EXPECT_TRUE(sameBytes("ref", "outKeyed"));
  auto sk = stats(keyed);
  EXPECT_EQ(sk["hits"], 0);
  EXPECT_GE(sk["remote_rejected"], 1);
  // Its own (signed) entries serve another keyed worker...
  waitForRemoteWrites(keyed, 2);
  std::string keyed2 =
      worker("keyed2", url, "LINKD_REMOTE_KEY_FILE=" + path("key"));
  ASSERT_TRUE(exitedZero(linkAs(keyed2, "outKeyed2")));
  EXPECT_TRUE(sameBytes("ref", "outKeyed2"));
  EXPECT_EQ(stats(keyed2)["hits"], 1);
  // ...but not one with another key.
  writeFile("key2", "another-secret\n");
  std::string other =
      worker("other", url, "LINKD_REMOTE_KEY_FILE=" + path("key2"));
  ASSERT_TRUE(exitedZero(linkAs(other, "outOther")));
  EXPECT_TRUE(sameBytes("ref", "outOther"));
  EXPECT_EQ(stats(other)["hits"], 0);
  EXPECT_GE(stats(other)["remote_rejected"], 1);
}

// A writer links two commands that differ in their
// build-id; the first one's action entry is copied over the second's key
// in the tier (as anyone who may write to it can); a reader without the
// fleet key must not answer the second command with the first's bytes.
// Before, it wrote build-id 0xaa for the 0xbb command and no counter moved.
TEST_F(SharedCacheTest, AnEntryCopiedOverAnotherKeyIsRejectedRedis) {
  std::string url = startRedis();
  ASSERT_TRUE(haveTool(redisCli));
  std::string cli = redisCli.path + " -s " + path("redis.sock");
  auto keys = [&] { return run(cli + " --scan --pattern 'ac:*' | sort").out; };
  replayedEntry(url, keys, [&](const std::string &from, const std::string &to) {
    return run(cli + " copy ac:" + from + " ac:" + to + " replace").out;
  });
}

TEST_F(SharedCacheTest, AnEntryCopiedOverAnotherKeyIsRejectedHttp) {
  std::string url = startNginx();
  auto keys = [&] {
    return run("ls nginx/data/linkd/ac 2>/dev/null | sed 's/^/ac:/' | sort")
        .out;
  };
  replayedEntry(url, keys, [&](const std::string &from, const std::string &to) {
    return run("cp nginx/data/linkd/ac/" + from + " nginx/data/linkd/ac/" + to +
               " && echo 1")
        .out;
  });
}

// The Redis ACL users of docs/shared-cache.md, applied
// from the doc's own lines: the writer publishes, the reader (read-only)
// hits, and neither meets an error. Before, the documented reader ACL
// (+get +exists) gave 0 hits: linkd also sends GETRANGE and STRLEN.
TEST_F(SharedCacheTest, TheDocumentedRedisAclsWork) {
  ASSERT_TRUE(haveTool(redisServer));
  ASSERT_TRUE(haveTool(redisCli));
  int port = freePort();
  Background bg =
      start("exec " + redisServer.path + " --port " + std::to_string(port) +
            " --bind 127.0.0.1 --save '' --appendonly no");
  atTeardown([this, bg] {
    kill(bg.pid, SIGTERM);
    wait(bg, 10s);
  });
  ASSERT_TRUE(waitForPort(port, bg.pid));
  std::string doc =
      readFile(std::string(LINKD_E2E_SOURCE_DIR) + "/docs/shared-cache.md");
  std::istringstream in(doc);
  int users = 0;
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find("redis-cli ACL SETUSER ");
    if (at == std::string::npos || line.find('#') < at)
      continue;
    line = std::regex_replace(line.substr(at + 10),
                              std::regex("WRITER_PASSWORD"), "w-pass");
    line = std::regex_replace(line, std::regex("READER_PASSWORD"), "r-pass");
    RunResult r =
        run(redisCli.path + " -p " + std::to_string(port) + " " + line);
    ASSERT_EQ(r.out, "OK\n") << line << describe(r);
    ++users;
  }
  ASSERT_EQ(users, 2) << "the doc's ACL lines";
  // And the reader the docs gave before, for the end of the test.
  ASSERT_EQ(run(redisCli.path + " -p " + std::to_string(port) +
                " ACL SETUSER old on '>o-pass' '~myproj:*' -@all +get +exists")
                .out,
            "OK\n");
  // The default user off: only the documented users get in.
  ASSERT_EQ(run(redisCli.path + " -p " + std::to_string(port) +
                " ACL SETUSER default off")
                .out,
            "OK\n");
  stockReference();
  std::string base =
      "redis://{u}@127.0.0.1:" + std::to_string(port) + "/0?prefix=myproj:";
  std::string w =
      worker("writer",
             std::regex_replace(base, std::regex("\\{u\\}"), "linkd:w-pass"));
  ASSERT_TRUE(exitedZero(linkAs(w, "outW")));
  waitForRemoteWrites(w, 3);
  EXPECT_EQ(stats(w)["remote_errors"], 0);
  std::string r =
      worker("reader",
             std::regex_replace(base, std::regex("\\{u\\}"), "reader:r-pass") +
                 "&mode=read-only");
  ASSERT_TRUE(exitedZero(linkAs(r, "outR")));
  EXPECT_TRUE(sameBytes("ref", "outR"));
  auto sr = stats(r);
  EXPECT_EQ(sr["hits"], 1);
  EXPECT_EQ(sr["remote_errors"], 0);
  // The ACL the docs gave before (+get +exists): no hit, and the log says
  // why, naming the tier, where before only
  // remote_errors moved.
  std::string old = worker(
      "old", std::regex_replace(base, std::regex("\\{u\\}"), "old:o-pass") +
                 "&mode=read-only");
  ASSERT_TRUE(exitedZero(linkAs(old, "outOld")));
  EXPECT_TRUE(sameBytes("ref", "outOld"));
  EXPECT_EQ(stats(old)["hits"], 0);
  EXPECT_EQ(workerLog("old", "remote tier redis://127.0.0.1:" +
                                 std::to_string(port) + "/0: failed: NOPERM"),
            1u)
      << run("cat old/state/linkd.log").out;
}

TEST_F(SharedCacheTest, WrongBlobFromTheRemoteIsDetectedAndIgnored) {
  std::string url = startRedis();
  stockReference();
  std::string a = worker("a", url);
  ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
  waitForRemoteWrites(a, 3);
  // Replace every blob on the server with other (well-formed) content.
  ASSERT_TRUE(haveTool(redisCli));
  RunResult keys = run(redisCli.path + " -s " + path("redis.sock") +
                       " --scan --pattern 'cas:*'");
  ASSERT_TRUE(exitedZero(keys));
  std::istringstream in(keys.out);
  int n = 0;
  for (std::string k; std::getline(in, k); ++n)
    ASSERT_TRUE(exitedZero(run(redisCli.path + " -s " + path("redis.sock") +
                               " set " + k + " rnot-the-content")));
  ASSERT_GT(n, 0);
  std::string b = worker("b", url);
  ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
  EXPECT_TRUE(sameBytes("ref", "outB"));
  auto sb = stats(b);
  EXPECT_EQ(sb["hits"], 0);
  EXPECT_GE(sb["remote_corrupt"], 1);
}

// Blobs flipped in the tier are healed by the next worker
// that detects them and has the right bytes (its own link's), so that the
// worker after it hits again. Before, writers saw them present and never
// replaced them: every reader missed on them for good.
TEST_F(SharedCacheTest, CorruptBlobsInATierAreReplaced) {
  for (bool redis : {true, false}) {
    SCOPED_TRACE(redis ? "redis" : "http");
    std::string url = redis ? startRedis() : startNginx();
    std::string tag = redis ? "r" : "h";
    stockReference();
    std::string a = worker("a" + tag, url);
    ASSERT_TRUE(exitedZero(linkAs(a, "outA")));
    waitForRemoteWrites(a, 3);
    // Flip a byte of every blob.
    if (redis) {
      ASSERT_TRUE(haveTool(redisCli));
      std::string cli = redisCli.path + " -s " + path("redis.sock");
      RunResult keys = run(cli + " --scan --pattern 'cas:*'");
      std::istringstream in(keys.out);
      int n = 0;
      for (std::string k; std::getline(in, k); ++n)
        ASSERT_TRUE(exitedZero(run(cli + " setrange " + k + " 8 Z")));
      ASSERT_GT(n, 0);
    } else {
      ASSERT_TRUE(exitedZero(
          run("for f in nginx/data/linkd/cas/*; do printf Z | dd of=$f bs=1 "
              "seek=8 count=1 conv=notrunc 2>/dev/null; done")));
    }
    std::string b = worker("b" + tag, url);
    ASSERT_TRUE(exitedZero(linkAs(b, "outB")));
    EXPECT_TRUE(sameBytes("ref", "outB"));
    waitForRemoteWrites(b, 1);
    std::this_thread::sleep_for(300ms);
    auto sb = stats(b);
    EXPECT_EQ(sb["hits"], 0);
    EXPECT_GE(sb["remote_corrupt"], 1);
    EXPECT_EQ(workerLog("b" + tag, "does not hash to its name"), 1u);
    // Per tier in the metrics.
    RunResult metrics = run(b + binPath("linkd") + " metrics");
    EXPECT_TRUE(std::regex_search(
        metrics.out,
        std::regex("linkd_remote_tier_requests_total\\{tier=\"[^\"]+\","
                   "outcome=\"corrupt\"\\} [1-9]")))
        << metrics.out;
    std::string c = worker("c" + tag, url);
    ASSERT_TRUE(exitedZero(linkAs(c, "outC")));
    EXPECT_TRUE(sameBytes("ref", "outC"));
    auto sc = stats(c);
    EXPECT_EQ(sc["hits"], 1);
    EXPECT_EQ(sc["remote_corrupt"], 0);
  }
}

// A first tier that lost everything (a Redis restarted
// empty) is refilled from the second on a hit.
TEST_F(SharedCacheTest, AnEmptiedFirstTierIsRefilledFromTheNext) {
  std::string redis = startRedis(), http = startNginx();
  stockReference();
  std::string both = redis + "," + http;
  std::string w = worker("w", both);
  ASSERT_TRUE(exitedZero(linkAs(w, "outW")));
  waitForRemoteWrites(w, 6);
  ASSERT_TRUE(haveTool(redisCli));
  ASSERT_TRUE(exitedZero(
      run(redisCli.path + " -s " + path("redis.sock") + " flushall")));
  std::string r = worker("r", both);
  ASSERT_TRUE(exitedZero(linkAs(r, "outR")));
  EXPECT_TRUE(sameBytes("ref", "outR"));
  EXPECT_EQ(stats(r)["hits"], 1);
  for (int i = 0; i < 200 && stats(r)["remote_refills"] < 3; ++i)
    std::this_thread::sleep_for(25ms);
  EXPECT_GE(stats(r)["remote_refills"], 3); // the entry and the blobs
  // Redis alone serves now.
  std::string s = worker("s", redis + "?mode=read-only");
  ASSERT_TRUE(exitedZero(linkAs(s, "outS")));
  EXPECT_TRUE(sameBytes("ref", "outS"));
  EXPECT_EQ(stats(s)["hits"], 1);
}

TEST_F(SharedCacheTest, DeadRemotesCostNothingButTheirTimeoutOnce) {
  stockReference();
  // 1. A closed port: refused at once.
  std::string closed =
      worker("closed", "http://127.0.0.1:" + std::to_string(freePort()) + "/x");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(exitedZero(linkAs(closed, "outC" + std::to_string(i))));
    EXPECT_TRUE(sameBytes("ref", "outC" + std::to_string(i)));
  }
  EXPECT_GE(stats(closed)["remote_errors"], 1);

  // 2. A server that accepts and never answers: the listen backlog
  // completes connections nobody will ever serve.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 64), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  atTeardown([fd] { close(fd); });
  std::string silent =
      worker("silent",
             "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x",
             "LINKD_REMOTE_TIMEOUT_MS=3000");
  auto timed = [&](const std::string &out) {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(exitedZero(linkAs(silent, out)));
    EXPECT_TRUE(sameBytes("ref", out));
    return std::chrono::steady_clock::now() - t0;
  };
  // A 3 s timeout, so that "paid the timeout" and "did not" stay apart on a
  // loaded machine.
  auto first = timed("outS0");
  EXPECT_GE(first, 3s);       // the timeout, once
  EXPECT_LT(first, 3s + 10s); // (plus daemon start-up)
  for (int i = 1; i <= 3; ++i)
    EXPECT_LT(timed("outS" + std::to_string(i)), 2500ms) << "breaker closed?";
  auto ss = stats(silent);
  EXPECT_EQ(ss["remote_timeouts"], 1);
  EXPECT_GE(ss["remote_skipped_breaker_open"], 1);
  // Each said once in the log, naming the tier.
  std::string tier =
      "remote tier http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) +
      "/x: ";
  EXPECT_EQ(workerLog("silent", tier + "timed out"), 1u);
  EXPECT_EQ(workerLog("silent", tier + "circuit breaker open"), 1u);
  // And the miss reasons say which tier did what.
  std::string at =
      "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x: ";
  EXPECT_EQ(workerLog("silent", "no remote manifest (" + at + "timed out)"), 1u)
      << run("cat silent/state/linkd.log").out;

  EXPECT_GE(workerLog("closed", "failed: GET /ac/"), 1u)
      << run("cat closed/state/linkd.log").out;

  // 3. A server stopped mid-build.
  std::string url = startRedis();
  std::string r = worker("r", url);
  ASSERT_TRUE(exitedZero(linkAs(r, "outR0")));
  kill(redisPid, SIGKILL);
  for (int i = 1; i <= 3; ++i) {
    std::string out = "outR" + std::to_string(i);
    ASSERT_TRUE(exitedZero(run("rm -f " + out)));
    ASSERT_TRUE(exitedZero(linkAs(r, out)));
    EXPECT_TRUE(sameBytes("ref", out));
  }
}

TEST_F(SharedCacheTest, CheckoutsAtDifferentPathsShareThroughTheRemote) {
  std::string url = startRedis();
  for (const char *co : {"co1", "co2"})
    ASSERT_TRUE(
        exitedZero(run(std::string("mkdir -p ") + co + " && cp main.c lib.c " +
                       co + "/ && cd " + co + " && clang-19 -c main.c lib.c")));
  auto linkIn = [&](const std::string &co) {
    std::string cmd = "cd " + co + " && clang-19 --ld-path={ld} " + path(co) +
                      "/main.o " + path(co) + "/lib.o -o " + path(co) + "/prog";
    EXPECT_TRUE(exitedZero(run(replaceAll(cmd, "{ld}", tools::ldLld.path))));
    EXPECT_TRUE(exitedZero(run("mv " + co + "/prog " + co + "/prog.stock")));
    std::string env = worker(co, url, "LINKD_BASE_DIR=" + path(co));
    EXPECT_TRUE(
        exitedZero(run(env + replaceAll(cmd, "{ld}", binPath("ld.linkd")))));
    EXPECT_TRUE(sameBytes(co + "/prog.stock", co + "/prog"));
    return env;
  };
  std::string w1 = linkIn("co1");
  waitForRemoteWrites(w1, 3);
  std::string w2 = linkIn("co2");
  EXPECT_EQ(stats(w2)["hits"], 1);
}

} // namespace
} // namespace linkd::e2e
