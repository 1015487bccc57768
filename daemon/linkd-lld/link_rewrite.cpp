// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Compiled without exceptions (it includes LLVM headers).
#include "daemon/linkd-lld/link_rewrite.h"

#include "child/rewrite_plan.h"
#include "daemon/linkd-lld/access_recorder.h"
#include "rewrite/rewrite.h"

#include "util/files.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace linkd {
namespace {

rewrite::Scope scopeOf(v1::RewritePlan::Scope s) {
  switch (s) {
  case v1::RewritePlan::SCOPE_RUNTIME:
    return rewrite::Scope::Runtime;
  case v1::RewritePlan::SCOPE_KERNEL:
    return rewrite::Scope::Kernel;
  default:
    return rewrite::Scope::Other;
  }
}

// Where the rewritten bytes go: the plan's directory (the daemon stores
// them from there), or an anonymous memory file for a local link.
std::string place(const v1::RewritePlan &plan, int index,
                  const std::string &contents, std::string *error) {
  std::string path;
  int fd;
  if (!plan.dir().empty()) {
    path = rewrittenPath(plan.dir(), index);
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  } else {
    // Not CLOEXEC-sensitive: nothing is exec'd; kept open for LLD's reads.
    fd = memfd_create("linkd-rewritten", 0);
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  if (fd < 0 || !writeAll(fd, contents)) {
    *error = plan.inputs(index).path() +
             ": cannot keep the rewritten copy: " + std::strerror(errno);
    return {};
  }
  if (!plan.dir().empty())
    ::close(fd);
  return path;
}

// Rewrites what the plan does not have yet; reads (and scans) every input.
std::string rewriteMissing(const v1::RewritePlan &plan,
                           std::vector<std::string> &targets,
                           std::vector<rewrite::LeftAloneRecord> *leftAlone) {
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> buffers;
  std::vector<rewrite::RewriteInput> inputs;
  for (const auto &in : plan.inputs()) {
    auto buf = llvm::MemoryBuffer::getFile(in.path(), /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      return in.path() + ": " + buf.getError().message();
    inputs.push_back({scopeOf(in.scope()), (*buf)->getMemBufferRef()});
    buffers.push_back(std::move(*buf));
  }
  // Inputs the daemon took from the cache are only scanned (the table
  // spans the runtime set), not rewritten again.
  std::vector<bool> wanted;
  for (int i = 0; i < plan.inputs_size(); ++i)
    wanted.push_back(plan.dir().empty() || !plan.inputs(i).cached());
  auto result = rewrite::rewrite(specFromPlan(plan), inputs, wanted);
  if (!result)
    return llvm::toString(result.takeError());
  if (leftAlone)
    *leftAlone = result->table.leftAlone();
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    if (!wanted[i])
      continue; // already at targets[i]
    const auto &files = result->outputs[i].files;
    if (files.size() != 1)
      return plan.inputs(static_cast<int>(i)).path() +
             ": a thin archive cannot be rewritten at link time (its members "
             "live in other files); rewrite it with `linkd rewrite` first";
    std::string error;
    targets[i] = place(plan, static_cast<int>(i), files[0].contents, &error);
    if (!error.empty())
      return error;
  }
  return {};
}

// Names two specs both leave alone (AMDGPU loader slots matched by
// --match) are one symbol in this link: two weak copies, or a weak and a
// strong one, merge without a word from LLD (two strong ones are its
// duplicate-symbol error). Said on stderr, so a cache hit says it again.
void warnSharedLeftAlone(
    const std::vector<std::vector<rewrite::LeftAloneRecord>> &perPlan) {
  std::map<std::string, std::pair<size_t, const rewrite::LeftAloneRecord *>>
      first;
  std::set<std::string> warned;
  for (size_t p = 0; p < perPlan.size(); ++p)
    for (const rewrite::LeftAloneRecord &r : perPlan[p]) {
      auto [it, fresh] = first.emplace(r.name, std::make_pair(p, &r));
      const rewrite::LeftAloneRecord &other = *it->second.second;
      if (fresh || it->second.first == p || !(r.weak || other.weak) ||
          !warned.insert(r.name).second)
        continue;
      std::string msg =
          "linkd: warning: link-time rewriting: " + r.name +
          " is a loader slot that two rewrite specs leave alone (" +
          other.file + ", " + r.file +
          "): a weak definition merges with the other copy's, so both "
          "copies share one " +
          r.name + " in this link; rename it in one spec (rename = " + r.name +
          "=NEW)\n";
      (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    }
}

} // namespace

std::string
applyRewritePlans(const std::vector<const v1::RewritePlan *> &plans) {
  bool compare = plans.size() > 1;
  std::vector<std::vector<rewrite::LeftAloneRecord>> leftAlone(plans.size());
  for (size_t i = 0; i < plans.size(); ++i)
    if (std::string err =
            applyRewritePlan(*plans[i], compare ? &leftAlone[i] : nullptr);
        !err.empty())
      return err;
  if (compare)
    warnSharedLeftAlone(leftAlone);
  return {};
}

std::string applyRewritePlan(const v1::RewritePlan &plan,
                             std::vector<rewrite::LeftAloneRecord> *leftAlone) {
  std::vector<std::string> targets(static_cast<size_t>(plan.inputs_size()));
  bool allCached = !plan.dir().empty();
  for (int i = 0; i < plan.inputs_size(); ++i) {
    allCached = allCached && plan.inputs(i).cached();
    if (!plan.dir().empty())
      targets[i] = rewrittenPath(plan.dir(), i);
  }
  // With `leftAlone` wanted, a plan whose inputs are all cached is scanned
  // all the same (the table says what it leaves alone).
  if (!allCached || leftAlone)
    if (std::string err = rewriteMissing(plan, targets, leftAlone);
        !err.empty())
      return err;
  for (int i = 0; i < plan.inputs_size(); ++i)
    if (std::string err = redirectReads(plan.inputs(i).path(), targets[i]);
        !err.empty())
      return err;
  return {};
}

} // namespace linkd
