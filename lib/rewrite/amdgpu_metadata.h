// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// AMDGPU code objects' metadata note: the NT_AMDGPU_METADATA note (owner
// "AMDGPU", a msgpack map) lists every kernel under `amdhsa.kernels`, each
// naming its entry point (`.name`) and its descriptor (`.symbol`, NAME.kd),
// and for OpenCL device enqueue `.device_enqueue_symbol` and
// `.runtime_handle`. The HSA and HIP loaders find kernels through these
// strings, so a rename that misses them leaves kernels nobody can launch.
// Argument names (`.args[].name`) are not symbols and stay.
//
// Both functions read every SHT_NOTE section of a little-endian ELF64
// object; a note or msgpack document that does not parse is an error naming
// the section (the fuzzer feeds both).
#pragma once

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd::rewrite {

bool isAmdgpu(const llvm::object::ObjectFile &obj);

// Every symbol name the metadata notes hold, in order.
llvm::Expected<std::vector<std::string>>
amdgpuMetadataSymbols(const llvm::object::ELF64LEObjectFile &obj);

struct SectionUpdate {
  std::string section; // its name
  std::string contents;
};

// New contents of each note section whose metadata names a symbol that
// `rename` maps (the others are left out: unchanged). Other notes in the
// same section are copied as they are.
using SymbolRenamer =
    std::function<std::optional<std::string>(std::string_view raw)>;
llvm::Expected<std::vector<SectionUpdate>>
rewriteAmdgpuMetadata(const llvm::object::ELF64LEObjectFile &obj,
                      const SymbolRenamer &rename);

} // namespace linkd::rewrite
