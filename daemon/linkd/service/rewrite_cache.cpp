// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/service/rewrite_cache.h"

#include "child/rewrite_plan.h"
#include "util/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace linkd {
namespace {

constexpr const char *kRewriteNs = "rewrite-object";

Digest objectKey(const v1::RewritePlan &plan, const std::string &specCanonical,
                 const std::vector<Digest> &digests, int index) {
  std::vector<Digest> runtime;
  for (int i = 0; i < plan.inputs_size(); ++i)
    if (plan.inputs(i).scope() == v1::RewritePlan::SCOPE_RUNTIME)
      runtime.push_back(digests[i]);
  std::sort(runtime.begin(), runtime.end());
  Sha256 h;
  h.field("linkd-rewrite-object 1").field(specCanonical);
  h.field(std::to_string(plan.inputs(index).scope()));
  h.field(digests[index].raw());
  for (const Digest &d : runtime)
    h.field(d.raw());
  return h.finish();
}

} // namespace

PreparedRewrite &PreparedRewrite::operator=(PreparedRewrite &&other) noexcept {
  if (this == &other)
    return *this;
  removeDir(); // one this object had
  plan = std::move(other.plan);
  dependsOn = std::move(other.dependsOn);
  keys = std::move(other.keys);
  cachedInputs = other.cachedInputs;
  dir = std::exchange(other.dir, {}); // only one of them removes it
  return *this;
}

PreparedRewrite::~PreparedRewrite() { removeDir(); }

void PreparedRewrite::removeDir() {
  if (!dir.empty()) {
    removeTree(dir);
    dir.clear();
  }
}

std::optional<PreparedRewrite>
prepareRewrite(const std::string &specPath, const std::string &cwd,
               LocalStore *store, StatCache *stats, const std::string &workDir,
               std::string *error) {
  auto spec = rewrite::loadLinkRewriteSpec(specPath, cwd, error);
  if (!spec)
    return std::nullopt;
  PreparedRewrite out;
  out.plan = planFromSpec(*spec);
  out.dependsOn = spec->specFiles;
  for (const auto &in : spec->inputs)
    out.dependsOn.push_back(in.path);
  if (!store || !stats)
    return out;

  std::vector<Digest> digests;
  for (const auto &in : spec->inputs) {
    auto st = stats->lookup(in.path);
    if (!st || !st->exists || st->isDirectory) {
      *error = in.path + ": cannot read the input named in " + specPath;
      return std::nullopt;
    }
    digests.push_back(st->digest);
  }
  std::string tmpl = workDir + "/rewrite.XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    *error = "cannot create a directory in " + workDir;
    return std::nullopt;
  }
  out.dir = tmpl;
  out.plan.set_dir(out.dir);
  std::string canonical = spec->spec.canonical();
  for (int i = 0; i < out.plan.inputs_size(); ++i) {
    out.keys.push_back(objectKey(out.plan, canonical, digests, i));
    std::string value;
    if (store->getAction(kRewriteNs, out.keys.back(), value) != Lookup::Hit)
      continue;
    auto blob = Digest::fromRaw(value);
    std::string err;
    if (blob && store->materializeBlob(*blob, rewrittenPath(out.dir, i), 0600,
                                       &err) == Lookup::Hit) {
      out.plan.mutable_inputs(i)->set_cached(true);
      ++out.cachedInputs;
    }
  }
  return out;
}

int storeRewritten(const PreparedRewrite &prepared, LocalStore &store) {
  int stored = 0;
  for (int i = 0; i < prepared.plan.inputs_size(); ++i) {
    if (prepared.plan.inputs(i).cached() ||
        i >= static_cast<int>(prepared.keys.size()))
      continue;
    std::string path = rewrittenPath(prepared.plan.dir(), i);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    Digest d;
    bool ok =
        fd >= 0 && fstat(fd, &st) == 0 &&
        store.putBlobFromFile(fd, static_cast<uint64_t>(st.st_size), &d) &&
        store.putAction(kRewriteNs, prepared.keys[i], d.raw());
    if (fd >= 0)
      ::close(fd);
    stored += ok ? 1 : 0;
  }
  return stored;
}

} // namespace linkd
