// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Symbol and COMDAT rewriting of relocatable objects, bitcode and static
// archives: the library entry point.
//
//   rewrite(spec, inputs) -> the rename table and the new bytes of every
//   input, or an error. Pure: it reads only the given buffers (and, for a
//   thin archive, its member files, found through the buffer identifier),
//   writes nothing, keeps no state, never exits; safe in a forked child
//   (link-time rewriting) and from a CLI alike. Bitcode is parsed in an
//   LLVMContext private to the call. Errors are values naming the file and
//   member. Input that LLVM's ObjCopy or archive code would mishandle is
//   refused first (found by tests/fuzz/rewrite_fuzzer.cpp); LLVM's bitcode
//   reader can still crash on corrupt bitcode (docs/rewrite.md, "Fuzzing"),
//   one more reason to run link-time rewriting in the forked child. Archive
//   members are processed on every core (parallel.h).
//
// Every input is scanned first, the rename table is computed over the whole
// set (rename_table.h has the algorithm), then each input is rewritten per
// format (object_rewriter.h; archives in input_set.h). An error in any input
// fails the whole call: the table depends on every runtime input, so a
// partial result could disagree with a later, fixed run.
//
// Caching (link time): the bytes written for one input depend on the input,
// its scope and RenameTable::canonical() (the spec plus the runtime set's
// internal names). Key = (input digest, scope, digest of canonical()); the
// spec alone (RewriteSpec::canonical()) suffices only when there is no
// internal prefix.
#pragma once

#include "rewrite/rename_table.h"
#include "rewrite/rewrite_spec.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <string>
#include <vector>

namespace linkd::rewrite {

struct RewriteInput {
  Scope scope = Scope::Other;
  // Its identifier is the input's path: messages name it, the output takes
  // its file name, and a thin archive's members are found next to it.
  llvm::MemoryBufferRef buffer;
};

struct OutputFile {
  std::string relativePath; // relative to the output directory
  std::string contents;
};

struct RewriteOutput {
  std::string inputName;
  // files[0] is the rewritten input under the input's own file name. A thin
  // archive's rewritten members follow, as "<archive>.members/<member>",
  // which is also how the new thin archive refers to them.
  std::vector<OutputFile> files;
};

struct RewriteResult {
  RenameTable table; // records() only when asked for (withRecords)
  std::vector<RewriteOutput> outputs; // in input order
};

llvm::Expected<RewriteResult> rewrite(const RewriteSpec &spec,
                                      llvm::ArrayRef<RewriteInput> inputs);

// The same, writing only the inputs whose `wanted` entry is true (the others
// get an output without files): every input is still scanned, since the
// table spans the set. Link-time rewriting with some inputs cached.
llvm::Expected<RewriteResult> rewrite(const RewriteSpec &spec,
                                      llvm::ArrayRef<RewriteInput> inputs,
                                      const std::vector<bool> &wanted,
                                      bool withRecords = false);

// Just the table (scan and compute, no rewriting): for --dry-run.
llvm::Expected<RenameTable> computeTable(const RewriteSpec &spec,
                                         llvm::ArrayRef<RewriteInput> inputs);

} // namespace linkd::rewrite
