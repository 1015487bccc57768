// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/remote_link.h"

#include "child/sandbox_protocol.h"
#include "daemon/linkd-lld/link_child.h"
#include "daemon/linkd-lld/lld_entry.h"
#include "digest/digest.h"
#include "linkd/v1/remote_link.pb.h"
#include "util/clock.h"
#include "util/files.h"
#include "view/sandbox_view.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace linkd {
namespace {

int fail(const std::string &what) {
  std::fprintf(stderr, "linkd-lld remote-link: %s\n", what.c_str());
  return 2;
}

std::string absolute(const std::string &path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

std::string replyBytes(const SandboxView::Answer &a) {
  std::string msg(sizeof(a.reply) + a.real.size(), '\0');
  std::memcpy(msg.data(), &a.reply, sizeof(a.reply));
  std::memcpy(msg.data() + sizeof(a.reply), a.real.data(), a.real.size());
  return msg;
}

// Answers the child's questions until it closes its end; paths without a
// fact are absent here, and noted.
void serve(SandboxView &view, int sb, v1::RemoteLinkResult &result) {
  char msg[2 * PATH_MAX + 16];
  for (;;) {
    ssize_t n = ::recv(sb, msg, sizeof(msg), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    std::optional<SandboxView::Question> q =
        SandboxView::parse(std::string_view(msg, static_cast<size_t>(n)));
    SandboxView::Answer a;
    for (int round = 0; q && round < 64; ++round) {
      a = view.answer(*q);
      if (a.ready || a.needPath.empty())
        break;
      result.add_unknown_paths(a.needPath);
      v1::PathFact absent;
      absent.set_path(a.needPath);
      absent.set_kind(v1::PathFact::ABSENT);
      absent.set_error(ENOENT);
      view.addFact(absent);
    }
    if (!q || !a.ready) {
      // Malformed, or a file fact whose blob the input root lacks.
      a = SandboxView::Answer{};
      a.reply.kind = sandbox::KindError;
      a.reply.err = q ? EIO : EINVAL;
    }
    std::string reply = replyBytes(a);
    (void)!::send(sb, reply.data(), reply.size(), MSG_NOSIGNAL);
  }
}

} // namespace

int remoteLinkMain(int argc, char **argv) {
  if (argc != 4)
    return fail("usage: linkd-lld remote-link INPUT-DIR OUTPUT-DIR");
  std::string in = absolute(argv[2]), out = argv[3];
  Result<std::string> bytes = readFile(in + "/request", 1ull << 30);
  v1::OffloadStart start;
  if (!bytes || !start.ParseFromString(*bytes))
    return fail("cannot read the request " +
                (bytes ? in + "/request" : bytes.error()));
  if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST)
    return fail("cannot create " + out + ": " + std::strerror(errno));
  out = absolute(out);
  for (const char *sub : {"/files"})
    if (::mkdir((out + sub).c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot create " + out + sub + ": " + std::strerror(errno));

  std::string blobDir = in + "/blobs";
  auto blobPath = [blobDir](const Digest &d) {
    return blobDir + "/" + d.hex();
  };
  SandboxView view(BlobFiles{[blobPath](const Digest &d) {
                               struct stat st;
                               return ::stat(blobPath(d).c_str(), &st) == 0 &&
                                      S_ISREG(st.st_mode);
                             },
                             blobPath},
                   out + "/scratch");
  if (std::string e = view.open(); !e.empty())
    return fail(e);
  for (const v1::PathFact &f : start.facts())
    view.addFact(f);

  v1::LinkRequest link = start.link();
  (*link.mutable_env())[sandbox::kReadDirKey] = blobDir;
  (*link.mutable_env())[sandbox::kWriteDirKey] = out + "/scratch";
  (*link.mutable_env())[sandbox::kRequireKey] = "0";

  int sb[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sb) != 0)
    return fail(std::string("socketpair: ") + std::strerror(errno));
  UniqueFd records(::open((out + "/records").c_str(),
                          O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!records.valid())
    return fail("cannot create " + out + "/records: " + std::strerror(errno));
  std::fflush(nullptr);
  auto begin = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0)
    return fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(sb[0]);
    LinkChannels ch;
    ch.outFd = STDOUT_FILENO;
    ch.errFd = STDERR_FILENO;
    ch.recordFd = records.get();
    ch.sandboxFd = sb[1];
    becomeLinker(link, ch);
  }
  ::close(sb[1]);
  v1::RemoteLinkResult result;
  result.set_lld_version(lldVersionString());
  serve(view, sb[0], result);
  ::close(sb[0]);
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  v1::OffloadDone &done = *result.mutable_done();
  done.set_wall_micros(microsSince(begin));
  done.set_user_micros(static_cast<uint64_t>(ru.ru_utime.tv_sec) * 1000000 +
                       static_cast<uint64_t>(ru.ru_utime.tv_usec));
  done.set_sys_micros(static_cast<uint64_t>(ru.ru_stime.tv_sec) * 1000000 +
                      static_cast<uint64_t>(ru.ru_stime.tv_usec));
  done.set_max_rss_kib(static_cast<uint64_t>(ru.ru_maxrss));
  if (WIFSIGNALED(status)) {
    done.set_term_signal(WTERMSIG(status));
    const char *abbrev = sigabbrev_np(WTERMSIG(status));
    done.set_term_signal_name(abbrev ? std::string("SIG") + abbrev
                                     : std::to_string(WTERMSIG(status)));
  } else {
    done.set_exit_code(WEXITSTATUS(status));
  }
  Result<std::string> recorded = readFile(out + "/records", 1ull << 30);
  if (!recorded)
    return fail("cannot read the link's records " + recorded.error());
  done.set_access_records(*recorded);
  ::unlink((out + "/records").c_str());

  // The outputs under their final client names, numbered in order.
  int i = 0;
  for (const SandboxView::Output &o : view.outputs()) {
    std::string file = out + "/files/" + std::to_string(i);
    if (::rename(o.real.c_str(), file.c_str()) != 0)
      return fail("cannot move " + o.real + ": " + std::strerror(errno));
    std::string why;
    auto digest = sha256File(file, &why);
    struct stat st{};
    if (!digest || ::stat(file.c_str(), &st) != 0)
      return fail("cannot read the output " + file + ": " + why);
    v1::FarmOutputFile *f = result.add_outputs();
    f->set_path(o.path);
    f->set_mode(st.st_mode & 07777);
    f->set_size(digest->size);
    f->set_digest(std::string(digest->digest.raw()));
    ++i;
  }
  removeTree(out + "/scratch");
  std::string serialized = result.SerializeAsString();
  UniqueFd fd(::open((out + "/result").c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid() || !writeAll(fd.get(), serialized))
    return fail("cannot write " + out + "/result: " + std::strerror(errno));
  return 0;
}

} // namespace linkd
