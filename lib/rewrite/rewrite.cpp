// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The rewrite pipeline: load and scan every input, compute the table over
// the set, rewrite each input (see rewrite.h).
#include "rewrite/rewrite.h"
#include "rewrite/errors.h"

#include "rewrite/input_set.h"

#include "llvm/Support/Path.h"

#include <set>

namespace linkd::rewrite {

using namespace llvm;

namespace {

Error checkOutputNames(ArrayRef<RewriteInput> inputs) {
  std::set<std::string> seen;
  for (const RewriteInput &in : inputs) {
    std::string name =
        sys::path::filename(in.buffer.getBufferIdentifier()).str();
    if (!seen.insert(name).second)
      return createStringError(inconvertibleErrorCode(),
                               in.buffer.getBufferIdentifier() +
                                   ": another input has the same file name '" +
                                   name +
                                   "'; outputs would overwrite each other");
  }
  return Error::success();
}

Expected<RenameTable> tableFor(const RewriteSpec &spec, const InputSet &set,
                               bool withRecords) {
  if (std::string err = validate(spec); !err.empty())
    return createStringError(inconvertibleErrorCode(), err);
  RenameTable::Built built =
      RenameTable::build(spec, set.scannedObjects(), withRecords);
  if (!built.errors.empty())
    return joined(built.errors);
  return std::move(built.table);
}

} // namespace

Expected<RenameTable> computeTable(const RewriteSpec &spec,
                                   ArrayRef<RewriteInput> inputs) {
  Expected<InputSet> set = InputSet::load(inputs);
  if (!set)
    return set.takeError();
  return tableFor(spec, *set, /*withRecords=*/true);
}

Expected<RewriteResult> rewrite(const RewriteSpec &spec,
                                ArrayRef<RewriteInput> inputs) {
  return rewrite(spec, inputs, std::vector<bool>(inputs.size(), true));
}

Expected<RewriteResult> rewrite(const RewriteSpec &spec,
                                ArrayRef<RewriteInput> inputs,
                                const std::vector<bool> &wanted,
                                bool withRecords) {
  if (Error e = checkOutputNames(inputs))
    return std::move(e);
  Expected<InputSet> set = InputSet::load(inputs);
  if (!set)
    return set.takeError();
  Expected<RenameTable> table = tableFor(spec, *set, withRecords);
  if (!table)
    return table.takeError();
  RewriteResult result{std::move(*table), {}};
  std::vector<std::string> errors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i < wanted.size() && !wanted[i]) {
      result.outputs.push_back(
          {inputs[i].buffer.getBufferIdentifier().str(), {}});
      continue;
    }
    Expected<RewriteOutput> out = set->rewriteInput(i, result.table);
    if (!out)
      errors.push_back(toString(out.takeError()));
    else
      result.outputs.push_back(std::move(*out));
  }
  if (!errors.empty())
    return joined(errors);
  return std::move(result);
}

} // namespace linkd::rewrite
