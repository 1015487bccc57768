// Rewriting one relocatable object or bitcode module with a computed rename
// table. Object files go through LLVM ObjCopy with an exact rename map (one
// entry per symbol name that changes; no SymbolsPrefix, which would also hit
// undefined and STT_FILE symbols). ObjCopy renames ELF group signatures with
// their symbols (a group refers to its signature by symbol index) and COFF
// COMDAT leaders. What it does not know about is done here: COFF `.drectve`
// directives name symbols in text (directives.cpp), and bitcode is renamed
// at IR level (bitcode_rewriter.cpp).
#pragma once

#include "rewrite/rename_table.h"
#include "rewrite/symbol_scan.h"

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
