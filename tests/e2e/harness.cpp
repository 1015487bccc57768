// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#ifndef LINKD_E2E_BIN_DIR
#error "LINKD_E2E_BIN_DIR must name the directory holding ld.linkd and linkd"
#endif

namespace linkd::e2e {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Sockets live in sun_path[108]; keep room for the lock-file suffixes too.
constexpr size_t kMaxSocketPath = 100;

std::string slurp(const std::string &file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::string> slurpIfExists(const std::string &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<pid_t> allPids() {
  std::vector<pid_t> pids;
  DIR *d = opendir("/proc");
  if (!d)
    return pids;
  while (dirent *e = readdir(d)) {
    char *end = nullptr;
    long n = std::strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && n > 0)
      pids.push_back(static_cast<pid_t>(n));
  }
  closedir(d);
  return pids;
}

// The fields of /proc/PID/stat after the command name: state, ppid, ...
std::optional<std::string> statTail(pid_t pid) {
  auto stat = slurpIfExists("/proc/" + std::to_string(pid) + "/stat");
  if (!stat)
    return std::nullopt;
  size_t paren = stat->rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat->size())
    return std::nullopt;
  return stat->substr(paren + 2);
}

std::optional<long long> jsonNumber(const std::string &json,
                                    const std::string &key) {
  std::string needle = "\"" + key + "\":";
  size_t at = json.find(needle);
  if (at == std::string::npos)
    return std::nullopt;
  const char *p = json.c_str() + at + needle.size();
  char *end = nullptr;
  long long v = std::strtoll(p, &end, 10);
  if (end == p)
    return std::nullopt;
  return v;
}

std::string realPath(const std::string &p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

std::string exePath(pid_t pid) {
  char buf[PATH_MAX];
  std::string link = "/proc/" + std::to_string(pid) + "/exe";
  ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n <= 0)
    return {};
  buf[n] = '\0';
  return buf;
}

// Lets the harness's own child processes start in their own process group
// (so a timeout can kill the whole command) and with stdio redirected.
struct ChildSetup {
  std::string dir, out, err, command;
  int gateFd = -1; // if >= 0, block reading it before exec
};

[[noreturn]] void execChild(const ChildSetup &c) {
  setpgid(0, 0);
  if (c.gateFd >= 0) {
    char byte;
    while (read(c.gateFd, &byte, 1) < 0 && errno == EINTR) {
    }
  }
  int in = open("/dev/null", O_RDONLY);
  int out = open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = open(c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0 || err < 0 || chdir(c.dir.c_str()) != 0)
    _exit(126);
  dup2(in, STDIN_FILENO);
  dup2(out, STDOUT_FILENO);
  dup2(err, STDERR_FILENO);
  close_range(3, ~0U, 0);
  signal(SIGPIPE, SIG_DFL);
  execl("/bin/sh", "sh", "-c", c.command.c_str(), static_cast<char *>(nullptr));
  _exit(127);
}

} // namespace

::testing::AssertionResult haveTool(const Tool &tool) {
  if (access(tool.path.c_str(), X_OK) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "required tool " << tool.path << " is missing; install the Debian "
         << "package '" << tool.package << "'";
}

::testing::AssertionResult haveFile(const std::string &file,
                                    const std::string &package) {
  if (access(file.c_str(), R_OK) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "required file " << file << " is missing; install the Debian "
         << "package '" << package << "'";
}

std::string binDir() { return LINKD_E2E_BIN_DIR; }
std::string binPath(std::string_view name) {
  return binDir() + "/" + std::string(name);
}

LinkerPair elfLinkers() { return {binPath("ld.linkd"), tools::ldLld.path}; }
LinkerPair coffLinkers() {
  return {binPath("lld-link.linkd"), tools::lldLink.path};
}
LinkerPair machoLinkers() {
  return {binPath("ld64.linkd"), tools::ld64Lld.path};
}
LinkerPair wasmLinkers() {
  return {binPath("wasm-ld.linkd"), tools::wasmLd.path};
}

std::string describe(const RunResult &r) {
  std::ostringstream s;
  s << "command: " << r.command << "\n";
  if (r.timedOut)
    s << "  TIMED OUT (killed)\n";
  else if (r.termSignal)
    s << "  killed by signal " << r.termSignal << " ("
      << strsignal(r.termSignal) << ")\n";
  else
    s << "  exit status " << r.exitCode << "\n";
  s << "  --- stdout (" << r.out.size() << " bytes) ---\n" << r.out;
  if (!r.out.empty() && r.out.back() != '\n')
    s << "\n";
  s << "  --- stderr (" << r.err.size() << " bytes) ---\n" << r.err;
  if (!r.err.empty() && r.err.back() != '\n')
    s << "\n";
  return s.str();
}

::testing::AssertionResult exitedZero(const RunResult &r) {
  if (r.exitCode == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(r);
}

bool processAlive(pid_t pid) {
  if (pid <= 0)
    return false;
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return false;
  auto tail = statTail(pid);
  return tail && !tail->empty() && (*tail)[0] != 'Z' && (*tail)[0] != 'X';
}

std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> kids;
  for (pid_t pid : allPids()) {
    auto tail = statTail(pid);
    if (!tail || (*tail)[0] == 'Z')
      continue;
    // "<state> <ppid> ..."
    if (std::atoll(tail->c_str() + 2) == parent)
      kids.push_back(pid);
  }
  return kids;
}

std::vector<pid_t> linkChildrenOf(pid_t zygote) {
  std::vector<pid_t> kids;
  for (pid_t pid : childrenOf(zygote)) {
    std::string comm =
        slurpIfExists("/proc/" + std::to_string(pid) + "/comm").value_or("");
    if (comm.rfind("linkd-spare", 0) != 0)
      kids.push_back(pid);
  }
  return kids;
}

std::string commandLine(pid_t pid) {
  std::string raw =
      slurpIfExists("/proc/" + std::to_string(pid) + "/cmdline").value_or("");
  for (char &c : raw)
    if (c == '\0')
      c = ' ';
  while (!raw.empty() && raw.back() == ' ')
    raw.pop_back();
  return raw;
}

std::vector<pid_t> processesWithEnvironment(const std::string &entry) {
  std::vector<pid_t> found;
  for (pid_t pid : allPids()) {
    if (pid == getpid())
      continue;
    auto env = slurpIfExists("/proc/" + std::to_string(pid) + "/environ");
    if (!env)
      continue;
    size_t pos = 0;
    while (pos < env->size()) {
      size_t end = env->find('\0', pos);
      if (end == std::string::npos)
        end = env->size();
      if (env->compare(pos, end - pos, entry) == 0) {
        if (processAlive(pid))
          found.push_back(pid);
        break;
      }
      pos = end + 1;
    }
  }
  return found;
}

bool waitUntilGone(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (processAlive(pid)) {
    if (Clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool portAccepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool up = connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0;
  close(fd);
  return up;
}

bool waitForPort(int port, pid_t pid) {
  for (int i = 0; i < 1000 && !portAccepts(port) && processAlive(pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return portAccepts(port);
}

std::string replaceAll(std::string s, std::string_view from,
                       std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos;
       at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::vector<std::string> linesStartingWith(const std::string &text,
                                           std::string_view prefix) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix))
      lines.push_back(line);
  return lines;
}

std::string withoutLinesStartingWith(const std::string &text,
                                     std::string_view prefix) {
  std::string kept;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    std::string_view line(text.data() + pos, end - pos);
    if (!line.starts_with(prefix))
      kept.append(line);
    pos = end;
  }
  return kept;
}

// ---------------------------------------------------------------------------
// The fixture

void E2eTest::SetUp() {
  const char *tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string templ = base + "/linkd-e2e.XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr)
      << "mkdtemp " << templ << ": " << std::strerror(errno);
  dir = templ;
  socketPath = dir + "/run/linkd.sock";
  stateDir = dir + "/state";
  ASSERT_LE(socketPath.size(), kMaxSocketPath)
      << "TMPDIR is too long for a Unix socket path: " << socketPath;
  fs::create_directories(dir + "/.cmd");
  writeFile("linkd.conf", "# empty: no user configuration in tests\n");

  // A daemon of our own, isolated from the user's and from other tests.
  setenv("LINKD_SOCKET", socketPath.c_str(), 1);
  setenv("LINKD_STATE_DIR", stateDir.c_str(), 1);
  setenv("LINKD_CACHE_DIR", (dir + "/cache").c_str(), 1);
  setenv("LINKD_CONFIG", path("linkd.conf").c_str(), 1);
  // Should teardown ever miss a daemon, it still goes away on its own.
  setenv("LINKD_IDLE_TIMEOUT", "300", 1);
  for (const char *name :
       {"LINKD_DISABLE", "LINKD_QUIET", "LINKD_BIN", "LINKD_TIMEOUT",
        "LINKD_START_TIMEOUT_MS", "LINKD_JOBS", "LINKD_LOG", "LINKD_NOCACHE",
        "LINKD_MAX_SIZE", "LINKD_BASE_DIR", "LINKD_SLOPPINESS",
        "LINKD_WATCH_INPUTS"})
    unsetenv(name);

  for (const char *name :
       {"ld.linkd", "ld64.linkd", "lld-link.linkd", "wasm-ld.linkd", "linkd"})
    ASSERT_EQ(access(binPath(name).c_str(), X_OK), 0)
        << binPath(name) << " is missing: build linkd first";
  ASSERT_TRUE(haveTool(tools::clang));
  ASSERT_TRUE(haveTool(tools::ldLld));
}

void E2eTest::TearDown() {
  for (auto it = cleanups.rbegin(); it != cleanups.rend(); ++it)
    (*it)();
  stopDaemonAndReap();
  if (HasFailure()) {
    std::printf("[ e2e      ] test directory kept for inspection: %s\n",
                dir.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

void E2eTest::atTeardown(std::function<void()> fn) {
  cleanups.push_back(std::move(fn));
}

void E2eTest::stopDaemonAndReap() {
  if (dir.empty())
    return;
  std::optional<DaemonStatus> st = daemonStatus();
  // A failing `linkd stop` is DaemonLifecycle.StopAlwaysSucceeds's business;
  // here only the outcome counts: the daemon must be gone.
  RunResult stop = run(binPath("linkd") + " stop", 60s);
  if (stop.exitCode != 0)
    std::printf("[ e2e      ] note: linkd stop failed at teardown\n%s",
                describe(stop).c_str());
  if (st)
    EXPECT_TRUE(waitUntilGone(static_cast<pid_t>(st->pid), 15s))
        << "the daemon (pid " << st->pid << ") did not exit after linkd stop";

  // Whatever still runs with our socket in its environment: the zygote and
  // link children die with the daemon; anything else is a leak.
  std::string entry = "LINKD_SOCKET=" + socketPath;
  auto deadline = Clock::now() + 3s;
  std::vector<pid_t> left = processesWithEnvironment(entry);
  while (!left.empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    left = processesWithEnvironment(entry);
  }
  std::string ourBin = realPath(binDir()) + "/";
  for (pid_t pid : left) {
    std::string exe = exePath(pid);
    std::string cmd = commandLine(pid);
    kill(pid, SIGKILL);
    if (exe.starts_with(ourBin))
      ADD_FAILURE() << "linkd process left behind after teardown: pid " << pid
                    << " (" << cmd << "); killed it";
  }
}

std::string E2eTest::path(std::string_view rel) const {
  if (!rel.empty() && rel[0] == '/')
    return std::string(rel);
  return dir + "/" + std::string(rel);
}

void E2eTest::writeFile(std::string_view rel, std::string_view content) {
  std::string p = path(rel);
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << p;
}

std::string E2eTest::readFile(std::string_view rel) const {
  return slurp(path(rel));
}

bool E2eTest::exists(std::string_view rel) const {
  struct stat st;
  return lstat(path(rel).c_str(), &st) == 0;
}

Background E2eTest::start(const std::string &command) {
  return startTogether({command}).front();
}

std::vector<Background>
E2eTest::startTogether(const std::vector<std::string> &commands) {
  int gate[2];
  if (pipe2(gate, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {};
  }
  std::vector<Background> started;
  for (const std::string &command : commands) {
    unsigned n = ++commandCount;
    Background bg;
    bg.command = command;
    bg.outPath = dir + "/.cmd/" + std::to_string(n) + ".out";
    bg.errPath = dir + "/.cmd/" + std::to_string(n) + ".err";
    ChildSetup setup{dir, bg.outPath, bg.errPath, command, gate[0]};
    pid_t pid = fork();
    if (pid == 0) {
      close(gate[1]);
      execChild(setup);
    }
    if (pid < 0) {
      ADD_FAILURE() << "fork: " << std::strerror(errno);
      continue;
    }
    setpgid(pid, pid);
    bg.pid = pid;
    started.push_back(std::move(bg));
  }
  // Closing the write end wakes every child at once.
  close(gate[1]);
  close(gate[0]);
  return started;
}

RunResult E2eTest::wait(const Background &bg,
                        std::chrono::milliseconds timeout) {
  RunResult r;
  r.command = bg.command;
  if (bg.pid <= 0)
    return r;
  auto deadline = Clock::now() + timeout;
  auto pause = 1ms;
  int status = 0;
  for (;;) {
    pid_t got = waitpid(bg.pid, &status, WNOHANG);
    if (got == bg.pid)
      break;
    if (got < 0 && errno != EINTR) {
      ADD_FAILURE() << "waitpid: " << std::strerror(errno);
      return r;
    }
    if (Clock::now() > deadline) {
      kill(-bg.pid, SIGKILL);
      waitpid(bg.pid, &status, 0);
      r.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, 20ms);
  }
  if (!r.timedOut) {
    if (WIFEXITED(status))
      r.exitCode = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      r.termSignal = WTERMSIG(status);
  }
  r.out = slurp(bg.outPath);
  r.err = slurp(bg.errPath);
  return r;
}

RunResult E2eTest::run(const std::string &command,
                       std::chrono::milliseconds timeout) {
  return wait(start(command), timeout);
}

::testing::AssertionResult
E2eTest::sameBytes(std::string_view expectedRel,
                   std::string_view actualRel) const {
  auto expected = slurpIfExists(path(expectedRel));
  auto actual = slurpIfExists(path(actualRel));
  if (!expected)
    return ::testing::AssertionFailure() << path(expectedRel) << " is missing";
  if (!actual)
    return ::testing::AssertionFailure() << path(actualRel) << " is missing";
  if (*expected == *actual)
    return ::testing::AssertionSuccess();
  size_t n = std::min(expected->size(), actual->size());
  size_t at = 0;
  while (at < n && (*expected)[at] == (*actual)[at])
    ++at;
  auto failure = ::testing::AssertionFailure();
  failure << actualRel << " differs from " << expectedRel << ": sizes "
          << actual->size() << " vs " << expected->size()
          << " bytes, first difference at offset " << at;
  if (at < n) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), " (0x%zx: 0x%02x vs 0x%02x)", at,
                  static_cast<unsigned char>((*actual)[at]),
                  static_cast<unsigned char>((*expected)[at]));
    failure << buf;
  }
  return failure;
}

::testing::AssertionResult
E2eTest::linkBoth(const LinkerPair &linkers, const std::string &command,
                  const std::vector<std::string> &outputs, bool throughDaemon) {
  RunResult stock = run(replaceAll(command, "{ld}", linkers.stock));
  if (stock.exitCode != 0)
    return ::testing::AssertionFailure() << "the stock link failed\n"
                                         << describe(stock);
  for (const std::string &out : outputs) {
    std::error_code ec;
    fs::rename(path(out), path(out + ".stock"), ec);
    if (ec)
      return ::testing::AssertionFailure()
             << "the stock link did not write " << out << ": " << ec.message();
  }
  unsigned long long before = 0;
  if (throughDaemon)
    if (auto st = daemonStatus())
      before = st->linksTotal;
  RunResult mine = run(replaceAll(command, "{ld}", linkers.linkd));
  if (mine.exitCode != 0)
    return ::testing::AssertionFailure() << "the linkd link failed\n"
                                         << describe(mine) << "stock run:\n"
                                         << describe(stock);
  if (mine.out != stock.out || mine.err != stock.err)
    return ::testing::AssertionFailure()
           << "stdout/stderr differ from the stock linker's\nlinkd run:\n"
           << describe(mine) << "stock run:\n"
           << describe(stock);
  for (const std::string &out : outputs)
    if (auto same = sameBytes(out + ".stock", out); !same)
      return same;
  if (throughDaemon) {
    auto st = daemonStatus();
    if (!st)
      return ::testing::AssertionFailure()
             << "no daemon is running after a link through " << linkers.linkd;
    if (st->linksTotal <= before)
      return ::testing::AssertionFailure()
             << "the daemon did not count the link (links_total " << before
             << " -> " << st->linksTotal << "): it ran elsewhere";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult E2eTest::sameDiagnostics(const LinkerPair &linkers,
                                                    const std::string &args) {
  RunResult stock = run(linkers.stock + " " + args);
  RunResult mine = run(linkers.linkd + " " + args);
  if (stock.exitCode == 0)
    return ::testing::AssertionFailure()
           << "the stock link was expected to fail\n"
           << describe(stock);
  if (mine.exitCode != stock.exitCode || mine.out != stock.out ||
      mine.err != stock.err)
    return ::testing::AssertionFailure()
           << "linkd's diagnostics differ from the stock linker's\n"
           << "linkd run:\n"
           << describe(mine) << "stock run:\n"
           << describe(stock);
  return ::testing::AssertionSuccess();
}

std::optional<DaemonStatus> E2eTest::daemonStatus() {
  RunResult r = run(binPath("linkd") + " status --json", 30s);
  if (r.exitCode != 0)
    return std::nullopt;
  DaemonStatus st;
  st.json = r.out;
  st.pid = jsonNumber(r.out, "pid").value_or(0);
  st.zygotePid = jsonNumber(r.out, "zygote_pid").value_or(0);
  st.linksTotal = jsonNumber(r.out, "links_total").value_or(0);
  st.linksFailed = jsonNumber(r.out, "links_failed").value_or(0);
  st.linksCrashed = jsonNumber(r.out, "links_crashed").value_or(0);
  st.activeLinks = jsonNumber(r.out, "active_links").value_or(0);
  if (st.pid <= 0) {
    ADD_FAILURE() << "linkd status --json printed no pid:\n" << describe(r);
    return std::nullopt;
  }
  return st;
}

std::optional<DaemonStatus>
E2eTest::waitForStatus(const std::function<bool(const DaemonStatus &)> &pred,
                       std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::optional<DaemonStatus> last;
  for (;;) {
    if (auto st = daemonStatus()) {
      last = st;
      if (pred(*st))
        return last;
    }
    if (Clock::now() > deadline)
      return last;
    std::this_thread::sleep_for(20ms);
  }
}

std::vector<std::string> E2eTest::logLines(std::string_view needle) const {
  std::vector<std::string> lines;
  std::istringstream in(slurp(stateDir + "/linkd.log"));
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos)
      lines.push_back(line);
  return lines;
}

E2eTest::LinkServed E2eTest::lastLinkServed() const {
  auto lines = logLines(" argc=");
  LinkServed s;
  if (lines.empty())
    return s;
  std::smatch m;
  if (std::regex_search(lines.back(), m,
                        std::regex("flavor=\\w+ pid=(\\d+) ")))
    s.pid = std::stol(m[1]);
  if (std::regex_search(lines.back(), m, std::regex(" reused=(\\d+) ")))
    s.reused = std::stol(m[1]);
  return s;
}

std::vector<pid_t> E2eTest::daemonProcesses() const {
  std::vector<pid_t> daemons;
  for (pid_t pid : processesWithEnvironment("LINKD_SOCKET=" + socketPath)) {
    std::string cmd = commandLine(pid);
    if (cmd.find(" serve") != std::string::npos)
      daemons.push_back(pid);
  }
  return daemons;
}

} // namespace linkd::e2e

namespace linkd::e2e {

std::string E2eTest::wine(const std::string &program) {
  std::string prefix = path("wineprefix");
  std::string env = "WINEPREFIX=" + prefix +
                    " WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml=' ";
  if (!wineUsed) {
    wineUsed = true;
    atTeardown([this, prefix] {
      run("WINEPREFIX=" + prefix + " " + tools::wineserver.path + " -k", 30s);
      run("WINEPREFIX=" + prefix + " " + tools::wineserver.path + " -w", 30s);
    });
    // The prefix is made before the program runs, and made again when
    // Wine's first start fails: once in a few hundred first starts, wine
    // exits 1 at once, printing nothing, before any program runs (seen in
    // CI). That is Wine's setup, not what the test checks; the program's own
    // run is never repeated.
    for (int attempt = 1; attempt <= 3; ++attempt) {
      RunResult boot = run(env + tools::wine.path + " wineboot --init", 180s);
      bool made = boot.exitCode == 0 &&
                  access((prefix + "/system.reg").c_str(), F_OK) == 0;
      if (made)
        break;
      std::fprintf(stderr,
                   "[ e2e      ] Wine's prefix setup failed (attempt %d): "
                   "%s\n",
                   attempt, describe(boot).c_str());
      run("WINEPREFIX=" + prefix + " " + tools::wineserver.path + " -k", 30s);
      run("WINEPREFIX=" + prefix + " " + tools::wineserver.path + " -w", 30s);
      run("rm -rf " + prefix);
    }
  }
  return env + tools::wine.path + " " + program;
}

std::map<std::string, long long>
E2eTest::cacheStats(const std::string &envPrefix) {
  RunResult r = run(envPrefix + binPath("linkd") + " stats --json");
  EXPECT_TRUE(exitedZero(r));
  std::map<std::string, long long> out;
  std::regex field("\"([a-z_]+)\": (-?[0-9]+)");
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), field), end;
       it != end; ++it)
    out[(*it)[1]] = std::stoll((*it)[2]);
  return out;
}

long long E2eTest::statReaching(const std::string &key, long long atLeast,
                                std::chrono::milliseconds within) {
  auto end = std::chrono::steady_clock::now() + within;
  long long v = 0;
  while ((v = cacheStats()[key]) < atLeast &&
         std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(25ms);
  return v;
}

void E2eTest::waitForStat(const std::string &key, long long n) {
  long long v = statReaching(key, n);
  ASSERT_GE(v, n) << "linkd stats: " << key << " stayed at " << v;
}

void E2eTest::waitForSettledResults(long long n) {
  for (int i = 0; i < 400; ++i) {
    std::map<std::string, long long> s = cacheStats();
    if (s["results_stored"] + s["results_not_stored"] >= n)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  FAIL() << "the daemon did not store " << n << " results";
}

} // namespace linkd::e2e
