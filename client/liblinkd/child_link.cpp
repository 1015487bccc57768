// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/liblinkd/child_link.h"

#include "client/liblinkd/private_dirs.h"
#include "client/local_linker.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

extern char **environ;

namespace linkd::kernel {
namespace {

using Clock = std::chrono::steady_clock;

// A private directory of the pool, given back when the link is done.
struct PrivateDir {
  std::string path;
  ~PrivateDir() {
    if (!path.empty())
      givePrivateDir(path);
  }
};

bool writeWhole(const std::string &path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  for (size_t off = 0; off < data.size();) {
    ssize_t w = write(fd, data.data() + off, data.size() - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      close(fd);
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return close(fd) == 0;
}

bool readWhole(const std::string &path, std::string &out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      close(fd);
      return false;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

std::optional<Outcome> cannotWrite(const std::string &what,
                                  const std::string &where) {
  return failedWith(LINKD_IO_ERROR, "cannot write " + what + " in " + where +
                                        ": " + std::strerror(errno));
}

// The private directory of one link: the link's working directory `work`,
// holding the inputs named relatively and what the link writes, and for
// linkd-lld its view `view` (daemon/linkd-lld/local_view.h): the inputs
// named absolutely, read there at their names.
struct Layout {
  std::string work, view;
};

// Writes each input at its name under `dir.work` or, named absolutely, into
// the view; nothing, or why not.
std::optional<Outcome> placeInputs(const Layout &dir, const Request &req) {
  std::string names;
  unsigned placed = 0;
  for (const Input &in : req.inputs) {
    if (in.name.front() == '/') {
      if (dir.view.empty())
        return failedWith(LINKD_BAD_ARGUMENT,
                          "input '" + in.name +
                              "' has an absolute name: without a daemon only "
                              "linkd's own linker (linkd-lld) can read it "
                              "there, and the linker found is a stock one");
      if (!writeWhole(dir.view + "/" + std::to_string(placed++), in.data))
        return cannotWrite("input '" + in.name + "'", dir.view);
      names.append(in.name).push_back('\0');
      continue;
    }
    for (size_t slash = in.name.find('/'); slash != std::string::npos;
         slash = in.name.find('/', slash + 1))
      mkdir((dir.work + "/" + in.name.substr(0, slash)).c_str(), 0700);
    if (!writeWhole(dir.work + "/" + in.name, in.data))
      return cannotWrite("input '" + in.name + "'", dir.work);
  }
  if (!dir.view.empty() && !writeWhole(dir.view + "/names", names))
    return cannotWrite("the link's view", dir.view);
  return std::nullopt;
}

// Every regular file under `dir` that is not an input, by relative name.
void collectOutputs(const std::string &dir, const std::string &rel,
                    const std::set<std::string> &inputs, ResultMsg &r) {
  DIR *d = opendir((dir + "/" + rel).c_str());
  if (!d)
    return;
  while (dirent *e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..")
      continue;
    std::string name = rel.empty() ? n : rel + "/" + n;
    std::string p = dir + "/" + name;
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0)
      continue;
    if (S_ISDIR(st.st_mode)) {
      collectOutputs(dir, name, inputs, r);
    } else if (S_ISREG(st.st_mode) && !inputs.count(name)) {
      WireOutput o;
      o.name = name;
      o.mode = st.st_mode & 07777;
      if (readWhole(p, o.data))
        r.outputs.push_back(std::move(o));
    }
  }
  closedir(d);
}

struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;
};

// A stock ELF or Wasm linker given under this much input runs with
// `--threads=1` first (the caller's own --threads comes later and wins).
// Measured (perf stat -r 60, tiny gfx90a kernel): LLD's thread pool costs
// ~1.5 ms of a ~30 ms stock link and buys nothing this small; the output is
// the same bytes at any thread count. Not with --reproduce, whose archive
// records the argv.
constexpr size_t kSingleThreadBytes = 1 << 20;

bool singleThreaded(const Request &req, const LocalLinker &linker) {
  if (linker.linkdLld ||
      (req.flavor != Flavor::Elf && req.flavor != Flavor::Wasm))
    return false;
  size_t bytes = 0;
  for (const Input &in : req.inputs)
    bytes += in.data.size();
  for (const std::string &a : req.argv)
    if (a.find("reproduce") != std::string::npos)
      return false;
  if (std::getenv("LLD_REPRODUCE")) // the linker inherits our environment
    return false;
  return bytes < kSingleThreadBytes;
}

std::string spawnLink(const Layout &dir, const Request &req,
                      const LocalLinker &linker, Child &c) {
  std::vector<std::string> argv =
      localLinkerArgv(linker, req.flavor, req.argv, {}, dir.view);
  if (singleThreaded(req, linker))
    argv.insert(argv.begin() + 3, "--threads=1"); // after `-flavor F`
  std::vector<const char *> args;
  for (const std::string &a : argv)
    args.push_back(a.c_str());
  args.push_back(nullptr);
  int outP[2], errP[2];
  if (pipe2(outP, O_CLOEXEC) != 0)
    return std::string("pipe: ") + std::strerror(errno);
  if (pipe2(errP, O_CLOEXEC) != 0) {
    close(outP[0]);
    close(outP[1]);
    return std::string("pipe: ") + std::strerror(errno);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, outP[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, errP[1], STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&fa, dir.work.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  int rc = posix_spawn(&c.pid, linker.path.c_str(), &fa, &attr,
                       const_cast<char *const *>(args.data()), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(outP[1]);
  close(errP[1]);
  c.out = outP[0];
  c.err = errP[0];
  if (rc != 0) {
    close(c.out);
    close(c.err);
    return "cannot run " + linker.path + ": " + std::strerror(rc);
  }
  return {};
}

// Reads the child's stdout and stderr to their end and reaps it; kills it
// at the deadline. LINKD_OK or why the link did not finish (`why`).
linkd_status collect(Child &c, const Request &req, ResultMsg &r,
                     std::string &why) {
  auto deadline = Clock::now() + std::chrono::milliseconds(req.timeoutMs);
  pollfd fds[2] = {{c.out, POLLIN, 0}, {c.err, POLLIN, 0}};
  std::string *sinks[2] = {&r.out, &r.err};
  char buf[1 << 16];
  bool timedOut = false;
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    int wait = -1;
    if (req.timeoutMs) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - Clock::now())
                      .count();
      if (left <= 0) {
        timedOut = true;
        kill(c.pid, SIGKILL);
        break;
      }
      wait = static_cast<int>(left);
    }
    if (poll(fds, 2, wait) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        fds[i].fd = -1;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(n));
    }
  }
  close(c.out);
  close(c.err);
  int status = 0;
  pid_t got;
  while ((got = waitpid(c.pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (timedOut) {
    why = "the link did not finish within " + std::to_string(req.timeoutMs) +
          " ms";
    return LINKD_TIMEOUT;
  }
  if (got < 0) { // a host that ignores SIGCHLD has its children reaped for it
    why = "cannot learn how the linker ended: " +
          std::string(std::strerror(errno));
    return LINKD_IO_ERROR;
  }
  if (WIFSIGNALED(status)) {
    r.termSignal = WTERMSIG(status);
    r.exitCode = 128 + r.termSignal;
  } else {
    r.exitCode = WEXITSTATUS(status);
  }
  return LINKD_OK;
}

} // namespace

Outcome linkInChildProcess(const Request &req) {
  Outcome o;
  std::string why;
  std::optional<LocalLinker> linker = findLocalLinker(
      req.flavor, req.fallbackLinker, lldBinaryForLibrary(), why);
  if (!linker)
    return failedWith(LINKD_NO_LINKER, why);
  const char *tmp = std::getenv("TMPDIR");
  PrivateDir root{takePrivateDir(tmp && *tmp ? tmp : "/tmp", why)};
  if (root.path.empty())
    return failedWith(LINKD_IO_ERROR, why);
  Layout dir{root.path + "/work", linker->linkdLld ? root.path + "/view" : ""};
  if (std::optional<Outcome> refused = placeInputs(dir, req))
    return std::move(*refused);
  Child c;
  if (std::string e = spawnLink(dir, req, *linker, c); !e.empty())
    return failedWith(LINKD_IO_ERROR, e);
  ResultMsg r;
  if (linkd_status st = collect(c, req, r, why); st != LINKD_OK)
    return failedWith(st, why);
  o.local = true;
  std::set<std::string> names;
  for (const Input &in : req.inputs)
    names.insert(in.name);
  collectOutputs(dir.work, "", names, r);
  std::sort(
      r.outputs.begin(), r.outputs.end(),
      [](const WireOutput &a, const WireOutput &b) { return a.name < b.name; });
  o.result = std::move(r);
  return o;
}

} // namespace linkd::kernel
