// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// W1: a small program that pulls in all of LLVM's targets and every LLD driver,
// linked against the static LLVM 19 and LLD archives (~130 MB output).
#include "lld/Common/Driver.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
LLD_HAS_DRIVER(elf)
LLD_HAS_DRIVER(coff)
LLD_HAS_DRIVER(mingw)
LLD_HAS_DRIVER(macho)
LLD_HAS_DRIVER(wasm)
int main(int argc, const char **argv) {
  llvm::InitializeAllTargetInfos();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmParsers();
  llvm::InitializeAllAsmPrinters();
  llvm::InitializeAllDisassemblers();
  lld::Result r = lld::lldMain(llvm::ArrayRef<const char *>(argv, argc),
                               llvm::outs(), llvm::errs(), LLD_ALL_DRIVERS);
  return r.retCode;
}
