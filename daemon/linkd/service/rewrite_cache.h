// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Link-time rewriting, the daemon's half: parses the spec of a link that
// asks for `--linkd-rewrite=FILE`, finds each input's rewritten form in the
// store, and puts the ones it has where the link child will look
// (link_rewrite.h); after the link, stores the ones the child produced.
//
// Key of one rewritten input (action namespace "rewrite-object"): the
// spec's canonical form, the input's scope and content digest, and the
// content digests of the whole runtime set — the rename table is a function
// of the spec and the runtime set (rename_table.h). Kernels are not part of
// a runtime's key, so a relink after a kernel changed still finds the
// runtime. When any input is missing the child scans every input (the table
// spans the runtime set), rewrites only the missing ones, and the daemon
// stores them. Digests come from the stat cache: an unchanged runtime
// costs a stat per file, not a read.
#pragma once

#include "cache/stat_cache.h"
#include "digest/digest.h"
#include "linkd/v1/linkd.pb.h"
#include "store/local_store.h"

#include <optional>
#include <string>
#include <vector>

namespace linkd {

class PreparedRewrite {
public:
  PreparedRewrite() = default;
  PreparedRewrite(PreparedRewrite &&other) noexcept {
    *this = std::move(other);
  }
  PreparedRewrite &operator=(PreparedRewrite &&other) noexcept;
  ~PreparedRewrite();

  v1::RewritePlan plan;
  // The spec file, the rename files it names and the inputs: what the link
  // depends on beyond what LLD reads (for the link cache's manifest).
  std::vector<std::string> dependsOn;
  std::vector<Digest> keys; // per input; empty without a store
  int cachedInputs = 0;

private:
  friend std::optional<PreparedRewrite>
  prepareRewrite(const std::string &specPath, const std::string &cwd,
                 LocalStore *store, StatCache *stats,
                 const std::string &workDir, std::string *error);
  void removeDir();
  std::string dir; // removed with its content by the destructor
};

// `store`/`stats` null: no caching, the child rewrites in memory.
// `workDir`: a private directory under which a per-link directory is made.
std::optional<PreparedRewrite>
prepareRewrite(const std::string &specPath, const std::string &cwd,
               LocalStore *store, StatCache *stats, const std::string &workDir,
               std::string *error);

// After a successful link: stores each rewritten input that was not cached.
// Returns how many were stored.
int storeRewritten(const PreparedRewrite &prepared, LocalStore &store);

} // namespace linkd
