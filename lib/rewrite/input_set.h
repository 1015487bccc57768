// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The inputs of one rewrite, loaded: each input's kind, and for an archive
// its members, every object and bitcode module scanned. It owns the parsed
// archives (whose children point into them) for the duration of a rewrite,
// and writes each input back: objects through object_rewriter.h, archives
// member by member with a rebuilt symbol table in the archive's own format
// (GNU, BSD/Darwin, COFF; thin archives stay thin, with new member files,
// and the originals are never touched). An archive's members are scanned and
// rewritten on every core (parallel.h); results and errors keep member order.
#pragma once

#include "rewrite/rewrite.h"
#include "rewrite/symbol_scan.h"

#include "llvm/Object/Archive.h"

#include <memory>
#include <optional>
#include <vector>

namespace linkd::rewrite {

class InputSet {
public:
  // Errors name every bad input (and archive member), one per line.
  static llvm::Expected<InputSet> load(llvm::ArrayRef<RewriteInput> inputs);

  // Every scanned object and bitcode module, archive members included.
  std::vector<const ScannedObject *> scannedObjects() const;

  llvm::Expected<RewriteOutput> rewriteInput(size_t index,
                                             const RenameTable &table) const;

private:
  struct Unit {
    llvm::MemoryBufferRef buffer;
    InputKind kind;
    std::optional<ScannedObject> scanned; // not for COFF import members
    std::optional<llvm::object::Archive::Child> child;
  };
  struct Loaded {
    RewriteInput input;
    InputKind kind;
    std::unique_ptr<llvm::object::Archive> archive;
    std::vector<Unit> units;
  };

  static llvm::Error loadArchive(Loaded &loaded, const std::string &name,
                                 std::vector<std::string> &errors);
  llvm::Expected<RewriteOutput> rewriteArchive(const Loaded &loaded,
                                               const RenameTable &table) const;

  std::vector<Loaded> inputs_;
};

} // namespace linkd::rewrite
