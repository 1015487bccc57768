// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// libFuzzer target over lib/rewrite: the input bytes are one runtime input
// (an object, bitcode module or archive, whatever they turn out to be),
// rewritten with a fixed spec that exercises every rule: a MATCH prefix
// with an export prefix, an internal prefix (every defined external symbol
// is renamed, so every group is closed and every object really goes through
// ObjCopy or the bitcode writer) and one explicit rename. Kernel scope is
// not fuzzed: it differs only in the rename table's rules, which read no
// bytes and are covered by tests/unit/rewrite_table_test.cpp.
//
// A second call computes the table with its --dry-run records (AMDGPU
// pairings and metadata-note names). tests/fuzz/rewrite.dict holds the
// tokens of AMDGPU metadata and offload bundles.
//
// Errors are fine; crashes, aborts, sanitizer reports and leaks are not.
// Built only with -DLINKD_FUZZ=ON (tests/fuzz/CMakeLists.txt); the seed
// corpus comes from tests/fuzz/make_corpus.sh; docs/rewrite.md, "Fuzzing",
// has the commands. libLLVM is Debian's shared library: ASan intercepts its
// allocations (leaks, double frees) but does not instrument its code, so
// an out-of-bounds read inside LLVM shows up only if it faults.
#include "rewrite/rewrite.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace {

using namespace linkd::rewrite;

RewriteSpec fuzzSpec() {
  RewriteSpec spec;
  spec.match = "halide_";
  spec.exportPrefix = "rtA_";
  spec.internalPrefix = "rtAi_";
  spec.renames["main"] = "renamed_main";
  return spec;
}

// A thin archive names its members by path, which the rewriter opens: keep
// the fuzzer away from device files that never end (/dev/zero) or block.
bool touchesSpecialFiles(std::string_view data) {
  if (!data.starts_with("!<thin>\n"))
    return false;
  for (std::string_view dir : {"/dev", "/proc", "/sys", "/run"})
    if (data.find(dir) != std::string_view::npos)
      return true;
  return false;
}

void consume(llvm::Expected<RewriteResult> result) {
  if (!result) {
    llvm::consumeError(result.takeError());
    return;
  }
  // Touch every output byte so a bad size or pointer is noticed here.
  size_t sum = 0;
  for (const RewriteOutput &out : result->outputs)
    for (const OutputFile &f : out.files)
      for (char c : f.contents)
        sum += static_cast<unsigned char>(c);
  volatile size_t sink = sum;
  (void)sink;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  if (touchesSpecialFiles(bytes))
    return -1;                                // not added to the corpus
  static const RewriteSpec spec = fuzzSpec(); // immutable after first use
  llvm::MemoryBufferRef buf(llvm::StringRef(bytes.data(), bytes.size()),
                            "fuzz-input.o");

  RewriteInput runtime{Scope::Runtime, buf};
  consume(rewrite(spec, {runtime}));
  // The --dry-run / --table-out records: AMDGPU pairings and metadata names.
  if (auto table = computeTable(spec, {runtime}))
    for (const RenameRecord &r : table->records())
      (void)r.note.size();
  else
    llvm::consumeError(table.takeError());
  return 0;
}
