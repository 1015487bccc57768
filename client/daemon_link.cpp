// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "client/daemon_link.h"

#include "config/config.h"
#include "config/env_flag.h"
#include "util/files.h"
#include "wire/link_wire.h"

#include <csignal>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace linkd {
namespace {

static_assert(static_cast<int>(Flavor::Elf) == v1::FLAVOR_ELF);
static_assert(static_cast<int>(Flavor::Coff) == v1::FLAVOR_COFF);
static_assert(static_cast<int>(Flavor::MachO) == v1::FLAVOR_MACHO);
static_assert(static_cast<int>(Flavor::Wasm) == v1::FLAVOR_WASM);
static_assert(static_cast<int>(Flavor::Ar) == v1::FLAVOR_AR);
static_assert(static_cast<int>(Flavor::Ranlib) == v1::FLAVOR_RANLIB);
static_assert(static_cast<int>(Flavor::Lib) == v1::FLAVOR_LIB);

// What LLVM's sys::Process::FileDescriptorHasColors says for fd 2.
bool stderrIsColorTty() {
  if (!isatty(STDERR_FILENO))
    return false;
  const char *term = std::getenv("TERM");
  if (!term)
    return false;
  std::string_view t = term;
  return t == "ansi" || t == "cygwin" || t == "linux" ||
         t.starts_with("screen") || t.starts_with("xterm") ||
         t.starts_with("vt100") || t.starts_with("rxvt") ||
         t.ends_with("color");
}

std::string currentDirectory() {
  // $PWD keeps the user's spelling of symlinked directories; LLD sees the same
  // relative paths either way, but logs and later cache keys read better.
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof(buf)))
    return buf;
  return {};
}

v1::LinkRequest buildRequest(Flavor flavor, const ClientArgs &args) {
  v1::LinkRequest req;
  req.set_protocol_version(1);
  req.set_flavor(static_cast<v1::Flavor>(flavor));
  for (const std::string &a : args.linkerArgv)
    req.add_argv(a);
  req.set_no_cache(args.noCache);
  req.set_incremental(args.incremental);
  for (size_t i = 0; i < args.rewriteSpecs.size(); ++i)
    if (i == 0)
      req.set_rewrite_spec(args.rewriteSpecs[0]);
    else
      req.add_more_rewrite_specs(args.rewriteSpecs[i]);
  req.set_cwd(currentDirectory());
  // Sent with each link, so that one daemon serves checkouts with different
  // base dirs; a relative one means nothing to the daemon and is not sent.
  if (std::string base = loadConfig().baseDir; !base.empty() && base[0] == '/')
    req.set_base_dir(base);
  for (auto names : {flavorEnvironment(flavor), processEnvironment()})
    for (std::string_view name : names) {
      std::string n(name);
      if (const char *v = std::getenv(n.c_str()))
        (*req.mutable_env())[n] = v;
    }
  mode_t mask = umask(0);
  umask(mask);
  req.set_umask(mask);
  req.set_stderr_is_color_tty(stderrIsColorTty());
  req.set_client_version(LINKD_VERSION);
  for (const std::string &var : settingVariables())
    if (const char *v = std::getenv(var.c_str()); v && *v)
      (*req.mutable_settings_env())[var] = v;
  if (args.stdinData)
    req.set_stdin_data(*args.stdinData);
  return req;
}

// LINKD_TIMEOUT (seconds) bounds the whole link; an hour by default.
std::chrono::steady_clock::time_point requestDeadline() {
  long long seconds = 3600;
  if (const char *v = std::getenv("LINKD_TIMEOUT"); v && *v)
    seconds = std::atoll(v);
  return std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
}

// Milliseconds left until `deadline`, at least 1 (0 means "no limit").
uint32_t millisLeft(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
  return static_cast<uint32_t>(std::clamp<long long>(left, 1, UINT32_MAX));
}

// A signal the tool sends itself when it crashes (abort, a fault, a trap):
// the link's own result, already reported by the child's crash handler, and
// a local rerun would only crash again. Any other signal (SIGKILL from the
// OOM killer or a dying zygote) came from outside: the link runs again.
bool crashedItself(int sig) {
  return sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS || sig == SIGILL ||
         sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
}

} // namespace

DaemonLinkResult linkThroughDaemon(int fd, Flavor flavor,
                                   const ClientArgs &args, PhaseTimes &times) {
  DaemonLinkResult result;
  v1::LinkRequest req = buildRequest(flavor, args);
  if (req.cwd().empty()) {
    result.failure = "cannot determine the working directory";
    return result;
  }
  auto deadline = requestDeadline();
  // A request larger than the socket's buffer waits for the daemon to read
  // it: one that does not (stopped, wedged) must not hold the link past its
  // deadline either.
  uint32_t ms = millisLeft(deadline);
  timeval sendLimit{static_cast<time_t>(ms / 1000),
                    static_cast<suseconds_t>(ms % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendLimit, sizeof(sendLimit));
  if (!wire::sendRequest(fd, req)) {
    result.failure =
        errno == EAGAIN
            ? "the daemon did not take the request in time"
            : std::string("cannot send the request: ") + std::strerror(errno);
    return result;
  }
  times.sent = PhaseTimes::now();
  v1::LinkReply reply;
  std::optional<v1::LinkDone> done;
  std::string error;
  while (wire::readReply(fd, millisLeft(deadline), reply, error)) {
    if (!times.firstReply)
      times.firstReply = PhaseTimes::now();
    if (!error.empty()) {
      result.failure = "the daemon failed: " + error;
      return result;
    }
    if (reply.has_output()) {
      const auto &chunk = reply.output();
      // A closed stdout is the caller's business, as with lld.
      (void)writeAll(chunk.stream() == v1::OutputChunk::STREAM_STDOUT
                         ? STDOUT_FILENO
                         : STDERR_FILENO,
                     chunk.data());
    } else if (reply.has_notice()) {
      if (!envFlag("LINKD_QUIET"))
        (void)writeAll(STDERR_FILENO, reply.notice());
    } else if (reply.has_done()) {
      done = reply.done();
      times.done = PhaseTimes::now();
      break; // the daemon may go on to store the result; we are done
    }
  }
  if (!done && std::chrono::steady_clock::now() >= deadline) {
    result.failure = "the daemon did not finish the link in time";
    return result;
  }
  if (!done) {
    result.failure = "the daemon ended the link without a result";
  } else if (!done->internal_error().empty()) {
    result.failure =
        "the daemon could not run the link: " + done->internal_error();
  } else if (done->term_signal() != 0 && !crashedItself(done->term_signal())) {
    result.failure =
        "the link process was killed by " + done->term_signal_name();
  } else if (done->term_signal() != 0) {
    result.crashSignal = done->term_signal();
  } else {
    result.exitCode = done->exit_code();
  }
  return result;
}

} // namespace linkd
