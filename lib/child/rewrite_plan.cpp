// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "child/rewrite_plan.h"

namespace linkd {

v1::RewritePlan planFromSpec(const rewrite::LinkRewriteSpec &spec) {
  v1::RewritePlan plan;
  plan.set_match(spec.spec.match);
  if (spec.spec.exportPrefix)
    plan.set_export_prefix(*spec.spec.exportPrefix);
  if (spec.spec.importPrefix)
    plan.set_import_prefix(*spec.spec.importPrefix);
  plan.set_internal_prefix(spec.spec.internalPrefix);
  for (const auto &[from, to] : spec.spec.renames)
    (*plan.mutable_renames())[from] = to;
  for (const auto &in : spec.inputs) {
    auto *i = plan.add_inputs();
    i->set_path(in.path);
    i->set_scope(
        in.scope == rewrite::Scope::Runtime  ? v1::RewritePlan::SCOPE_RUNTIME
        : in.scope == rewrite::Scope::Kernel ? v1::RewritePlan::SCOPE_KERNEL
                                             : v1::RewritePlan::SCOPE_OTHER);
  }
  return plan;
}

std::string rewrittenPath(const std::string &dir, int index) {
  return dir + "/" + std::to_string(index);
}

rewrite::RewriteSpec specFromPlan(const v1::RewritePlan &plan) {
  rewrite::RewriteSpec spec;
  spec.match = plan.match();
  if (plan.has_export_prefix())
    spec.exportPrefix = plan.export_prefix();
  if (plan.has_import_prefix())
    spec.importPrefix = plan.import_prefix();
  spec.internalPrefix = plan.internal_prefix();
  for (const auto &[from, to] : plan.renames())
    spec.renames[from] = to;
  return spec;
}

} // namespace linkd
