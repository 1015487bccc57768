// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/bitcode_probe.h"

#include "llvm/LTO/LTO.h"

#include <atomic>
#include <dlfcn.h>

namespace {

// Set from LLD's threads too (archive members are parsed in parallel).
std::atomic<bool> gSawBitcode{false};

using CreateFn = llvm::Expected<std::unique_ptr<llvm::lto::InputFile>> (*)(
    llvm::MemoryBufferRef);

CreateFn libLlvmCreate() {
  static CreateFn fn = reinterpret_cast<CreateFn>(dlsym(
      RTLD_NEXT, "_ZN4llvm3lto9InputFile6createENS_15MemoryBufferRefE"));
  return fn;
}

} // namespace

namespace linkd {

bool sawBitcode() { return gSawBitcode.load(); }

} // namespace linkd

llvm::Expected<std::unique_ptr<llvm::lto::InputFile>>
llvm::lto::InputFile::create(llvm::MemoryBufferRef object) {
  gSawBitcode.store(true);
  return libLlvmCreate()(object);
}
