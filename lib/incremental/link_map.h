// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// LLD's link map (-Map) as the patcher reads it: where each input section
// of each file went. One line per output section, input section and
// symbol, each after a fixed header of VMA, LMA, size and alignment:
//              VMA              LMA     Size Align Out     In      Symbol
//             1730             1730       15    16 .text
//             1730             1730       15    16         a.o:(.text)
//             1730             1730        0     1                 f
// For a section that is not allocated the VMA is the offset in its output
// section. The patcher needs the input sections only.
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace linkd::incremental {

struct Placement {
  std::string outputSection;
  uint64_t address = 0; // VMA, or offset in a non-allocated output section
  uint64_t size = 0;
};

// A run of one file's .eh_frame records LLD placed (its live FDEs, and a
// CIE it was the first to give), as the map prints them:
// "a.o:(.eh_frame+0x14)". Adjacent records of one file come as one run.
struct EhPiece {
  uint64_t inputOffset = 0; // in the file's .eh_frame
  uint64_t address = 0;
  uint64_t size = 0;
};

class LinkMap {
public:
  // With `onlyFile`, only that file's input sections are kept: a big
  // program's map has a line for each of its hundreds of thousands of
  // sections, and a patch needs those of the objects it replaces.
  static llvm::Expected<LinkMap> parse(llvm::StringRef text,
                                       llvm::StringRef onlyFile = "");
  // Only the input sections of the files `keep` keeps (each file as the
  // map names it).
  static llvm::Expected<LinkMap>
  parse(llvm::StringRef text, llvm::function_ref<bool(llvm::StringRef)> keep);

  // Where `file`'s section `section` went (the file as the map names it:
  // the path given to the linker, `lib.a(member.o)` for an archive
  // member). Empty when the link dropped it (--gc-sections, a COMDAT group
  // another file gave); more than one when the file has several sections
  // of that name.
  std::vector<Placement> find(llvm::StringRef file,
                              llvm::StringRef section) const;

  // The placed runs of `file`'s .eh_frame, in map order (by address).
  std::vector<EhPiece> ehPieces(llvm::StringRef file) const;

  // The files with an input section in the map (kept by `onlyFile`).
  const std::set<std::string, std::less<>> &files() const { return files_; }

private:
  // "file:(section)" -> placements, in map order.
  std::map<std::string, std::vector<Placement>, std::less<>> inputs_;
  std::map<std::string, std::vector<EhPiece>, std::less<>> ehPieces_;
  std::set<std::string, std::less<>> files_;
};

} // namespace linkd::incremental
