// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// End-to-end harness: real inputs through the real binaries.
//
// Every test gets a fresh directory and, through LINKD_SOCKET pointing into
// it, a daemon of its own: tests run in parallel without sharing a daemon,
// and a test that breaks its daemon breaks nothing else. Inputs are written
// inline by the test, compiled by clang-19, linked twice with the same
// arguments (once through a linkd client name, once with the stock LLD tool)
// and the outputs compared byte for byte, then run where the platform allows.
//
// Commands run through /bin/sh in the test directory with stdout, stderr and
// the exit status captured separately, under a deadline: a hang becomes a
// failure naming the command, not a ctest timeout. At teardown the daemon is
// stopped and every process still carrying this test's LINKD_SOCKET in its
// environment is killed (a leftover linkd process is a test failure).
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd::e2e {

using namespace std::chrono_literals;

// A program the suite needs and the Debian package that provides it.
struct Tool {
  std::string path;
  std::string package;
};

namespace tools {
inline const Tool clang{"/usr/bin/clang-19", "clang-19"};
inline const Tool clangxx{"/usr/bin/clang++-19", "clang-19"};
inline const Tool ldLld{"/usr/lib/llvm-19/bin/ld.lld", "lld-19"};
inline const Tool lldLink{"/usr/lib/llvm-19/bin/lld-link", "lld-19"};
inline const Tool ld64Lld{"/usr/lib/llvm-19/bin/ld64.lld", "lld-19"};
inline const Tool wasmLd{"/usr/lib/llvm-19/bin/wasm-ld", "lld-19"};
inline const Tool objdump{"/usr/bin/llvm-objdump-19", "llvm-19"};
inline const Tool readelf{"/usr/bin/llvm-readelf-19", "llvm-19"};
inline const Tool nm{"/usr/bin/llvm-nm-19", "llvm-19"};
inline const Tool curl{"/usr/bin/curl", "curl"};
inline const Tool gcc{"/usr/bin/gcc", "gcc"};
inline const Tool libtool{"/usr/bin/libtool", "libtool-bin"};
inline const Tool mingwGxx{"/usr/bin/x86_64-w64-mingw32-g++", "mingw-w64"};
inline const Tool wine{"/usr/bin/wine", "wine"};
inline const Tool wineserver{"/usr/bin/wineserver", "wine"};
inline const Tool node{"/usr/bin/node", "nodejs"};
} // namespace tools

// Succeeds if the tool is installed; else names the package to install.
::testing::AssertionResult haveTool(const Tool &tool);
// The same for a data file (an archive, a header, an example source).
::testing::AssertionResult haveFile(const std::string &path,
                                    const std::string &package);

// Where the build put linkd's binaries (CMAKE_RUNTIME_OUTPUT_DIRECTORY).
std::string binDir();
std::string binPath(std::string_view name);

struct RunResult {
  std::string command;
  int exitCode = -1; // -1 when killed by a signal or timed out
  int termSignal = 0;
  bool timedOut = false;
  std::string out;
  std::string err;
};

// For failure messages: the command, how it ended, and both streams.
std::string describe(const RunResult &r);

// Succeeds if the command exited 0.
::testing::AssertionResult exitedZero(const RunResult &r);

// The same linker twice: through a linkd client name and as the stock tool.
// Commands are templates in which "{ld}" stands for one or the other.
struct LinkerPair {
  std::string linkd;
  std::string stock;
};
LinkerPair elfLinkers();   // ld.linkd / ld.lld
LinkerPair coffLinkers();  // lld-link.linkd / lld-link
LinkerPair machoLinkers(); // ld64.linkd / ld64.lld
LinkerPair wasmLinkers();  // wasm-ld.linkd / wasm-ld

// What `linkd status --json` says about a running daemon.
struct DaemonStatus {
  long long pid = 0;
  long long zygotePid = 0;
  unsigned long long linksTotal = 0;
  unsigned long long linksFailed = 0;
  unsigned long long linksCrashed = 0;
  unsigned long long activeLinks = 0;
  std::string json;
};

// A command started without waiting for it.
struct Background {
  std::string command;
  pid_t pid = -1;
  std::string outPath, errPath;
};

// Process inspection through /proc. "Alive" excludes zombies: this
// container's init does not reap orphans, so a dead daemon can linger as one.
bool processAlive(pid_t pid);
std::vector<pid_t> childrenOf(pid_t parent);
// The zygote's children that run a link: not its pre-forked spares
// (daemon/linkd-lld/zygote.cpp; their name is "linkd-spare").
std::vector<pid_t> linkChildrenOf(pid_t zygote);
std::string commandLine(pid_t pid); // argv joined with spaces
// Live processes whose initial environment holds exactly `entry` (NAME=VALUE).
std::vector<pid_t> processesWithEnvironment(const std::string &entry);
// Waits until `pid` is gone or a zombie; false on timeout.
bool waitUntilGone(pid_t pid, std::chrono::milliseconds timeout);

// A loopback TCP port nobody listens on right now (tiny race; fine for
// tests that start servers).
int freePort();
// Whether something accepts connections on loopback `port` now.
bool portAccepts(int port);
// Waits (up to 10 s) until loopback `port` accepts, while `pid` (the server
// being started) lives; whether it does.
bool waitForPort(int port, pid_t pid);

std::string replaceAll(std::string s, std::string_view from,
                       std::string_view to);
// Lines of `text` that start with `prefix`.
std::vector<std::string> linesStartingWith(const std::string &text,
                                           std::string_view prefix);
// `text` without the lines that start with `prefix`.
std::string withoutLinesStartingWith(const std::string &text,
                                     std::string_view prefix);

class E2eTest : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;

  // Absolute path of `rel` in the test directory.
  std::string path(std::string_view rel) const;
  void writeFile(std::string_view rel, std::string_view content);
  std::string readFile(std::string_view rel) const;
  bool exists(std::string_view rel) const;

  // Runs `command` with /bin/sh in the test directory.
  RunResult run(const std::string &command,
                std::chrono::milliseconds timeout = 120s);
  Background start(const std::string &command);
  // Starts all commands, then releases them at the same instant.
  std::vector<Background> startTogether(const std::vector<std::string> &cmds);
  RunResult wait(const Background &bg,
                 std::chrono::milliseconds timeout = 120s);

  // Byte-for-byte comparison; on mismatch reports both sizes and the first
  // differing offset.
  ::testing::AssertionResult sameBytes(std::string_view expectedRel,
                                       std::string_view actualRel) const;

  // Runs `command` with "{ld}" = the stock tool, keeps each of `outputs` as
  // "<name>.stock", runs it again with "{ld}" = the linkd client, and checks:
  // both exit 0, same stdout and stderr, same bytes in every output, and
  // (unless `throughDaemon` is false) the daemon counted the link. The linkd
  // outputs stay in place for the test to run.
  ::testing::AssertionResult linkBoth(const LinkerPair &linkers,
                                      const std::string &command,
                                      const std::vector<std::string> &outputs,
                                      bool throughDaemon = true);

  // Runs `linkers.linkd ARGS` and `linkers.stock ARGS` and checks that both
  // fail with the same exit status, stdout and stderr.
  ::testing::AssertionResult sameDiagnostics(const LinkerPair &linkers,
                                             const std::string &args);

  // The integer fields of `linkd stats --json`, run after `envPrefix` (e.g.
  // "export LINKD_SOCKET=...; " for another daemon than the test's own).
  std::map<std::string, long long>
  cacheStats(const std::string &envPrefix = "");
  // Waits (up to 10 s) until the daemon has settled `n` results, stored or
  // not stored: storing happens after the client got its answer.
  void waitForSettledResults(long long n);
  // cacheStats()[key] once it reaches `atLeast` (polled within `within`),
  // else its last value: the daemon stores, holds and counts some things
  // after the client has its answer.
  long long statReaching(const std::string &key, long long atLeast,
                         std::chrono::milliseconds within = 20s);
  // Fails the test unless cacheStats()[key] reaches `n` within 20 s.
  void waitForStat(const std::string &key, long long n);
  // waitForStat("results_stored", n): a miss is stored after its answer.
  void waitForStored(long long n) { waitForStat("results_stored", n); }

  // The daemon serving this test's socket, or nullopt if none answers.
  std::optional<DaemonStatus> daemonStatus();
  // Polls daemonStatus() until `pred` holds; the last status seen, if any.
  std::optional<DaemonStatus>
  waitForStatus(const std::function<bool(const DaemonStatus &)> &pred,
                std::chrono::milliseconds timeout = 20s);
  // Lines of the daemon log containing `needle`.
  std::vector<std::string> logLines(std::string_view needle) const;
  // Which process ran the last link the daemon logged: its pid and how many
  // links it had run before (`reused=`, a reusable worker); -1 if unknown.
  struct LinkServed {
    long pid = -1;
    long reused = -1;
  };
  LinkServed lastLinkServed() const;
  // `linkd serve` processes started for this test's socket.
  std::vector<pid_t> daemonProcesses() const;

  // Runs `fn` at teardown, before the daemon is stopped (e.g. wineserver -k).
  void atTeardown(std::function<void()> fn);

  // A shell command running `program` under Wine with a prefix private to
  // the test (its wineserver is stopped at teardown).
  std::string wine(const std::string &program);

  std::string dir;        // the test's private directory
  std::string socketPath; // LINKD_SOCKET for this test
  std::string stateDir;   // LINKD_STATE_DIR for this test

private:
  void stopDaemonAndReap();
  std::vector<std::function<void()>> cleanups;
  bool wineUsed = false;
  unsigned commandCount = 0;
};

} // namespace linkd::e2e
