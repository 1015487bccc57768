// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link farm on loopback: farm nodes are separate `linkd serve --listen`
// processes with their own state and stores, reached over TLS with bearer
// tokens (certificates made by openssl in each test); the test's own daemon
// is the farm client (LINKD_FARM). Outputs are compared byte for byte with
// stock LLD; counters come from `linkd stats --json` (client) and
// `linkd farm-health --json` / the node's log (node).
#include "harness.h"

#include <functional>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>
#include <thread>

namespace linkd::e2e {
namespace {

const Tool openssl{"/usr/bin/openssl", "openssl"};
const Tool unshare{"/usr/bin/unshare", "util-linux"};

constexpr const char *kToken = "test-token-0123456789abcdef";

class FarmTest : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    ASSERT_TRUE(haveTool(openssl));
    // A CA, and a node certificate for 127.0.0.1 signed by it.
    ASSERT_TRUE(exitedZero(run(
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
        "-days 2 -subj /CN=linkd-test-ca 2>/dev/null && "
        "openssl req -newkey rsa:2048 -nodes -keyout node.key -out node.csr "
        "-subj /CN=localhost 2>/dev/null && "
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san && "
        "openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key "
        "-CAcreateserial -out node.pem -days 2 -extfile san 2>/dev/null")));
    writeFile("tokens", std::string("# token name max_links\n") + kToken +
                            " alice 4\nother-token-abcdefghijklmnop bob 1\n");
    writeFile("tok", std::string(kToken) + "\n");
  }

  struct Node {
    std::string env; // LINKD_SOCKET etc. of the node
    int port = 0;
    pid_t pid = -1;
  };

  Node startNode(const std::string &name, const std::string &extra = "") {
    Node n;
    n.port = freePort();
    run("mkdir -p " + name + "/run && chmod 700 " + name + "/run");
    n.env = "export LINKD_SOCKET=" + path(name + "/run/linkd.sock") +
            " LINKD_STATE_DIR=" + path(name + "/state") +
            " LINKD_CACHE_DIR=" + path(name + "/cache") + "; ";
    Background bg = start(
        n.env + "exec " + binPath("linkd") +
        " serve --listen 127.0.0.1:" + std::to_string(n.port) + " --tls-cert " +
        path("node.pem") + " --tls-key " + path("node.key") + " --token-file " +
        path("tokens") + " --jobs 2 " + extra);
    n.pid = bg.pid;
    atTeardown([this, bg] {
      kill(bg.pid, SIGTERM);
      wait(bg, 30s);
    });
    EXPECT_TRUE(waitForPort(n.port, bg.pid))
        << "farm node " << name << " did not start";
    return n;
  }

  static std::string target(const std::vector<Node> &nodes) {
    std::string t = "ipv4:";
    for (size_t i = 0; i < nodes.size(); ++i)
      t += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(nodes[i].port);
    return t;
  }

  // The environment that makes the test's daemon a farm client.
  std::string farmEnv(const std::string &farm, const std::string &tokenFile,
                      const std::string &extra = "") {
    // No audit records: a link that gets one (PE images, by default) is
    // linked locally (docs/audit.md), and these tests offload MinGW links.
    return "export LINKD_FARM='" + farm + "' LINKD_FARM_CA=" + path("ca.pem") +
           " LINKD_FARM_TOKEN_FILE=" + path(tokenFile) +
           " LINKD_FARM_POLICY=remote LINKD_AUDIT_RECORD=0 " + extra + "; ";
  }

  // How many links `node` ran for clients, from its log.
  std::vector<std::string> nodeLog(const std::string &name,
                                   const std::string &needle) {
    RunResult r = run("cat " + name + "/state/linkd.log");
    std::vector<std::string> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
      if (line.find(needle) != std::string::npos)
        out.push_back(line);
    return out;
  }

  long long farmHealth(const std::string &farm, const std::string &field) {
    RunResult r =
        run(farmEnv(farm, "tok") + binPath("linkd") + " farm-health --json");
    std::smatch m;
    std::regex re("\"" + field + "\": ([0-9]+)");
    if (!std::regex_search(r.out, m, re))
      return -1;
    return std::stoll(m[1]);
  }

  void writeProgram() {
    writeFile("main.cpp",
              "#include <cstdio>\n#include <string>\n"
              "int lib(int);\nint main() {\n"
              "  std::string s = \"farm \" + std::to_string(lib(20));\n"
              "  std::puts(s.c_str());\n  return 0;\n}\n");
    writeFile("lib.cpp", "int lib(int x) { return 2 * x + 2; }\n");
    ASSERT_TRUE(exitedZero(run("clang++-19 -O1 -fPIC -c main.cpp lib.cpp && "
                               "ar rcs libfarm.a lib.o")));
  }
};

TEST_F(FarmTest, OffloadedLinksMatchStockLld) {
  Node node = startNode("n1");
  std::string env = farmEnv(target({node}), "tok");
  // A C++ program against a static archive and glibc (libc.so is a linker
  // script naming libc.so.6 and libc_nonshared.a).
  writeProgram();
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       env + "clang++-19 --ld-path={ld} main.o -L. -lfarm "
                             "-o prog",
                       {"prog"}));
  EXPECT_EQ(run("./prog").out, "farm 42\n");
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);

  // A shared library with a version script.
  writeFile("v.map", "V1 { global: _Z3libi; local: *; };\n");
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       env + "clang++-19 --ld-path={ld} -shared lib.o "
                             "-Wl,--version-script=v.map -o libv.so",
                       {"libv.so"}));
  EXPECT_NE(
      run(tools::readelf.path + " --dyn-syms libv.so").out.find("_Z3libi@@V1"),
      std::string::npos);

  // -L order decides between two libraries of the same name.
  writeFile("one.c", "int pick(void) { return 1; }\n");
  writeFile("two.c", "int pick(void) { return 2; }\n");
  writeFile("p.c", "int pick(void);\nint main(void) { return pick(); }\n");
  ASSERT_TRUE(exitedZero(run("mkdir -p d1 d2 && clang-19 -c one.c two.c p.c "
                             "&& ar rcs d1/libpick.a two.o && "
                             "ar rcs d2/libpick.a one.o")));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       env + "clang-19 --ld-path={ld} p.o -Ld2 -Ld1 -lpick "
                             "-o pick21",
                       {"pick21"}));
  EXPECT_EQ(run("./pick21").exitCode, 1);
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       env + "clang-19 --ld-path={ld} p.o -Ld1 -Ld2 -lpick "
                             "-o pick12",
                       {"pick12"}));
  EXPECT_EQ(run("./pick12").exitCode, 2);

  // A MinGW COFF link (MinGW's import libraries and CRT objects).
  if (haveTool(tools::mingwGxx)) {
    writeFile("w.c", "#include <stdio.h>\nint main(void) { "
                     "puts(\"farm pe\"); return 0; }\n");
    ASSERT_TRUE(
        exitedZero(run("clang-19 --target=x86_64-w64-mingw32 -c w.c -o w.o")));
    ASSERT_TRUE(linkBoth(elfLinkers(),
                         env + "clang-19 --target=x86_64-w64-mingw32 "
                               "--ld-path={ld} -Wl,--no-insert-timestamp "
                               "w.o -o w.exe",
                         {"w.exe"}));
  }
  auto s = cacheStats();
  EXPECT_EQ(s["farm_offloaded"], haveTool(tools::mingwGxx) ? 5 : 4);
  EXPECT_EQ(s["farm_fallbacks"], 0);
  EXPECT_GT(s["farm_bytes_up"], 0);
  EXPECT_GT(s["farm_bytes_down"], 0);
  EXPECT_GT(s["farm_remote_link_micros"], 0);
  EXPECT_EQ(static_cast<long long>(nodeLog("n1", "outputs=").size()),
            s["farm_offloaded"]);
  // Each offloaded link's line says what the cache said and why, in a
  // local link's words.
  size_t said = 0;
  for (const std::string &line : logLines(" rc=")) {
    if (line.find(" farm=") == std::string::npos)
      continue;
    ++said;
    EXPECT_TRUE(
        std::regex_search(line, std::regex(" cache=miss reason=\"[^\"]")))
        << line;
  }
  EXPECT_EQ(static_cast<long long>(said), s["farm_offloaded"]);
}

TEST_F(FarmTest, LldLinkFindsLibrariesThroughLibpathAndLib) {
  // MSVC-style lld-link: a DLL (two outputs: the DLL and its import
  // library), then an EXE whose libraries are found by /libpath: and by the
  // LIB environment variable, in that order, where a same-named decoy sits
  // later in LIB.
  const std::string kernel32 = "/usr/x86_64-w64-mingw32/lib/libkernel32.a";
  ASSERT_TRUE(haveFile(kernel32, "mingw-w64-x86-64-dev"));
  Node node = startNode("n1");
  std::string env = farmEnv(target({node}), "tok");
  writeFile("twice.c",
            "__declspec(dllexport) int twice(int x) { return 2 * x; }\n"
            "int _DllMainCRTStartup(void *h, unsigned r, void *p) "
            "{ return 1; }\n");
  writeFile("main.c",
            "__declspec(dllimport) int twice(int);\n"
            "__declspec(dllimport) void __stdcall "
            "ExitProcess(unsigned);\n"
            "void mainCRTStartup(void) { ExitProcess(twice(21)); }\n");
  ASSERT_TRUE(exitedZero(
      run("clang-19 --target=x86_64-pc-windows-msvc -O2 -c twice.c main.c && "
          "mkdir -p libA libB && cp " +
          kernel32 + " libB/kernel32.lib")));
  ASSERT_TRUE(linkBoth(coffLinkers(),
                       env + "{ld} /Brepro /dll /nodefaultlib "
                             "/entry:_DllMainCRTStartup twice.o "
                             "/out:libA/twice.dll",
                       {"libA/twice.dll", "libA/twice.lib"}));
  ASSERT_TRUE(exitedZero(run("cp twice.o libB/twice.lib")));
  ASSERT_TRUE(linkBoth(coffLinkers(),
                       env + "LIB=" + path("libB") +
                           " {ld} /Brepro /subsystem:console /nodefaultlib "
                           "/entry:mainCRTStartup /libpath:libA main.o "
                           "twice.lib kernel32.lib /out:main.exe",
                       {"main.exe"}));
  RunResult headers = run(tools::objdump.path + " -p main.exe");
  EXPECT_NE(headers.out.find("DLL Name: twice.dll"), std::string::npos);
  auto s = cacheStats();
  EXPECT_EQ(s["farm_offloaded"], 2);
  EXPECT_EQ(s["farm_fallbacks"], 0);
}

TEST_F(FarmTest, MachOAgainstATbdStubInASysroot) {
  // ld64.lld resolves -lSystem to a .tbd stub under -syslibroot; the stub
  // exists only on the client.
  ASSERT_TRUE(haveTool(tools::ld64Lld));
  Node node = startNode("n1");
  std::string env = farmEnv(target({node}), "tok");
  writeFile("sdk/usr/lib/libSystem.tbd",
            "--- !tapi-tbd\ntbd-version:     4\ntargets:         [ "
            "arm64-macos ]\ninstall-name:    '/usr/lib/libSystem.B.dylib'\n"
            "current-version: 1311\nexports:\n  - targets:     [ "
            "arm64-macos ]\n    symbols:     [ _puts, dyld_stub_binder ]\n"
            "...\n");
  writeFile("main.c", "int puts(const char *);\n"
                      "int main(void) { puts(\"farm macho\"); return 0; }\n");
  ASSERT_TRUE(
      exitedZero(run("clang-19 --target=arm64-apple-macos11 -O2 -c main.c")));
  ASSERT_TRUE(linkBoth(machoLinkers(),
                       env +
                           "{ld} -arch arm64 -platform_version macos 11.0 "
                           "11.0 -syslibroot " +
                           path("sdk") + " -lSystem main.o -o hello",
                       {"hello"}));
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);
}

TEST_F(FarmTest, RepeatLinksUploadOnlyWhatChanged) {
  Node node = startNode("n1");
  std::string env = farmEnv(target({node}), "tok");
  writeProgram();
  std::string link = env + "clang++-19 --ld-path=" + binPath("ld.linkd") +
                     " main.o -L. -lfarm -o prog";
  ASSERT_TRUE(exitedZero(run(link)));
  auto first = cacheStats();
  EXPECT_GT(first["farm_blobs_uploaded"], 5); // objects, archives, libc ...
  // A one-object change: one question round (the blob), not one per file.
  writeFile("lib.cpp", "int lib(int x) { return 2 * x + 3; }\n");
  ASSERT_TRUE(exitedZero(run("clang++-19 -O1 -fPIC -c lib.cpp && rm libfarm.a "
                             "&& ar rcs libfarm.a lib.o")));
  ASSERT_TRUE(exitedZero(run(link)));
  EXPECT_EQ(run("./prog").out, "farm 43\n");
  auto second = cacheStats();
  EXPECT_EQ(second["farm_offloaded"], 2);
  EXPECT_EQ(second["farm_blobs_uploaded"] - first["farm_blobs_uploaded"], 1);
  EXPECT_EQ(second["farm_round_trips"] - first["farm_round_trips"], 1);
  EXPECT_GE(second["farm_blobs_skipped"] - first["farm_blobs_skipped"], 5);
  // The same link again is a local cache hit: nothing goes to the farm.
  ASSERT_TRUE(exitedZero(run(link)));
  auto third = cacheStats();
  EXPECT_EQ(third["hits"], 1);
  EXPECT_EQ(third["farm_offloaded"], 2);

  // Another client with an empty local store: the node has every blob.
  run("mkdir -p c2/run && chmod 700 c2/run");
  std::string c2 = "export LINKD_SOCKET=" + path("c2/run/linkd.sock") +
                   " LINKD_STATE_DIR=" + path("c2/state") +
                   " LINKD_CACHE_DIR=" + path("c2/cache") + "; ";
  atTeardown([this, c2] { run(c2 + binPath("linkd") + " stop"); });
  ASSERT_TRUE(exitedZero(run(c2 + link)));
  auto other = cacheStats(c2);
  EXPECT_EQ(other["farm_offloaded"], 1);
  EXPECT_EQ(other["farm_blobs_uploaded"], 0);
  EXPECT_GT(other["farm_blobs_skipped"], 5);
  EXPECT_EQ(run("./prog").out, "farm 43\n");
}

TEST_F(FarmTest, TheLinkSeesOnlyTheClientsFiles) {
  ASSERT_TRUE(haveTool(unshare));
  if (geteuid() != 0)
    GTEST_SKIP() << "mounting a tmpfs in a mount namespace needs root";
  Node node = startNode("n1");
  std::string env = farmEnv(target({node}), "tok");
  writeFile("p.c", "int pick(void);\nint main(void) { return pick(); }\n");
  writeFile("real.c", "int pick(void) { return 7; }\n");
  writeFile("decoy.c", "int pick(void) { return 66; }\n");
  // The node's side of `view`: a decoy library where the client has none,
  // and a decoy "shadow" file. The client's side is a tmpfs mounted over
  // `view` in its own mount namespace, which the node cannot see.
  ASSERT_TRUE(exitedZero(
      run("clang-19 -c p.c real.c decoy.c && mkdir -p view/first view/second "
          "view/sub && ar rcs view/first/libpick.a decoy.o && "
          "printf 'INPUT(decoy.o)\\n' > view/shadow")));
  std::string ns =
      "mount -t tmpfs none view && mkdir view/first view/second view/sub && "
      "cp p.o view/ && ar rcs view/second/libpick.a real.o && "
      "echo \"/* the client shadow */\" > view/shadow && cd view && ";
  // `sub/../first` (absent on the client) and `../view/shadow` resolve on the
  // client: the link takes pick from `second` and reads the client's shadow.
  std::string args = " p.o -Lsub/../first -L" + path("view/second") +
                     " -lpick ../view/shadow -o ../out";
  RunResult stock = run("unshare -m sh -c '" + ns + "clang-19 -fuse-ld=lld" +
                        args + "' && mv out out.stock");
  ASSERT_TRUE(exitedZero(stock));
  RunResult mine = run(env + "unshare -m sh -c '" + ns + "clang-19 --ld-path=" +
                       binPath("ld.linkd") + args + "'");
  ASSERT_TRUE(exitedZero(mine));
  EXPECT_TRUE(sameBytes("out.stock", "out"));
  EXPECT_EQ(run("./out").exitCode, 7);
  auto s = cacheStats();
  EXPECT_EQ(s["farm_offloaded"], 1);
  EXPECT_EQ(s["farm_fallbacks"], 0);
  // The node never opened its own view/ files: the decoy archive is not in
  // its blob store (only blobs the client sent are).
  RunResult decoy = run("sha256sum view/first/libpick.a | cut -c1-64");
  RunResult blobs = run("find n1/cache/farm/blobs -type f -name '" +
                        decoy.out.substr(0, 64) + "'");
  EXPECT_EQ(blobs.out, "");
}

TEST_F(FarmTest, RejectedClientsLinkLocallyAndTheNodeSurvives) {
  Node node = startNode("n1", "--max-request-bytes 1G");
  std::string farm = target({node});
  writeFile("p.c", "int main(void) { return 5; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  // A symbol per output: another output name alone is the same cache key
  // (docs/cache.md), and each link here must miss.
  auto link = [&](const std::string &out) {
    return "clang-19 --ld-path=" + binPath("ld.linkd") + " p.o -o " + out +
           " -Wl,--defsym=farm_test_" + out + "=0";
  };

  // A wrong token: UNAUTHENTICATED, logged, nothing linked; the build
  // still links (locally) with the right output. (An empty token file
  // turns the farm off at the start: AnUntrustedNodeAndAnEmptyToken...)
  writeFile("wrong", "wrong-token-0123456789abcdef\n");
  for (const char *tok : {"wrong"}) {
    run(binPath("linkd") + " stop");
    ASSERT_TRUE(exitedZero(run(farmEnv(farm, tok) + link(tok)))) << tok;
    EXPECT_EQ(run(std::string("./") + tok).exitCode, 5);
    EXPECT_EQ(cacheStats()["farm_fallbacks"], 1) << tok;
    EXPECT_EQ(cacheStats()["farm_offloaded"], 0) << tok;
  }
  EXPECT_EQ(nodeLog("n1", "UNAUTHENTICATED").size(), 1u);
  EXPECT_EQ(nodeLog("n1", "unknown token").size(), 1u);
  EXPECT_EQ(nodeLog("n1", "outputs=").size(), 0u);

  // A 2 GiB input claim is refused before any upload.
  run(binPath("linkd") + " stop");
  ASSERT_TRUE(exitedZero(run("truncate -s 2G huge.o")));
  std::string env = farmEnv(farm, "tok");
  RunResult huge = run(env + "clang-19 --ld-path=" + binPath("ld.linkd") +
                       " p.o huge.o -o h");
  RunResult stockHuge = run("clang-19 -fuse-ld=lld p.o huge.o -o h");
  EXPECT_NE(huge.exitCode, 0);
  EXPECT_EQ(huge.exitCode, stockHuge.exitCode);
  EXPECT_EQ(huge.err, stockHuge.err);
  EXPECT_EQ(nodeLog("n1", "RESOURCE_EXHAUSTED").size(), 1u);
  auto s = cacheStats();
  EXPECT_EQ(s["farm_fallbacks"], 1);
  EXPECT_LT(s["farm_bytes_up"], 1 << 20);
  run("rm -f huge.o");

  // Garbage on the port (random bytes, then a half-open HTTP/2 preface)
  // does not take the node down.
  RunResult garbage =
      run("python3 -c 'import os, socket\n"
          "for junk in (os.urandom(200000), b\"PRI * "
          "HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n\" + os.urandom(5000)):\n"
          "  s = socket.create_connection((\"127.0.0.1\", " +
          std::to_string(node.port) +
          "))\n"
          "  s.settimeout(2)\n"
          "  try: s.sendall(junk); s.recv(100)\n"
          "  except OSError: pass\n"
          "  s.close()\n"
          "print(\"sent\")'");
  EXPECT_EQ(garbage.out, "sent\n") << describe(garbage);
  EXPECT_TRUE(processAlive(node.pid));
  ASSERT_TRUE(exitedZero(run(env + link("pg"))));
  EXPECT_EQ(run("./pg").exitCode, 5);
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);
  EXPECT_EQ(farmHealth(farm, "links_rejected"), 1);
}

TEST_F(FarmTest, AnInputFoundMidLinkOverTheLimitIsRefusedWithItsStatus) {
  // The 2 MiB object is named only inside a linker script, so the node
  // learns its size mid-link: RESOURCE_EXHAUSTED reaches the client, which
  // links locally.
  Node node = startNode("n1", "--max-request-bytes 1M");
  std::string env = farmEnv(target({node}), "tok");
  writeFile("p.c", "extern const char big[];\n"
                   "int main(void) { return big[1]; }\n");
  writeFile("big.c", "const char big[2 << 20] = {1, 2, 3};\n");
  writeFile("libwrap.so", "INPUT(big.o)\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c big.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(), env + "{ld} -e main p.o -L. -lwrap -o out",
                       {"out"}));
  auto s = cacheStats();
  EXPECT_EQ(s["farm_fallbacks"], 1);
  EXPECT_EQ(s["farm_offloaded"], 0);
  EXPECT_EQ(nodeLog("n1", "RESOURCE_EXHAUSTED").size(), 1u);
  EXPECT_EQ(logLines("farm: RESOURCE_EXHAUSTED").size(), 1u);
}

TEST_F(FarmTest, ALinkOverTheNodesTimeLimitIsKilledAndLinkedLocally) {
  // A link that needs many seconds on a node: its linker script names
  // 20,000 absent search directories before the real one, and every probe
  // there is a question to the client (40,000 round trips, ~0.35 ms each
  // on loopback). The node's 1 s limit kills it with RESOURCE_EXHAUSTED; the
  // client links locally (same bytes as stock), and the node serves the
  // next link.
  Node node = startNode("n1", "--link-timeout 1");
  std::string env = farmEnv(target({node}), "tok");
  writeFile("p.c", "int pick(void);\nint main(void) { return pick(); }\n");
  writeFile("real.c", "int pick(void) { return 7; }\n");
  std::string script;
  for (int i = 0; i < 20000; ++i)
    script += "SEARCH_DIR(\"" + path("absent/d" + std::to_string(i)) + "\")\n";
  script += "SEARCH_DIR(\"" + path("lib") + "\")\nINPUT(-lpick)\n";
  writeFile("slow.ld", script);
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c real.c && mkdir -p lib && "
                             "ar rcs lib/libpick.a real.o")));
  auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      linkBoth(elfLinkers(), env + "{ld} -e main p.o slow.ld -o out", {"out"}));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 10s);
  auto s = cacheStats();
  EXPECT_EQ(s["farm_fallbacks"], 1);
  EXPECT_EQ(s["farm_offloaded"], 0);
  EXPECT_EQ(nodeLog("n1", "RESOURCE_EXHAUSTED: link timeout (1 s)").size(), 1u);
  EXPECT_EQ(logLines("farm: RESOURCE_EXHAUSTED: link timeout").size(), 1u);
  // The killed link is gone from the node, which takes the next one.
  EXPECT_EQ(farmHealth(target({node}), "active_links"), 0);
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       env + "{ld} -e main p.o lib/libpick.a -o quick",
                       {"quick"}));
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);
  EXPECT_TRUE(processAlive(node.pid));
}

TEST_F(FarmTest, AnUploadCutMidStreamResumesWhereItStopped) {
  // A TCP relay between client and node cuts the first connection after
  // 24 MiB of the 64 MiB object went up. The node keeps what arrived in its
  // partial file; the client's retry (a new connection) is asked for the
  // blob from there, so about 40 MiB, not 64, go up again.
  Node node = startNode("n1");
  int relay = freePort();
  // relay.py PORT NODE_PORT: relays to the node; the first connection that
  // carries 24 MiB up is then closed in both directions.
  writeFile("relay.py", R"(import socket, sys, threading
lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind(("127.0.0.1", int(sys.argv[1])))
lst.listen(8)
cut = []
def pipe(a, b, limited):
  n = 0
  try:
    while not (limited and not cut and n >= 24 << 20):
      d = a.recv(65536)
      if not d: break
      b.sendall(d)
      n += len(d)
    if limited and not cut and n >= 24 << 20: cut.append(n)
  except OSError: pass
  for s in (a, b):
    try: s.shutdown(socket.SHUT_RDWR)
    except OSError: pass
while True:
  c, _ = lst.accept()
  u = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
  threading.Thread(target=pipe, args=(c, u, True)).start()
  threading.Thread(target=pipe, args=(u, c, False)).start()
)");
  Background bg = start("exec python3 relay.py " + std::to_string(relay) + " " +
                        std::to_string(node.port));
  atTeardown([bg] { kill(bg.pid, SIGKILL); });
  for (int i = 0; i < 500 && !portAccepts(relay); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(portAccepts(relay));
  std::string env = farmEnv("ipv4:127.0.0.1:" + std::to_string(relay), "tok",
                            "LINKD_FARM_TLS_NAME=127.0.0.1");
  writeFile("big.c", "const char big[64 << 20] = {1};\n"
                     "int main(void) { return big[0] + 1; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c big.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       env + "clang-19 --ld-path={ld} big.o -o big", {"big"}));
  EXPECT_EQ(run("./big").exitCode, 2);
  auto s = cacheStats();
  EXPECT_EQ(s["farm_retries"], 1);
  EXPECT_EQ(s["farm_offloaded"], 1);
  EXPECT_EQ(s["farm_fallbacks"], 0);
  // The retry asked for the object from where the cut left it.
  std::vector<std::string> done = nodeLog("n1", "outputs=1");
  ASSERT_EQ(done.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(done[0], m, std::regex("resumed_bytes=([0-9]+)")))
      << done[0];
  long long resumed = std::stoll(m[1]);
  EXPECT_GE(resumed, 8ll << 20) << done[0];
  EXPECT_LE(resumed, 24ll << 20) << done[0];
  // What went up in all: the object once, again at most the 24 MiB the
  // relay let through before its cut, and the link's other inputs (a few
  // MiB); an upload started over would send the 64 MiB object twice. (The
  // bound was object + 16 MiB: under load the node had kept only 8 MiB of
  // the cut stream, and the other inputs took it over.)
  long long object = std::stoll(run("stat -c %s big.o").out);
  EXPECT_LT(s["farm_bytes_up"], object + (32ll << 20)) << done[0];
  EXPECT_EQ(run("ls n1/cache/farm/blobs/partial").out, "");
}

// A node that goes silent (SIGSTOP: its TCP connection
// stays up and nothing answers) while the client waits for it, and while
// the client uploads to it, with the default farm_timeout_ms (600 s): the
// client gives it up within tens of seconds and links locally, with
// stock's bytes. Before, it waited the whole timeout mid-link and blocked in
// a write for good mid-upload.
TEST_F(FarmTest, ASilentNodeIsGivenUpWithinTensOfSeconds) {
  writeFile("p.c", "int main(void) { return 7; }\n");
  writeFile("big.c", "const char big[64 << 20] = {1};\n"
                     "int main(void) { return big[0] + 1; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c big.c")));
  auto silentAfter = [&](const std::string &name, const std::string &link,
                         const std::function<void(const Node &)> &until) {
    Node node = startNode(name);
    std::string env = farmEnv(target({node}), "tok");
    // The channel is up: one link offloaded (a link of its own, not a hit).
    long long offloaded = cacheStats()["farm_offloaded"];
    EXPECT_TRUE(
        exitedZero(run(env + "clang-19 --ld-path=" + binPath("ld.linkd") +
                       " p.o -Wl,--defsym=warm_" + name + "=1 -o warm")));
    EXPECT_EQ(cacheStats()["farm_offloaded"], offloaded + 1) << name;
    long long fallbacks = cacheStats()["farm_fallbacks"];
    Background bg =
        start(env + "exec clang-19 --ld-path=" + binPath("ld.linkd") + " " +
              link + " -o out");
    until(node);
    kill(node.pid, SIGSTOP);
    auto stopped = std::chrono::steady_clock::now();
    RunResult r = wait(bg, 120s);
    auto took = std::chrono::steady_clock::now() - stopped;
    kill(node.pid, SIGKILL);
    EXPECT_TRUE(exitedZero(r)) << describe(r);
    EXPECT_LT(took, 45s) << name;
    std::printf("[ e2e      ] %s: the link ended %.1f s after the node went "
                "silent\n",
                name.c_str(), std::chrono::duration<double>(took).count());
    EXPECT_TRUE(exitedZero(
        run("clang-19 -fuse-ld=lld " + link + " -o ref && cmp ref out")))
        << name;
    EXPECT_EQ(cacheStats()["farm_fallbacks"], fallbacks + 1) << name;
    run(binPath("linkd") + " stop");
  };
  // Waiting for the node: it went silent before this link began.
  silentAfter("n1", "p.o -Wl,--build-id=0x01", [](const Node &) {});
  // Uploading to it: silent once its partial file of big.o exists.
  silentAfter("n2", "big.o", [&](const Node &) {
    for (int i = 0; i < 3000 && run("ls n2/cache/farm/blobs/partial").out == "";
         ++i)
      std::this_thread::sleep_for(5ms);
  });
}

// A node whose certificate the client does not trust,
// and an empty token file, are said as such in the daemon's log, not as
// an outage (before: "cannot connect to the farm", and every link refused
// UNAUTHENTICATED for an empty token).
TEST_F(FarmTest, AnUntrustedNodeAndAnEmptyTokenAreSaidAsSuch) {
  Node node = startNode("n1");
  ASSERT_TRUE(exitedZero(
      run("openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out "
          "other.pem -days 2 -subj /CN=someone-else 2>/dev/null")));
  writeFile("p.c", "int main(void) { return 4; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  std::string link = binPath("ld.linkd") + " p.o -o out";
  std::string env = farmEnv(target({node}), "tok") +
                    "export LINKD_FARM_CA=" + path("other.pem") + "; ";
  RunResult r = run(env + "clang-19 --ld-path=" + link);
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_EQ(run("./out").exitCode, 4);
  EXPECT_EQ(cacheStats()["farm_fallbacks"], 1);
  auto lines = logLines("TLS verification of node 127.0.0.1:" +
                        std::to_string(node.port) + " failed");
  ASSERT_EQ(lines.size(), 1u) << run("cat state/linkd.log").out;
  EXPECT_NE(lines[0].find("subject /CN=localhost, issuer /CN=linkd-test-ca"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("farm_ca " + path("other.pem")), std::string::npos)
      << lines[0];
  // An empty token file: the farm is off from the start, and the log says
  // why, with the path.
  run(binPath("linkd") + " stop");
  writeFile("empty-token", "");
  r = run(farmEnv(target({node}), "empty-token") +
          "clang-19 --ld-path=" + link + "2");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_EQ(run("./out2").exitCode, 4);
  EXPECT_FALSE(
      logLines("the farm token file " + path("empty-token") + " is empty")
          .empty())
      << run("cat state/linkd.log").out;
}

// `linkd farm-health` on an address list reports every
// node (before: one, whichever the channel picked), and says which one does
// not answer.
TEST_F(FarmTest, FarmHealthReportsEveryNode) {
  Node a = startNode("na"), b = startNode("nb");
  std::string farm = target({a, b});
  RunResult r =
      run(farmEnv(farm, "tok") + binPath("linkd") + " farm-health --json");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  for (const Node &n : {a, b})
    EXPECT_NE(r.out.find("{\"node\": \"127.0.0.1:" + std::to_string(n.port) +
                         "\", \"version\": "),
              std::string::npos)
        << r.out;
  // Health needs no token: without a token file it asks all the same.
  RunResult noToken =
      run(farmEnv(farm, "tok") + "unset LINKD_FARM_TOKEN_FILE; " +
          binPath("linkd") + " farm-health --json");
  EXPECT_TRUE(exitedZero(noToken)) << describe(noToken);
  EXPECT_NE(noToken.out.find("127.0.0.1:" + std::to_string(a.port)),
            std::string::npos)
      << noToken.out;
  kill(b.pid, SIGKILL);
  r = run(farmEnv(farm, "tok") + binPath("linkd") + " farm-health");
  EXPECT_EQ(r.exitCode, 1) << describe(r);
  EXPECT_NE(r.out.find("farm node ipv4:127.0.0.1:" + std::to_string(a.port)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("farm node 127.0.0.1:" + std::to_string(b.port) + ": "),
            std::string::npos)
      << r.err;
}

TEST_F(FarmTest, NodesWithClientCaWantAClientCertificate) {
  Node node = startNode("n1", "--client-ca " + path("ca.pem"));
  std::string farm = target({node});
  ASSERT_TRUE(exitedZero(run(
      "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
      "-subj /CN=alice 2>/dev/null && "
      "printf 'extendedKeyUsage=clientAuth\\n' > cext && "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out client.pem -days 2 -extfile cext 2>/dev/null")));
  writeFile("p.c", "int main(void) { return 3; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  std::string link = "clang-19 --ld-path=" + binPath("ld.linkd") + " p.o -o ";
  // Without a certificate the TLS handshake fails: a local link.
  ASSERT_TRUE(exitedZero(run(farmEnv(farm, "tok") + link + "a")));
  EXPECT_EQ(run("./a").exitCode, 3);
  EXPECT_EQ(cacheStats()["farm_fallbacks"], 1);
  EXPECT_EQ(cacheStats()["farm_offloaded"], 0);
  run(binPath("linkd") + " stop");
  ASSERT_TRUE(
      exitedZero(run(farmEnv(farm, "tok",
                             "LINKD_FARM_CERT=" + path("client.pem") +
                                 " LINKD_FARM_KEY=" + path("client.key")) +
                     link + "b")));
  EXPECT_EQ(run("./b").exitCode, 3);
  EXPECT_EQ(cacheStats()["farm_offloaded"], 1);
}

TEST_F(FarmTest, TokenOverItsLimitIsRefused) {
  // bob may run one link at a time; a second concurrent one is refused
  // with RESOURCE_EXHAUSTED and links locally.
  Node node = startNode("n1");
  std::string farm = target({node});
  writeFile("bob", "other-token-abcdefghijklmnop\n");
  writeFile("big.c", "const char big[48 << 20] = {1};\n"
                     "int main(void) { return big[0] + 1; }\n");
  writeFile("small.c", "int main(void) { return 9; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c big.c small.c")));
  std::string env = farmEnv(farm, "bob");
  Background slow = start(env + "clang-19 --ld-path=" + binPath("ld.linkd") +
                          " big.o -o big");
  bool busy = false;
  for (int i = 0; i < 2000 && !busy; ++i) {
    busy = farmHealth(farm, "active_links") == 1;
    if (!busy)
      std::this_thread::sleep_for(2ms);
  }
  ASSERT_TRUE(busy) << "the big link never showed on the node";
  ASSERT_TRUE(exitedZero(run(env + "clang-19 --ld-path=" + binPath("ld.linkd") +
                             " small.o -o small")));
  EXPECT_EQ(run("./small").exitCode, 9);
  ASSERT_TRUE(exitedZero(wait(slow)));
  EXPECT_EQ(run("./big").exitCode, 2);
  EXPECT_EQ(nodeLog("n1", "RESOURCE_EXHAUSTED client=bob").size(), 1u);
  auto s = cacheStats();
  EXPECT_EQ(s["farm_offloaded"], 1);
  EXPECT_EQ(s["farm_fallbacks"], 1);
}

TEST_F(FarmTest, TwoNodesShareTheLoadAndSurviveAKilledNode) {
  Node a = startNode("na"), b = startNode("nb");
  std::string farm = target({a, b});
  std::string env = farmEnv(farm, "tok");
  writeFile("big.c", "const char big[48 << 20] = {1};\n"
                     "int main(void) { return big[0] + 1; }\n");
  writeFile("p.c", "int main(void) { return 4; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c big.c p.c")));
  ASSERT_TRUE(exitedZero(run("clang-19 -fuse-ld=lld big.o -o big.stock")));
  // Round robin: different links (different outputs) go to both nodes.
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(
        exitedZero(run(env + "clang-19 --ld-path=" + binPath("ld.linkd") +
                       " p.o -o p" + std::to_string(i) +
                       " -Wl,--defsym=farm_test_round=" + std::to_string(i))));
  EXPECT_GE(nodeLog("na", "outputs=").size(), 1u);
  EXPECT_GE(nodeLog("nb", "outputs=").size(), 1u);
  EXPECT_EQ(cacheStats()["farm_offloaded"], 6);

  // Kill the node that runs the big link while it runs.
  Background bg = start(env + "clang-19 --ld-path=" + binPath("ld.linkd") +
                        " big.o -o big");
  pid_t victim = -1;
  for (int i = 0; i < 1000 && victim < 0; ++i)
    for (const Node *n : {&a, &b})
      if (victim < 0 && farmHealth(target({*n}), "active_links") == 1)
        victim = n->pid;
  ASSERT_GT(victim, 0) << "the big link never showed on a node";
  kill(victim, SIGKILL);
  RunResult r = wait(bg);
  ASSERT_TRUE(exitedZero(r));
  EXPECT_TRUE(sameBytes("big.stock", "big"));
  auto s = cacheStats();
  EXPECT_GE(s["farm_retries"] + s["farm_fallbacks"], 1);
  // The rest continue on the survivor.
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(exitedZero(
        run(env + "clang-19 --ld-path=" + binPath("ld.linkd") + " p.o -o q" +
            std::to_string(i) +
            " -Wl,--defsym=farm_test_round=" + std::to_string(10 + i))));
  EXPECT_GE(cacheStats()["farm_offloaded"], 9);
}

TEST_F(FarmTest, UnreachableFarmLinksLocallyWithinTheConnectTimeout) {
  writeFile("p.c", "int main(void) { return 6; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c p.c")));
  std::string env = farmEnv("ipv4:127.0.0.1:" + std::to_string(freePort()),
                            "tok", "LINKD_FARM_CONNECT_TIMEOUT_MS=500");
  auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      linkBoth(elfLinkers(), env + "clang-19 --ld-path={ld} p.o -o p", {"p"}));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 5s);
  EXPECT_EQ(run("./p").exitCode, 6);
  auto s = cacheStats();
  EXPECT_EQ(s["farm_fallbacks"], 1);
  EXPECT_EQ(s["farm_offloaded"], 0);
}

} // namespace
} // namespace linkd::e2e

namespace linkd::e2e {
namespace {

// Six clients (daemons of their own, one token) offload, at the same
// instant, links that share an input the node has never seen: a 32 MiB
// object (32 upload chunks). Each client's daemon is up and has linked once
// before (a program of its own), so the six uploads overlap. One link
// uploads the blob,
// the others wait for its commit: none is refused ("chunk at offset ...
// does not continue it" when two uploads wrote one partial file), none
// links locally, every output is stock LLD's.
TEST_F(FarmTest, ConcurrentFirstUploadsOfOneInputAreAllOffloaded) {
  writeFile("tokens",
            std::string("# token name max_links\n") + kToken + " alice 8\n");
  Node node = startNode("n1", "--jobs 6");
  std::string farm = target({node});
  // Data that zstd cannot shrink: every chunk is a full MiB on the wire.
  ASSERT_TRUE(exitedZero(run(
      "head -c 33554432 /dev/urandom > big.bin && "
      "printf '.section .rodata\\n.globl big\\nbig:\\n.incbin \"big.bin\"\\n' "
      "> big.s && clang-19 -c big.s -o big.o")));
  writeFile("warm.c", "int main(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c warm.c")));
  constexpr int kClients = 6;
  std::vector<std::string> cmds;
  for (int i = 0; i < kClients; ++i) {
    std::string c = "c" + std::to_string(i);
    writeFile(c + ".c", "extern const char big[];\nint main(void) { return "
                        "big[" +
                            std::to_string(i) +
                            "] == 7 ? 3 : " + std::to_string(i) + "; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -O1 -c " + c + ".c && mkdir -p " + c +
                               "/run && chmod 700 " + c + "/run")));
    std::string env = "export LINKD_SOCKET=" + path(c + "/run/linkd.sock") +
                      " LINKD_STATE_DIR=" + path(c + "/state") +
                      " LINKD_CACHE_DIR=" + path(c + "/cache") + "; ";
    atTeardown([this, env] { run(env + binPath("linkd") + " stop"); });
    ASSERT_TRUE(exitedZero(run(env + farmEnv(farm, "tok") +
                               "clang-19 --ld-path=" + binPath("ld.linkd") +
                               " warm.o -o " + c + ".warm")));
    cmds.push_back(env + farmEnv(farm, "tok") + "clang-19 --ld-path=" +
                   binPath("ld.linkd") + " " + c + ".o big.o -o " + c + ".exe");
    ASSERT_TRUE(exitedZero(run("clang-19 --ld-path=" + tools::ldLld.path + " " +
                               c + ".o big.o -o " + c + ".stock")));
  }
  std::vector<Background> links = startTogether(cmds);
  for (const Background &bg : links)
    EXPECT_TRUE(exitedZero(wait(bg, 180s)));
  for (int i = 0; i < kClients; ++i) {
    std::string c = "c" + std::to_string(i);
    EXPECT_TRUE(sameBytes(c + ".stock", c + ".exe"));
    std::string env = "export LINKD_SOCKET=" + path(c + "/run/linkd.sock") +
                      " LINKD_STATE_DIR=" + path(c + "/state") +
                      " LINKD_CACHE_DIR=" + path(c + "/cache") + "; ";
    auto s = cacheStats(env);
    EXPECT_EQ(s["farm_offloaded"], 2) << c;
    EXPECT_EQ(s["farm_fallbacks"], 0) << c;
  }
  // The node ran all twelve to the end, refused none, and at least one
  // link waited for another's upload rather than sending the object again.
  std::vector<std::string> done = nodeLog("n1", "outputs=");
  EXPECT_EQ(done.size(), size_t(2 * kClients));
  EXPECT_TRUE(nodeLog("n1", "does not continue").empty());
  EXPECT_TRUE(nodeLog("n1", "failed").empty());
  EXPECT_EQ(farmHealth(farm, "links_total"), 2 * kClients);
  long long awaited = 0;
  std::regex re("blobs_awaited=([0-9]+)");
  for (const std::string &l : done) {
    std::smatch m;
    if (std::regex_search(l, m, re))
      awaited += std::stoll(m[1]);
  }
  EXPECT_GT(awaited, 0);
}

} // namespace
} // namespace linkd::e2e
