// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "view/sandbox_view.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace linkd {
namespace {

using sandbox::SandboxReply;

SandboxView::Answer ready(char kind, int err = 0) {
  SandboxView::Answer a;
  a.ready = true;
  a.reply.kind = kind;
  a.reply.err = err;
  return a;
}

SandboxView::Answer needPath(const std::string &p) {
  SandboxView::Answer a;
  a.needPath = p;
  return a;
}

void fillFromFact(SandboxReply &r, const v1::PathFact &f) {
  r.mode = f.mode();
  r.size = f.size();
  r.dev = f.dev();
  r.ino = f.ino();
  r.mtimeNs = f.mtime_ns();
}

SandboxView::Answer fromFact(const v1::PathFact &f) {
  switch (f.kind()) {
  case v1::PathFact::ABSENT:
    return ready(sandbox::KindAbsent, f.error() ? f.error() : ENOENT);
  case v1::PathFact::FILE: {
    SandboxView::Answer a = ready(sandbox::KindFile);
    fillFromFact(a.reply, f);
    return a;
  }
  case v1::PathFact::DIRECTORY: {
    SandboxView::Answer a = ready(sandbox::KindDir);
    fillFromFact(a.reply, f);
    return a;
  }
  default:
    return ready(sandbox::KindError, f.error() ? f.error() : EACCES);
  }
}

std::string parentOf(const std::string &p) {
  size_t slash = p.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}

} // namespace

SandboxView::SandboxView(BlobFiles blobs, std::string scratchDir)
    : blobs(std::move(blobs)), scratch(std::move(scratchDir)) {}

std::string SandboxView::open() {
  for (const std::string &d : {scratch, scratch + "/out", scratch + "/empty"})
    if (mkdir(d.c_str(), 0700) != 0)
      return "cannot create " + d + ": " + std::strerror(errno);
  return {};
}

void SandboxView::addFact(const v1::PathFact &fact) {
  if (fact.path().empty() || fact.path()[0] != '/')
    return;
  auto [it, inserted] = entries.try_emplace(fact.path());
  // A path the link wrote or removed is the link's, not the client's.
  if (inserted || it->second.state == Entry::Fact) {
    it->second.state = Entry::Fact;
    it->second.fact = fact;
  }
}

bool SandboxView::knows(const std::string &path) const {
  return entries.count(path) != 0;
}

bool SandboxView::knowsDirectory(const std::string &path) const {
  auto it = entries.find(path);
  return it != entries.end() && it->second.state == Entry::Fact &&
         it->second.fact.kind() == v1::PathFact::DIRECTORY;
}

std::optional<SandboxView::Question> SandboxView::parse(std::string_view msg) {
  if (msg.size() < 3 || msg.back() != '\0')
    return std::nullopt;
  Question q;
  q.op = msg[0];
  msg.remove_prefix(1);
  size_t nul = msg.find('\0');
  q.path = std::string(msg.substr(0, nul));
  msg.remove_prefix(nul + 1);
  if (q.op == sandbox::OpRename || q.op == sandbox::OpChmod) {
    nul = msg.find('\0');
    if (nul == std::string_view::npos)
      return std::nullopt;
    q.path2 = std::string(msg.substr(0, nul));
    msg.remove_prefix(nul + 1);
  }
  if (!msg.empty() || q.path.empty() || q.path[0] != '/')
    return std::nullopt;
  if (q.op == sandbox::OpRename && (q.path2.empty() || q.path2[0] != '/'))
    return std::nullopt;
  return q;
}

SandboxView::Answer SandboxView::answer(const Question &q) {
  switch (q.op) {
  case sandbox::OpStat:
    return statAnswer(q.path);
  case sandbox::OpRead:
    return readAnswer(q.path);
  case sandbox::OpWrite:
    return writeAnswer(q.path);
  case sandbox::OpRename:
    return renameAnswer(q.path, q.path2);
  case sandbox::OpUnlink:
    return unlinkAnswer(q.path);
  case sandbox::OpChmod:
    return chmodAnswer(q.path, q.path2);
  default:
    return ready(sandbox::KindError, EINVAL);
  }
}

SandboxView::Answer SandboxView::statAnswer(const std::string &path) {
  auto it = entries.find(path);
  if (it == entries.end())
    return needPath(path);
  const Entry &e = it->second;
  if (e.state == Entry::Gone)
    return ready(sandbox::KindAbsent, ENOENT);
  if (e.state == Entry::Fact)
    return fromFact(e.fact);
  struct stat st{};
  if (::stat(e.real.c_str(), &st) != 0)
    return ready(sandbox::KindAbsent, ENOENT);
  Answer a = ready(sandbox::KindFile);
  a.reply.mode = st.st_mode;
  a.reply.size = static_cast<uint64_t>(st.st_size);
  a.reply.dev = st.st_dev;
  a.reply.ino = st.st_ino;
  a.reply.mtimeNs = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
  return a;
}

SandboxView::Answer SandboxView::readAnswer(const std::string &path) {
  Answer a = statAnswer(path);
  if (!a.ready ||
      (a.reply.kind != sandbox::KindFile && a.reply.kind != sandbox::KindDir))
    return a;
  const Entry &e = entries.at(path);
  if (a.reply.kind == sandbox::KindDir) {
    a.real = scratch + "/empty";
  } else if (e.state == Entry::Written) {
    a.real = e.real;
  } else {
    auto d = Digest::fromRaw(e.fact.digest());
    if (!d)
      return ready(sandbox::KindError, EIO);
    if (!have(*d)) {
      Answer need;
      need.needBlob = *d;
      return need;
    }
    a.real = blobs.pathOf(*d);
    a.blob = *d;
  }
  return a;
}

SandboxView::Answer SandboxView::writeAnswer(const std::string &path) {
  auto it = entries.find(path);
  if (it != entries.end() && it->second.state == Entry::Written) {
    Answer a = ready(sandbox::KindFile);
    a.real = it->second.real;
    return a;
  }
  if (it != entries.end() && it->second.state == Entry::Fact &&
      it->second.fact.kind() == v1::PathFact::DIRECTORY)
    return ready(sandbox::KindError, EISDIR);
  // The client's directory must exist for the file to be created in it.
  std::string parent = parentOf(path);
  auto pit = entries.find(parent);
  if (pit == entries.end())
    return needPath(parent);
  if (pit->second.state != Entry::Fact ||
      pit->second.fact.kind() != v1::PathFact::DIRECTORY)
    return ready(sandbox::KindAbsent,
                 pit->second.state == Entry::Fact &&
                         pit->second.fact.kind() == v1::PathFact::FILE
                     ? ENOTDIR
                     : ENOENT);
  Entry &e = entries[path];
  e.state = Entry::Written;
  e.real = scratch + "/out/" + std::to_string(nextOutput++);
  Answer a = ready(sandbox::KindFile);
  a.real = e.real;
  return a;
}

SandboxView::Answer SandboxView::renameAnswer(const std::string &from,
                                              const std::string &to) {
  auto it = entries.find(from);
  if (it == entries.end())
    return needPath(from);
  if (it->second.state == Entry::Gone)
    return ready(sandbox::KindError, ENOENT);
  if (it->second.state == Entry::Fact &&
      it->second.fact.kind() != v1::PathFact::FILE)
    return ready(sandbox::KindError,
                 it->second.fact.kind() == v1::PathFact::DIRECTORY ? EXDEV
                                                                   : ENOENT);
  if (!knows(parentOf(to)))
    return needPath(parentOf(to));
  const Entry &toParent = entries.at(parentOf(to));
  if (toParent.state != Entry::Fact ||
      toParent.fact.kind() != v1::PathFact::DIRECTORY)
    return ready(sandbox::KindError, ENOENT);
  if (from == to)
    return ready(sandbox::KindOk);
  Entry moved = it->second;
  it->second.state = Entry::Gone;
  Entry &target = entries[to];
  if (target.state == Entry::Written && target.real != moved.real)
    ::unlink(target.real.c_str());
  target = moved;
  if (target.state == Entry::Fact)
    target.fact.set_path(to);
  return ready(sandbox::KindOk);
}

SandboxView::Answer SandboxView::unlinkAnswer(const std::string &path) {
  auto it = entries.find(path);
  if (it == entries.end())
    return needPath(path);
  Entry &e = it->second;
  if (e.state == Entry::Gone)
    return ready(sandbox::KindError, ENOENT);
  if (e.state == Entry::Fact && e.fact.kind() != v1::PathFact::FILE)
    return ready(sandbox::KindError,
                 e.fact.kind() == v1::PathFact::DIRECTORY ? EISDIR : ENOENT);
  if (e.state == Entry::Written)
    ::unlink(e.real.c_str());
  e.state = Entry::Gone;
  return ready(sandbox::KindOk);
}

SandboxView::Answer SandboxView::chmodAnswer(const std::string &path,
                                             const std::string &mode) {
  auto it = entries.find(path);
  if (it == entries.end() || it->second.state != Entry::Written)
    return ready(sandbox::KindError, EPERM);
  char *end = nullptr;
  unsigned long m = std::strtoul(mode.c_str(), &end, 10);
  if (!end || *end ||
      ::chmod(it->second.real.c_str(), static_cast<mode_t>(m & 07777)) != 0)
    return ready(sandbox::KindError, EPERM);
  return ready(sandbox::KindOk);
}

std::vector<Digest> SandboxView::missingBlobs() {
  std::vector<Digest> out;
  for (const auto &[path, e] : entries) {
    if (e.state != Entry::Fact || e.fact.kind() != v1::PathFact::FILE ||
        !e.fact.likely_read())
      continue;
    if (auto d = Digest::fromRaw(e.fact.digest()); d && !have(*d))
      out.push_back(*d);
  }
  return out;
}

std::vector<SandboxView::Output> SandboxView::outputs() const {
  std::vector<Output> out;
  for (const auto &[path, e] : entries)
    if (e.state == Entry::Written)
      out.push_back({path, e.real});
  return out;
}

} // namespace linkd
