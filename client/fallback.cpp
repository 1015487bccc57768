// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/fallback.h"

#include "client/local_linker.h"

#include "config/env_flag.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace linkd {

std::string daemonBinary() {
  if (const char *bin = std::getenv("LINKD_BIN"); bin && *bin)
    return bin;
  std::string beside = executableDirectory() + "/linkd";
  if (executableFile(beside))
    return beside;
  return programOnPath("linkd");
}

void warnFallback(const RuntimePaths &paths, Flavor flavor,
                  const std::string &reason, bool lasting) {
  if (envFlag("LINKD_QUIET"))
    return;
  // O_EXCL: of many concurrent clients, one prints.
  int fd = lasting ? -1
                   : open(paths.fallbackMark.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST && !lasting)
    return;
  if (fd >= 0)
    close(fd);
  std::string msg =
      "linkd: warning: " + reason +
      (isArchiver(flavor) ? "; archiving locally" : "; linking locally") +
      " (LINKD_QUIET=1 silences this)\n";
  (void)!write(STDERR_FILENO, msg.data(), msg.size());
}

namespace {

// Makes `data` the process's stdin again (the client consumed the real one).
void restoreStdin(const std::string &data) {
  int fd = memfd_create("linkd-stdin", 0);
  if (fd < 0)
    return;
  for (size_t off = 0; off < data.size();) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    off += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  dup2(fd, STDIN_FILENO);
  close(fd);
}

} // namespace

void dieOfSignal(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(128 + sig); // a signal whose default is to be ignored
}

void execLocalLink(Flavor flavor, const std::vector<std::string> &argv,
                   const std::optional<std::string> &stdinData,
                   const std::vector<std::string> &rewriteSpecs) {
  if (stdinData)
    restoreStdin(*stdinData);
  // linkd-lld sits next to the daemon binary; exec it directly rather than
  // through `linkd link`, which would cost one more process start. Without
  // it (the wheel's client), stock LLD does a plain link.
  std::string daemon = daemonBinary();
  std::string own =
      (daemon.empty() ? executableDirectory() + "/"
                      : daemon.substr(0, daemon.find_last_of('/') + 1)) +
      "linkd-lld";
  std::string error;
  std::optional<LocalLinker> linker = findLocalLinker(flavor, "", own, error);
  if (linker && !linker->linkdLld &&
      (isArchiver(flavor) || !rewriteSpecs.empty())) {
    error = own + " is not installed, and stock LLD cannot " +
            (isArchiver(flavor) ? "archive" : "rewrite symbols");
    linker.reset();
  }
  if (!linker) {
    std::fprintf(stderr, "linkd: error: %s\n", error.c_str());
    _exit(1);
  }
  std::vector<std::string> full =
      localLinkerArgv(*linker, flavor, argv, rewriteSpecs);
  std::vector<const char *> args;
  for (const std::string &a : full)
    args.push_back(a.c_str());
  args.push_back(nullptr);
  execv(linker->path.c_str(), const_cast<char *const *>(args.data()));
  std::fprintf(stderr, "linkd: error: cannot run %s: %s\n",
               linker->path.c_str(), std::strerror(errno));
  _exit(1);
}

} // namespace linkd
