// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Reading an object file or a bitcode module into the plain description the
// rename table is computed from (rename_table.h): its external symbols,
// defined or not, and its COMDAT groups with the external symbols defined
// in each (ELF SHT_GROUP, COFF COMDAT sections together with the
// associative sections that follow them, IR comdats).
#pragma once

#include "rewrite/rename_table.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

namespace linkd::rewrite {

// What an input (or archive member) is, from its magic bytes.
enum class InputKind { Elf, Coff, MachO, Bitcode, Archive, CoffImport };

// The kind, or an error naming `displayName`: shared libraries and
// executables are refused, unknown formats too.
llvm::Expected<InputKind> classify(llvm::MemoryBufferRef buf,
                                   llvm::StringRef displayName);

llvm::Expected<ScannedObject> scanObject(llvm::MemoryBufferRef buf,
                                         InputKind kind,
                                         const std::string &displayName,
                                         Scope scope);

} // namespace linkd::rewrite
