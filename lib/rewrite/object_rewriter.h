// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Rewriting one relocatable object or bitcode module with a computed rename
// table. ELF objects of the usual layout get a new symbol string table
// (elf_symbol_names.cpp); other objects go through LLVM ObjCopy with an
// exact rename map (one
// entry per symbol name that changes; no SymbolsPrefix, which would also hit
// undefined and STT_FILE symbols). ObjCopy renames ELF group signatures with
// their symbols (a group refers to its signature by symbol index) and COFF
// COMDAT leaders. What it does not know about is done here: COFF `.drectve`
// directives name symbols in text (directives.cpp), and bitcode is renamed
// at IR level (bitcode_rewriter.cpp).
#pragma once

#include "rewrite/rename_table.h"
#include "rewrite/symbol_scan.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <string>

namespace linkd::rewrite {

// The rewritten bytes of `buf` (`scanned` is its scan). Errors name
// scanned.file.
llvm::Expected<std::string> rewriteObject(llvm::MemoryBufferRef buf,
                                          InputKind kind,
                                          const ScannedObject &scanned,
                                          const RenameTable &table);

// ELF fast path (elf_symbol_names.cpp): `image` with every symbol whose
// name is a key of `renames` renamed, by rewriting the symbol string table
// alone; nullopt when the layout is not the simple checked one (then ObjCopy
// does it).
std::optional<std::string>
renameElfSymbols(llvm::StringRef image,
                 const llvm::StringMap<std::string> &renames);

llvm::Expected<std::string> rewriteBitcode(llvm::MemoryBufferRef buf,
                                           const ScannedObject &scanned,
                                           const RenameTable &table);

// COFF linker directives with every symbol name mapped through `rename`;
// nullopt when nothing changes. Handles /EXPORT: (and -export:),
// /INCLUDE:, /ALTERNATENAME:X=Y, quoted or not.
std::optional<std::string> rewriteDirectives(
    std::string_view text,
    const std::function<std::optional<std::string>(std::string_view)> &rename);

} // namespace linkd::rewrite
