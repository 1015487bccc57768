// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// One x86-64 ELF relocatable object as the incremental relink's check and
// patch read it: its sections with their names and bytes, its symbol
// table, and each section's relocations. Every offset and size is checked
// by LLVM's ELFFile before it is used.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Object/ELFTypes.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <set>
#include <string>
#include <vector>

namespace linkd::incremental {

using ELFT = llvm::object::ELF64LE;

struct ElfObject {
  llvm::object::ELFFile<ELFT> file;
  std::vector<ELFT::Shdr> sections;
  std::vector<std::string> names; // per section
  std::vector<llvm::ArrayRef<uint8_t>> contents;
  std::vector<ELFT::Sym> symbols;
  llvm::StringRef strtab;
  llvm::ArrayRef<uint8_t> symtabBytes;
  // Per section: its relocations and their raw bytes.
  std::vector<std::vector<ELFT::Rela>> relocs;
  std::vector<llvm::ArrayRef<uint8_t>> relocBytes;
};

// Whether `buf` is an x86-64 relocatable ELF object (the only kind either
// step reads); "" when it is, else why not, naming the file.
std::string notAnX8664Object(llvm::MemoryBufferRef buf);

// Whether object `ref` has a global symbol named one of `names`, read off
// its symbol table alone: most of a link's objects name none of the
// globals a patch asks about, and their relocations (most of them in
// debug sections) need not be read. True when it cannot tell. (A hashed
// set, made once for all of a link's objects.)
bool namesAnyGlobal(llvm::MemoryBufferRef ref, const llvm::StringSet<> &names);
llvm::StringSet<> nameSet(const std::set<std::string> &names);

// Reads an object notAnX8664Object accepted.
llvm::Expected<ElfObject> readElfObject(llvm::MemoryBufferRef buf);

// The name a relocation or a message gives symbol `s`: its own, or its
// section's for a section symbol.
std::string symbolName(const ElfObject &o, const ELFT::Sym &s);

// Whether `s` is a label of a string or constant the padder made a
// section symbol (padding.h): a section symbol with a name. LLD never
// writes it to the output's symbol table.
inline bool isLabel(const ELFT::Sym &s) {
  return s.getType() == llvm::ELF::STT_SECTION && s.st_name != 0;
}

// Whether a section is one the output carries and a patch may rewrite.
bool isPatched(const ELFT::Shdr &s, const std::string &name);

} // namespace linkd::incremental
