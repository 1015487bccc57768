// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Corrupt copies of a 64-bit ELF object for the readers that must refuse
// them rather than read outside the bytes: every byte of the ELF header and
// of the section header table set to a few values that stretch offsets,
// sizes and counts.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace linkd::testing {

template <class Fn>
void forEachHeaderCorruption(const std::string &image, Fn fn) {
  uint64_t shoff = 0;
  if (image.size() >= 0x30)
    std::memcpy(&shoff, image.data() + 0x28, sizeof shoff);
  auto corrupt = [&](size_t at) {
    for (unsigned char v : {0x00, 0x01, 0x7f, 0xff}) {
      std::string bad = image;
      bad[at] = static_cast<char>(v);
      fn(bad);
    }
  };
  for (size_t i = 0; i < 64 && i < image.size(); ++i)
    corrupt(i);
  for (size_t i = shoff; i < image.size(); ++i)
    corrupt(i);
}

} // namespace linkd::testing
