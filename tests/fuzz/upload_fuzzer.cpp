// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// libFuzzer target over a farm node's blob uploads (upload_sequence.h): any
// sequence of claims, chunks at any offsets, commits, releases and whole
// stores leaves only blobs that hash to their names. The unit test
// BlobStore.RandomUploadSequencesKeepTheInvariant runs the same driver on
// random sequences in CI; this target searches further.
#include "tests/fuzz/upload_sequence.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const linkd::upload_sequence::Contents contents =
      linkd::upload_sequence::makeContents();
  std::string root = "/tmp/linkd-upload-fuzz";
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  linkd::BlobStore store(root, 64 << 20);
  if (!store.open().empty())
    return 0;
  std::string bad = linkd::upload_sequence::run(
      store, contents,
      std::string_view(reinterpret_cast<const char *>(data), size));
  if (!bad.empty()) {
    std::fprintf(stderr, "upload_fuzzer: %s\n", bad.c_str());
    std::abort();
  }
  return 0;
}
