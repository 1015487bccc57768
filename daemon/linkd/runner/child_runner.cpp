// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/runner/child_runner.h"

#include "cache/file_time.h"
#include "child/ordered_output.h"
#include "util/clock.h"
#include "util/files.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

// A pipe whose write end goes to the child.
struct Pipe {
  UniqueFd read, write;
  bool open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
      return false;
    read.reset(fds[0]);
    write.reset(fds[1]);
    return true;
  }
};

} // namespace

// The daemon's ends of one child's channels (and, until the spawn, the
// child's).
struct ChildRunner::Pipes {
  Pipe out, err, ordered, records;
  UniqueFd sandbox, sandboxChild;

  std::string open(const ChildChannels &c) {
    if (c.sandbox) {
      int sp[2];
      if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
        return std::string("cannot create the sandbox socket: ") +
               std::strerror(errno);
      sandbox.reset(sp[0]);
      sandboxChild.reset(sp[1]);
    }
    if (!out.open() || !err.open() || (c.ordered && !ordered.open()) ||
        (c.records && !records.open()))
      return std::string("cannot create pipes: ") + std::strerror(errno);
    // An archive of a thousand members is a thousand records at once, a map
    // on stdout megabytes: with the default 64 KiB the child would wait for
    // the pump's thread to be scheduled, several times per link on a busy
    // machine.
    if (c.records)
      fcntl(records.write.get(), F_SETPIPE_SZ, 1 << 20);
    if (c.ordered)
      fcntl(ordered.write.get(), F_SETPIPE_SZ, 1 << 20);
    return {};
  }

  ZygoteClient::ChildFds childFds() const {
    return {out.write.get(), err.write.get(), records.write.get(),
            sandboxChild.get(), ordered.write.get()};
  }

  // After the spawn: only the child holds its ends.
  void closeChildEnds() {
    for (Pipe *p : {&out, &err, &ordered, &records})
      p->write.reset();
    sandboxChild.reset();
  }
};

ChildRunner::ChildRunner(ZygoteClient &zygote, ChildChannels channels,
                         std::string label)
    : zygote(zygote), channels(channels), label(std::move(label)) {}

ChildRun ChildRunner::run(const v1::LinkRequest &request, ChildHooks &hooks) {
  // A zygote that died since the last link is only noticed when it is
  // spoken to; the spawn then fails before LLD ran, so one retry (which
  // starts a fresh zygote) is always safe.
  ChildRun run = attempt(request, hooks);
  if (run.error.empty() && !run.stopped && !run.exit.ran && run.pid <= 0) {
    spdlog::warn("{} could not start: {}; retrying", label, run.exit.error);
    run = attempt(request, hooks);
  }
  return run;
}

void ChildRunner::answer(std::string_view reply) const {
  if (sandboxFd >= 0)
    (void)!::send(sandboxFd, reply.data(), reply.size(), MSG_NOSIGNAL);
}

ChildRun ChildRunner::attempt(const v1::LinkRequest &request,
                              ChildHooks &hooks) {
  ChildRun run;
  Pipes p;
  if (run.error = p.open(channels); !run.error.empty())
    return run;
  run.spawnedFileClockNs = fileClockNowNs();
  run.spawned = Clock::now();
  ZygoteClient::Spawned child =
      zygote.spawn(request, p.childFds(), channels.reusable);
  p.closeChildEnds();
  sandboxFd = p.sandbox.get();
  run.stopped = !pump(p, hooks, run);
  run.pumped = Clock::now();
  end(p, hooks, child, run);
  return run;
}

// Until the child closed every channel, or sent its report (it is exiting:
// what the other pipes hold was written before it and is read now; its
// teardown is not waited for). False if a hook stopped it or polling failed.
bool ChildRunner::pump(Pipes &p, ChildHooks &hooks, ChildRun &run) {
  enum { kOrdered, kSandbox, kErr, kOut, kRecords, kExtra, kCount };
  pollfd fds[kCount] = {
      {p.ordered.read.get(), POLLIN, 0}, {p.sandbox.get(), POLLIN, 0},
      {p.err.read.get(), POLLIN, 0},     {p.out.read.get(), POLLIN, 0},
      {p.records.read.get(), POLLIN, 0}, {hooks.extraFd, POLLIN, 0}};
  ordered::Reader reader;
  bool go = true;
  // Consecutive pieces of one stream in one read go out as one: an ordered
  // record holds at most PIPE_BUF bytes, and a client's message per 4 KiB
  // would cost it a gRPC message each.
  std::string pending;
  bool pendingStderr = false;
  auto flush = [&] {
    if (go && !pending.empty() && hooks.output)
      go = hooks.output(pendingStderr, pending);
    pending.clear();
  };
  auto forward = [&](bool isStderr, std::string_view data) {
    if (isStderr != pendingStderr)
      flush();
    pendingStderr = isStderr;
    pending.append(data);
  };
  std::string buf(1 << 16, '\0');
  // One read of fds[i]; false at its end or with nothing to read now.
  auto take = [&](int i) {
    ssize_t r = i == kSandbox
                    ? recv(fds[i].fd, buf.data(), buf.size(), MSG_DONTWAIT)
                    : read(fds[i].fd, buf.data(), buf.size());
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
      return false;
    if (r <= 0) {
      fds[i].fd = -1;
      return false;
    }
    std::string_view data(buf.data(), static_cast<size_t>(r));
    if (i == kRecords) {
      if (hooks.records)
        hooks.records(data);
    } else if (i == kSandbox) {
      go = (!hooks.question || hooks.question(data)) && go;
    } else if (i == kOrdered) {
      reader.feed(data, [&](int stream, std::string_view payload) {
        forward(stream == 2, payload);
      });
    } else {
      forward(i == kErr, data);
    }
    flush();
    return true;
  };
  auto childOpen = [&] {
    for (int i : {kOrdered, kSandbox, kErr, kOut, kRecords})
      if (fds[i].fd >= 0)
        return true;
    return false;
  };
  while (childOpen()) {
    if (poll(fds, kCount, 100) < 0 && errno != EINTR) {
      run.stopReason = std::string("poll: ") + std::strerror(errno);
      return false;
    }
    if (hooks.tick && !hooks.tick())
      return false;
    if (fds[kExtra].fd >= 0 && (fds[kExtra].revents & POLLIN) &&
        hooks.extraReadable && !hooks.extraReadable())
      return false;
    // The ordered channel first: the plain pipes carry only what bypassed
    // it, which has no order against it anyway.
    for (int i : {kOrdered, kSandbox, kErr, kOut, kRecords}) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      take(i);
      if (!go)
        return false;
      if (i == kOrdered && !reader.report().empty()) {
        run.reported = Clock::now();
        run.report = decodeExitReport(reader.report());
        for (int j : {kErr, kOut, kRecords})
          for (pollfd one{fds[j].fd, POLLIN, 0};
               fds[j].fd >= 0 && poll(&one, 1, 0) > 0 && take(j);)
            ;
        return go;
      }
    }
  }
  return true;
}

// Ends the child: answered from its report, or stopped, or reaped.
void ChildRunner::end(Pipes &p, ChildHooks &hooks, ZygoteClient::Spawned &child,
                      ChildRun &run) {
  // A child blocked on a question gets EOF and gives up.
  sandboxFd = -1;
  p.sandbox.reset();
  run.pid = child.pid.get();
  if (run.stopped && run.pid > 0) {
    kill(run.pid, SIGINT);
    if (child.exit.wait_for(std::chrono::seconds(1)) !=
        std::future_status::ready)
      kill(run.pid, SIGKILL);
  }
  if (run.report) {
    // Its exit and reaping go on meanwhile; a reusable worker takes another
    // link once released (its pid is not signalled again). One that was
    // signalled is not released: the zygote reaps it.
    run.exit = reportedExit(*run.report);
    if (!run.stopped)
      zygote.release(child.id, run.exit);
    return;
  }
  run.exit = child.exit.get();
  // Killed, or lost with its zygote (which takes its children along): the
  // rest of its records, which name the temporaries it left.
  if (p.records.read.valid() && hooks.records &&
      (run.stopped || !run.exit.ran || WIFSIGNALED(run.exit.waitStatus))) {
    fcntl(p.records.read.get(), F_SETFL, O_NONBLOCK);
    std::string buf(1 << 16, '\0');
    for (ssize_t n;
         (n = read(p.records.read.get(), buf.data(), buf.size())) > 0;)
      hooks.records(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
}

} // namespace linkd
