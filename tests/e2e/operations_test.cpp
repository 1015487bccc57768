// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// linkd as a fleet service, with the real tools operators use: Debian's
// Prometheus server scrapes a daemon and a farm node and its numbers must
// be `linkd stats --json`'s (promtool lints the text); a stock gRPC client
// (Python grpcio, generic calls with hand-encoded protobuf: Debian ships no
// health stubs) checks and watches grpc.health.v1.Health on a node; a node
// stopped under a load of offloads loses no link and exits within its
// drain_timeout; the metrics endpoint refuses peers that are not loopback
// unless metrics_allow names them, and bounds what a peer may cost it.
//
// Nodes here listen on loopback in plaintext (allowed there without
// --insecure); farm_test.cpp covers TLS and tokens.
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <thread>

namespace linkd::e2e {
namespace {

const Tool prometheus{"/usr/bin/prometheus", "prometheus"};
const Tool promtool{"/usr/bin/promtool", "prometheus"};
const Tool python{"/usr/bin/python3", "python3-grpcio"};

constexpr const char *kToken = "ops-token-0123456789abcdef";

// grpc.health.v1 through grpcio's generic calls. HealthCheckRequest is
// `string service = 1`, HealthCheckResponse `ServingStatus status = 1`.
constexpr const char *kHealthPy = R"(import sys, grpc
def enc(name):
    b = name.encode()
    return b'\x0a' + bytes([len(b)]) + b if b else b''
def dec(b):
    return b[1] if len(b) >= 2 and b[0] == 0x08 else 0
NAMES = {0: 'UNKNOWN', 1: 'SERVING', 2: 'NOT_SERVING', 3: 'SERVICE_UNKNOWN'}
ch = grpc.insecure_channel(sys.argv[1])
if sys.argv[2] == 'check':
    call = ch.unary_unary('/grpc.health.v1.Health/Check')
    try:
        print(NAMES[dec(call(enc(sys.argv[3]), timeout=10))])
    except grpc.RpcError as e:
        print(e.code().name)
elif sys.argv[2] == 'hold':
    # An Offload call that sends nothing: the node counts it as running until
    # its stall timeout (a slow client), which keeps a drain open.
    import threading
    done = threading.Event()
    def nothing():
        done.wait(120)
        return
        yield
    call = ch.stream_stream('/linkd.v1.Farm/Offload')
    try:
        for _ in call(nothing(), metadata=[('authorization', 'Bearer ' + sys.argv[3])], timeout=120):
            pass
        print('OK', flush=True)
    except grpc.RpcError as e:
        print(e.code().name, flush=True)
    done.set()
else:
    call = ch.unary_stream('/grpc.health.v1.Health/Watch')
    try:
        for r in call(enc(sys.argv[3]), timeout=300):
            print(NAMES[dec(r)], flush=True)
    except grpc.RpcError as e:
        print('END', e.code().name, flush=True)
)";

// Prometheus's instant query API: every series of `query` as
// "name{label=value,...} value" lines (labels sorted; job and instance
// left out).
constexpr const char *kPromQueryPy =
    R"(import sys, json, urllib.request, urllib.parse
url = 'http://%s/api/v1/query?%s' % (sys.argv[1], urllib.parse.urlencode({'query': sys.argv[2]}))
for r in json.load(urllib.request.urlopen(url, timeout=10))['data']['result']:
    m = dict(r['metric'])
    name = m.pop('__name__', '')
    m.pop('job', None); m.pop('instance', None)
    print(name + '{' + ','.join('%s=%s' % kv for kv in sorted(m.items())) + '} ' + r['value'][1])
)";

// "name{a=b,...}" -> value, from text in that form or Prometheus's own
// exposition (labels quoted), for comparisons.
std::map<std::string, double> parseSeries(const std::string &text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    size_t sp = line.rfind(' ');
    if (sp == std::string::npos)
      continue;
    std::string key = line.substr(0, sp);
    key.erase(std::remove(key.begin(), key.end(), '"'), key.end());
    if (key.find('{') == std::string::npos)
      key += "{}";
    out[key] = std::stod(line.substr(sp + 1));
  }
  return out;
}

class OperationsTest : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    writeFile("tokens", std::string(kToken) + " ops 16\n");
    writeFile("tok", std::string(kToken) + "\n");
    writeFile("health.py", kHealthPy);
    writeFile("promq.py", kPromQueryPy);
  }

  struct Node {
    std::string env; // the node's LINKD_SOCKET etc.
    int port = 0, metricsPort = 0;
    Background bg;
    std::shared_ptr<bool> reaped = std::make_shared<bool>(false);
  };

  // Waits for the node's exit (teardown then leaves it alone).
  RunResult waitForNode(Node &n, std::chrono::milliseconds timeout) {
    *n.reaped = true;
    return wait(n.bg, timeout);
  }

  Node startNode(const std::string &name, const std::string &extra = "",
                 const std::string &options = "") {
    Node n;
    n.port = freePort();
    n.metricsPort = freePort();
    run("mkdir -p " + name + "/run && chmod 700 " + name + "/run");
    n.env = "export LINKD_SOCKET=" + path(name + "/run/linkd.sock") +
            " LINKD_STATE_DIR=" + path(name + "/state") +
            " LINKD_CACHE_DIR=" + path(name + "/cache") + "; ";
    n.bg = start(n.env + extra + " exec " + binPath("linkd") +
                 " serve --listen 127.0.0.1:" + std::to_string(n.port) +
                 " --token-file " + path("tokens") + " --metrics-listen " +
                 std::to_string(n.metricsPort) + " " + options);
    Background bg = n.bg;
    atTeardown([this, bg, reaped = n.reaped] {
      if (*reaped)
        return;
      kill(bg.pid, SIGTERM);
      wait(bg, 60s);
    });
    EXPECT_TRUE(waitForPort(n.port, bg.pid))
        << "farm node " << name << " did not start";
    return n;
  }

  std::string farmEnv(const Node &n) {
    return "export LINKD_FARM=ipv4:127.0.0.1:" + std::to_string(n.port) +
           " LINKD_FARM_INSECURE=1 LINKD_FARM_POLICY=remote"
           " LINKD_FARM_TOKEN_FILE=" +
           path("tok") + "; ";
  }

  // GET http://127.0.0.1:port/metrics (or from `address`): status line and
  // body.
  RunResult scrape(int port, const std::string &address = "127.0.0.1") {
    return run("curl -s -i --max-time 10 http://" + address + ":" +
               std::to_string(port) + "/metrics");
  }

  std::map<std::string, double> metricsAt(int port) {
    RunResult r = scrape(port);
    size_t body = r.out.find("\r\n\r\n");
    return parseSeries(body == std::string::npos ? "" : r.out.substr(body + 4));
  }

  std::string healthCheck(int port, const std::string &service) {
    RunResult r =
        run(python.path + " health.py 127.0.0.1:" + std::to_string(port) +
            " check '" + service + "'");
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n')
      out.pop_back();
    return out;
  }

  void writeProgram() {
    writeFile("main.c", "int lib(int);\n"
                        "int main(void) { return lib(20) == 42 ? 0 : 1; }\n");
    writeFile("lib.c", "int lib(int x) { return 2 * x + 2; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -O1 -c main.c lib.c")));
  }
};

// The first address of a non-loopback interface ("" if none).
std::string outsideAddress(E2eTest &, const std::string &ipOutput) {
  std::smatch m;
  std::regex re("inet ([0-9.]+)/");
  for (auto it = std::sregex_iterator(ipOutput.begin(), ipOutput.end(), re);
       it != std::sregex_iterator(); ++it)
    if (!(*it)[1].str().starts_with("127."))
      return (*it)[1];
  return {};
}

// The shipped rules (deploy/farm-example/linkd-rules.yml) load, and their
// alerts fire on the series that should fire them, a flapping remote tier
// included (its breaker never stayed open the 5 minutes
// the breaker alert waits).
TEST_F(OperationsTest, TheShippedAlertRulesFire) {
  ASSERT_TRUE(haveTool(promtool));
  std::string dir = std::string(LINKD_E2E_SOURCE_DIR) + "/deploy/farm-example";
  RunResult check = run("promtool check rules " + dir + "/linkd-rules.yml");
  EXPECT_TRUE(exitedZero(check)) << describe(check);
  RunResult test =
      run("cd " + dir + " && promtool test rules linkd-rules.test.yml");
  EXPECT_TRUE(exitedZero(test)) << describe(test);
  EXPECT_NE(test.out.find("SUCCESS"), std::string::npos) << describe(test);
}

TEST_F(OperationsTest, PrometheusScrapesTheDaemonAndANodeAndAgreesWithStats) {
  ASSERT_TRUE(haveTool(prometheus));
  ASSERT_TRUE(haveTool(promtool));
  ASSERT_TRUE(haveTool(tools::curl));
  ASSERT_TRUE(haveTool(python));
  Node node = startNode("n1");
  int daemonMetrics = freePort();
  writeFile("linkd.conf",
            "metrics_listen = " + std::to_string(daemonMetrics) + "\n");
  writeProgram();
  std::string farm = farmEnv(node);
  // A known workload: a miss offloaded to the node, a hit, an uncacheable
  // link, one with the cache off, an archive miss and hit.
  ASSERT_TRUE(linkBoth(
      elfLinkers(), farm + "clang-19 --ld-path={ld} main.o lib.o -o p", {"p"}));
  EXPECT_EQ(run("./p").exitCode, 0);
  // The offloaded result is stored after the client has its answer.
  waitForStored(1);
  ASSERT_TRUE(exitedZero(run("rm p && " + farm + "clang-19 --ld-path=" +
                             binPath("ld.linkd") + " main.o lib.o -o p")));
  EXPECT_TRUE(sameBytes("p.stock", "p"));
  ASSERT_TRUE(exitedZero(run(farm + binPath("ld.linkd") +
                             " main.o lib.o -e main --build-id=uuid -o u")));
  ASSERT_TRUE(exitedZero(run(farm + binPath("ld.linkd") +
                             " main.o lib.o -e main --linkd-no-cache -o n")));
  for (int i = 0; i < 2; ++i) {
    if (i == 1)
      waitForStored(2);
    ASSERT_TRUE(exitedZero(
        run("rm -f liba.a && " + binPath("ar.linkd") + " rcs liba.a lib.o")));
  }
  auto stats = cacheStats();
  ASSERT_EQ(stats["hits"], 1);
  ASSERT_EQ(stats["farm_offloaded"], 1) << "the miss was not offloaded";

  // The text passes promtool's lint, from the daemon and from the node.
  RunResult lint = run(binPath("linkd") + " metrics | promtool check metrics");
  EXPECT_TRUE(exitedZero(lint)) << describe(lint);
  EXPECT_EQ(lint.out + lint.err, "");
  RunResult nodeLint =
      run("curl -s http://127.0.0.1:" + std::to_string(node.metricsPort) +
          "/metrics | promtool check metrics");
  EXPECT_TRUE(exitedZero(nodeLint)) << describe(nodeLint);
  EXPECT_EQ(nodeLint.out + nodeLint.err, "");

  // Prometheus scrapes both, every second.
  int promPort = freePort();
  writeFile("prom.yml", "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        "scrape_configs:\n"
                        "  - job_name: linkd\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:" +
                            std::to_string(daemonMetrics) +
                            "']\n"
                            "  - job_name: node\n    static_configs:\n"
                            "      - targets: ['127.0.0.1:" +
                            std::to_string(node.metricsPort) + "']\n");
  Background prom = start("exec prometheus --config.file=prom.yml "
                          "--storage.tsdb.path=prom-data --log.level=warn "
                          "--web.listen-address=127.0.0.1:" +
                          std::to_string(promPort));
  atTeardown([this, prom] {
    kill(prom.pid, SIGTERM);
    wait(prom, 30s);
  });
  std::string api = "127.0.0.1:" + std::to_string(promPort);
  auto query = [&](const std::string &q) {
    return parseSeries(
        run(python.path + " promq.py " + api + " '" + q + "'").out);
  };
  // What Prometheus must have, from `linkd stats --json` (client) and from
  // the client's offload count (node).
  stats = cacheStats();
  std::map<std::string, double> want = {
      {"linkd_requests_total{kind=link,outcome=hit}", stats["hits"]},
      {"linkd_requests_total{kind=link,outcome=miss}", stats["misses"]},
      {"linkd_requests_total{kind=link,outcome=uncacheable}",
       stats["uncacheable"]},
      {"linkd_requests_total{kind=link,outcome=off}", stats["cache_disabled"]},
      {"linkd_requests_total{kind=link,outcome=error}", stats["errors"]},
      {"linkd_requests_total{kind=archive,outcome=hit}", stats["archive_hits"]},
      {"linkd_requests_total{kind=archive,outcome=miss}",
       stats["archive_misses"]},
      {"linkd_uncacheable_requests_total{kind=link,reason=--build-id=uuid}",
       stats["uncacheable"]},
      {"linkd_results_stored_total{}", stats["results_stored"]},
      {"linkd_stored_bytes_total{}", stats["bytes_written"]},
      {"linkd_served_bytes_total{}", stats["bytes_read"]},
      {"linkd_store_entries{}", stats["store_entries"]},
      {"linkd_store_bytes{}", stats["store_bytes"]},
      {"linkd_evictions_total{}", stats["evictions"]},
      {"linkd_farm_offloads_total{}", stats["farm_offloaded"]},
      {"linkd_farm_fallbacks_total{}", stats["farm_fallbacks"]},
      {"linkd_farm_upload_bytes_total{}", stats["farm_bytes_up"]},
      {"linkd_node_links_total{}", stats["farm_offloaded"]},
      {"linkd_node_serving{}", 1},
      // Present from the start, 0 with no offload under way.
      {"linkd_farm_oldest_offload_seconds{}", 0},
  };
  // The counts are not all trivial.
  EXPECT_EQ(want["linkd_requests_total{kind=link,outcome=miss}"], 1);
  EXPECT_EQ(want["linkd_requests_total{kind=link,outcome=uncacheable}"], 1);
  EXPECT_EQ(want["linkd_requests_total{kind=link,outcome=off}"], 1);
  EXPECT_EQ(want["linkd_requests_total{kind=archive,outcome=hit}"], 1);
  EXPECT_GT(want["linkd_stored_bytes_total{}"], 0);
  std::map<std::string, double> got;
  for (int i = 0; i < 60; ++i) {
    // Each job's series (the node is a daemon too: it has linkd_requests_*
    // of its own).
    got = query("{job=\"linkd\",__name__=~\"linkd_.*\"}");
    got.merge(query("{job=\"node\",__name__=~\"linkd_node_.*\"}"));
    bool all = true;
    for (const auto &[k, v] : want)
      all = all && got.count(k) && got[k] == v;
    if (all)
      break;
    std::this_thread::sleep_for(500ms);
  }
  for (const auto &[k, v] : want) {
    ASSERT_TRUE(got.count(k)) << k << " never scraped";
    EXPECT_EQ(got[k], v) << k;
  }
  // Both targets up, and the histograms saw the lookups and the offload.
  EXPECT_EQ(query("sum(up)")["{}"], 2);
  EXPECT_GE(got["linkd_lookup_duration_seconds_count{}"], 2);
  EXPECT_EQ(got["linkd_link_duration_seconds_count{where=farm}"], 1);
  EXPECT_EQ(got["linkd_node_link_duration_seconds_count{}"], 1);
  // And `linkd metrics` prints what the endpoint serves.
  auto once = parseSeries(run(binPath("linkd") + " metrics").out);
  auto served = metricsAt(daemonMetrics);
  for (const char *k : {"linkd_requests_total{kind=link,outcome=hit}",
                        "linkd_stored_bytes_total{}", "linkd_jobs{}"}) {
    ASSERT_TRUE(once.count(k)) << k;
    EXPECT_EQ(once[k], served[k]) << k;
  }
}

TEST_F(OperationsTest, MetricsRefusePeersOffLoopbackUnlessAllowed) {
  ASSERT_TRUE(haveTool(tools::curl));
  std::string outside = outsideAddress(*this, run("ip -4 addr").out);
  if (outside.empty())
    GTEST_SKIP() << "no non-loopback IPv4 address on this machine";
  writeProgram();
  int port = freePort();
  writeFile("linkd.conf",
            "metrics_listen = 0.0.0.0:" + std::to_string(port) + "\n");
  ASSERT_TRUE(exitedZero(
      run(binPath("ld.linkd") + " main.o lib.o -e main -o p"))); // starts it
  RunResult loop = scrape(port);
  EXPECT_NE(loop.out.find("HTTP/1.1 200 OK"), std::string::npos) << loop.out;
  EXPECT_NE(loop.out.find("linkd_requests_total"), std::string::npos);
  // The same endpoint through the machine's own outside address: the peer
  // is that address, not loopback.
  RunResult off = scrape(port, outside);
  EXPECT_NE(off.out.find("403 Forbidden"), std::string::npos) << off.out;
  EXPECT_EQ(off.out.find("linkd_"), std::string::npos) << off.out;
  EXPECT_FALSE(logLines("metrics: refused " + outside).empty());

  // Allowed by metrics_allow (a CIDR covering the address).
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " stop")));
  writeFile("linkd.conf", "metrics_listen = 0.0.0.0:" + std::to_string(port) +
                              "\nmetrics_allow = " + outside + "/32\n");
  ASSERT_TRUE(
      exitedZero(run(binPath("ld.linkd") + " main.o lib.o -e main -o p")));
  RunResult allowed = scrape(port, outside);
  EXPECT_NE(allowed.out.find("HTTP/1.1 200 OK"), std::string::npos)
      << allowed.out;
  EXPECT_NE(allowed.out.find("linkd_requests_total"), std::string::npos);
  // A bad entry is a config warning, never an open endpoint.
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " stop")));
  writeFile("linkd.conf", "metrics_allow = everyone\n");
  RunResult cfg = run(binPath("linkd") + " config");
  EXPECT_NE(cfg.err.find("bad value for metrics_allow"), std::string::npos)
      << cfg.err;
}

TEST_F(OperationsTest, MetricsBoundSilentPeersAndBigRequests) {
  ASSERT_TRUE(haveTool(tools::curl));
  int port = freePort();
  writeFile("linkd.conf", "metrics_listen = " + std::to_string(port) + "\n");
  writeProgram();
  ASSERT_TRUE(
      exitedZero(run(binPath("ld.linkd") + " main.o lib.o -e main -o p")));
  auto connectTo = [&] {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
    return fd;
  };
  // Four peers that say nothing take every scrape slot; scrapes are still
  // answered, every one: the oldest silent peer gives its slot up to a new
  // connection (four idle connections failed 15 of 15
  // scrapes).
  std::vector<int> silent;
  for (int i = 0; i < 4; ++i)
    silent.push_back(connectTo());
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 5; ++i) {
    RunResult answered = scrape(port);
    EXPECT_NE(answered.out.find("200 OK"), std::string::npos)
        << i << ": " << answered.out;
  }
  // Within the read timeout (5 s) the silent ones are all dropped, and the
  // endpoint answers again.
  auto begin = std::chrono::steady_clock::now();
  char c;
  for (int fd : silent) {
    EXPECT_EQ(recv(fd, &c, 1, 0), 0); // closed by the daemon
    close(fd);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 8s);
  EXPECT_NE(scrape(port).out.find("200 OK"), std::string::npos);
  // A request head over 8 KiB gets no answer.
  RunResult big =
      run("curl -s -i --max-time 10 -H 'X-Big: " + std::string(9000, 'x') +
          "' http://127.0.0.1:" + std::to_string(port) + "/metrics");
  EXPECT_EQ(big.out.find("200 OK"), std::string::npos) << big.out;
  // Only GET /metrics.
  EXPECT_NE(run("curl -s -i http://127.0.0.1:" + std::to_string(port) + "/")
                .out.find("404"),
            std::string::npos);
  EXPECT_NE(run("curl -s -i -X POST http://127.0.0.1:" + std::to_string(port) +
                "/metrics")
                .out.find("405"),
            std::string::npos);
  // The daemon still links.
  ASSERT_TRUE(
      exitedZero(run(binPath("ld.linkd") + " main.o lib.o -e main -o p2")));
}

// With two nodes, links that start while one of them
// drains all go to the other: none links locally. Before, 4 of 12 links in
// rounds of 3 were refused by the draining node, retried on it again, and
// linked locally; now the client's channel heeds the node's health status
// (NOT_SERVING as soon as it drains).
TEST_F(OperationsTest, LinksGoToTheOtherNodeWhileOneDrains) {
  ASSERT_TRUE(haveTool(python));
  writeFile("p.c", "int main(void) { return 5; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  Node a = startNode("na", "LINKD_DRAIN_TIMEOUT=60", "--stall-timeout 30");
  Node b = startNode("nb");
  std::string farm = farmEnv(a);
  farm.replace(farm.find("127.0.0.1:"), 0,
               "127.0.0.1:" + std::to_string(b.port) + ",");
  auto link = [&](const std::string &tag) {
    return farm + "clang-19 --ld-path=" + binPath("ld.linkd") +
           " p.o -Wl,--defsym=round_" + tag + "=1 -o out_" + tag;
  };
  // Both nodes in use: the channel is up to each.
  for (const char *tag : {"w1", "w2", "w3", "w4"})
    ASSERT_TRUE(exitedZero(run(link(tag))));
  ASSERT_EQ(cacheStats()["farm_offloaded"], 4);
  // A stalled call keeps A's drain open; then A drains.
  Background hold = start("exec " + python.path + " health.py 127.0.0.1:" +
                          std::to_string(a.port) + " hold " + kToken);
  auto activeOn = [&](const Node &n) {
    return metricsAt(n.metricsPort)["linkd_node_active_links{}"];
  };
  for (int i = 0; i < 1000 && activeOn(a) < 1; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(activeOn(a), 1);
  kill(a.bg.pid, SIGTERM);
  for (int i = 0;
       i < 400 && healthCheck(a.port, "linkd.v1.Farm") != "NOT_SERVING"; ++i)
    std::this_thread::sleep_for(5ms);
  long long before = cacheStats()["farm_offloaded"];
  for (int round = 0; round < 4; ++round) {
    std::vector<std::string> cmds;
    cmds.reserve(3);
    for (int i = 0; i < 3; ++i)
      cmds.push_back(link(std::to_string(round) + "_" + std::to_string(i)));
    for (Background &bg : startTogether(cmds))
      EXPECT_TRUE(exitedZero(wait(bg)));
  }
  auto s = cacheStats();
  EXPECT_EQ(s["farm_offloaded"], before + 12);
  EXPECT_EQ(s["farm_fallbacks"], 0);
  EXPECT_EQ(run("./out_3_2").exitCode, 5);
  EXPECT_TRUE(exitedZero(run("clang-19 -fuse-ld=lld p.o "
                             "-Wl,--defsym=round_3_2=1 -o ref && cmp ref "
                             "out_3_2")));
  kill(hold.pid, SIGKILL);
}

TEST_F(OperationsTest, ADrainedNodeLosesNoLinkAndHealthWatchSeesIt) {
  ASSERT_TRUE(haveTool(python));
  ASSERT_TRUE(haveTool(tools::curl));
  // Links that take a while on the node: 24 MiB of data to upload.
  writeFile("big.c", "const char big[24 << 20] = {1};\n"
                     "int main(void) { return big[0] + 1; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c big.c")));
  constexpr int kDuring = 4, kAfter = 3;
  auto args = [](int i) {
    return " big.o -Wl,--defsym=drain_round=" + std::to_string(i) + " -o out" +
           std::to_string(i);
  };
  for (int i = 0; i <= kDuring + kAfter; ++i)
    ASSERT_TRUE(exitedZero(run("clang-19 -fuse-ld=lld" + args(i) + ".stock")));
  Node node = startNode("n1", "LINKD_DRAIN_TIMEOUT=60", "--stall-timeout 8");
  // A stock gRPC client's view of the node.
  EXPECT_EQ(healthCheck(node.port, ""), "SERVING");
  EXPECT_EQ(healthCheck(node.port, "linkd.v1.Farm"), "SERVING");
  EXPECT_EQ(healthCheck(node.port, "no.such.Service"), "NOT_FOUND");
  Background watch = start("exec " + python.path + " health.py 127.0.0.1:" +
                           std::to_string(node.port) + " watch linkd.v1.Farm");

  // A bounded load (one job slot on the node: the rest queue there), then
  // SIGTERM while it runs.
  std::string farm = farmEnv(node);
  // The node gets big.o once first: the links below then upload nothing
  // and run at once.
  ASSERT_TRUE(exitedZero(run(farm + "clang-19 --ld-path=" +
                             binPath("ld.linkd") + args(kDuring + kAfter))));
  ASSERT_EQ(cacheStats()["farm_offloaded"], 1);
  std::vector<std::string> cmds;
  for (int i = 0; i < kDuring; ++i)
    cmds.push_back(farm + "clang-19 --ld-path=" + binPath("ld.linkd") +
                   args(i));
  // A client that stalls keeps the drain open for the stall timeout, so that
  // the late links below surely meet a draining node.
  Background hold = start("exec " + python.path + " health.py 127.0.0.1:" +
                          std::to_string(node.port) + " hold " + kToken);
  auto activeOnNode = [&] {
    return metricsAt(node.metricsPort)["linkd_node_active_links{}"];
  };
  for (int i = 0; i < 1000 && activeOnNode() < 1; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(activeOnNode(), 1) << "the stalling call did not reach the node";
  std::vector<Background> during = startTogether(cmds);
  for (int i = 0; i < 500 && activeOnNode() < 1 + kDuring; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_GE(activeOnNode(), 2) << "no offload reached the node";
  auto stopped = std::chrono::steady_clock::now();
  kill(node.bg.pid, SIGTERM);
  bool drainingSeen = false;
  for (int i = 0; i < 400 && !drainingSeen; ++i) {
    auto m = metricsAt(node.metricsPort);
    drainingSeen =
        m.count("linkd_node_serving{}") && m["linkd_node_serving{}"] == 0;
    if (!drainingSeen)
      std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(drainingSeen);
  EXPECT_EQ(healthCheck(node.port, "linkd.v1.Farm"), "NOT_SERVING");
  // Links that arrive while it drains are refused and linked locally.
  std::vector<Background> after;
  for (int i = kDuring; i < kDuring + kAfter; ++i)
    after.push_back(
        start(farm + "clang-19 --ld-path=" + binPath("ld.linkd") + args(i)));
  for (int i = 0; i < kDuring + kAfter; ++i) {
    RunResult r = wait(i < kDuring ? during[i] : after[i - kDuring]);
    EXPECT_TRUE(exitedZero(r)) << "link " << i;
    EXPECT_TRUE(sameBytes("out" + std::to_string(i) + ".stock",
                          "out" + std::to_string(i)))
        << "link " << i;
  }
  RunResult nodeEnd = waitForNode(node, 70s);
  EXPECT_FALSE(nodeEnd.timedOut) << "the node did not exit";
  EXPECT_EQ(nodeEnd.exitCode, 0) << describe(nodeEnd);
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, 70s);
  EXPECT_FALSE(processAlive(node.bg.pid));

  // The node ran the links it had; the late ones were refused as draining.
  RunResult log = run("cat n1/state/linkd.log");
  EXPECT_NE(log.out.find("farm node draining"), std::string::npos);
  EXPECT_NE(log.out.find("links still running are cancelled"),
            std::string::npos);
  size_t refused = 0;
  for (size_t at = 0;
       (at = log.out.find("UNAVAILABLE peer=", at)) != std::string::npos; ++at)
    ++refused;
  // (Late links are not sent to it at all: its health status said
  // NOT_SERVING, which the client's channel heeds. One that came before the
  // client learnt it is refused; one that came after the node had gone
  // found no node: also a local link.)
  EXPECT_LE(refused, static_cast<size_t>(kAfter));
  // Every link the node took finished there; every other one was linked
  // locally because the node was draining or gone, none because a link in
  // flight was cut off.
  auto s = cacheStats();
  EXPECT_GE(s["farm_offloaded"], 2);
  EXPECT_EQ(s["farm_offloaded"] + s["farm_fallbacks"], 1 + kDuring + kAfter);
  EXPECT_GE(s["farm_fallbacks"], kAfter);
  RunResult clientLog = run("cat state/linkd.log");
  size_t drainedAway = 0;
  for (const char *why :
       {"the node is draining (shutting down); linking locally",
        "cannot connect to the farm", "had no node to serve this recently"})
    for (size_t at = 0; (at = clientLog.out.find(why, at)) != std::string::npos;
         ++at)
      ++drainedAway;
  EXPECT_EQ(drainedAway, static_cast<size_t>(s["farm_fallbacks"]))
      << clientLog.out;
  EXPECT_EQ(clientLog.out.find("CANCELLED"), std::string::npos);
  // The drain counted no cancelled link: every link that was in flight
  // finished on the node.
  EXPECT_NE(log.out.find("0 links still running are cancelled"),
            std::string::npos)
      << log.out;
  // The stalled call was dropped by the stall timeout (the node cancels it).
  RunResult held = wait(hold, 30s);
  EXPECT_NE(held.out.find("CANCELLED"), std::string::npos) << held.out;
  // Watch saw SERVING, then NOT_SERVING.
  RunResult w = wait(watch, 30s);
  size_t serving = w.out.find("SERVING\n");
  size_t notServing = w.out.find("NOT_SERVING\n");
  EXPECT_NE(serving, std::string::npos) << w.out;
  EXPECT_NE(notServing, std::string::npos) << w.out;
  EXPECT_LT(serving, notServing) << w.out;
}

} // namespace
} // namespace linkd::e2e
