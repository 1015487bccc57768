// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// LLVM bitcode (LTO objects and archive members) renamed at IR level: every
// global value the table renames, and every comdat re-keyed to its new name
// with the same selection kind. Bitcode is never passed through unrenamed:
// the linker would compile it later with the old names and the two runtime
// copies would merge at LTO time.
//
// Renames happen in two phases (first to unique temporaries, then to the
// final names), so that A->B together with B->C works in one module; a
// final name already taken in the module is an error, because Module
// would otherwise silently pick a different name.
#include "rewrite/errors.h"
#include "rewrite/object_rewriter.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace linkd::rewrite {

using namespace llvm;

namespace {

Error renameValues(Module &mod, const ScannedObject &scanned,
                   const RenameTable &table) {
  std::vector<std::pair<GlobalValue *, std::string>> todo;
  for (GlobalValue &gv : mod.global_values())
    if (gv.hasName())
      if (auto to = table.rename(scanned.scope, scanned.style, gv.getName()))
        todo.emplace_back(&gv, *to);
  for (size_t i = 0; i < todo.size(); ++i)
    todo[i].first->setName("linkd.rewrite.tmp." + Twine(i));
  for (auto &[gv, to] : todo) {
    gv->setName(to);
    if (gv->getName() != to)
      return fail(scanned.file, "renaming to '" + to +
                                    "' collides with a global of that name "
                                    "in the module");
  }
  return Error::success();
}

void rekeyComdats(Module &mod, const ScannedObject &scanned,
                  const RenameTable &table) {
  for (GlobalObject &go : mod.global_objects()) {
    Comdat *c = go.getComdat();
    if (!c)
      continue;
    auto to = table.rename(scanned.scope, scanned.style, c->getName());
    if (!to)
      continue;
    Comdat *renamed = mod.getOrInsertComdat(*to);
    renamed->setSelectionKind(c->getSelectionKind());
    go.setComdat(renamed);
  }
}

} // namespace

Expected<std::string> rewriteBitcode(MemoryBufferRef buf,
                                     const ScannedObject &scanned,
                                     const RenameTable &table) {
  LLVMContext ctx;
  Expected<std::unique_ptr<Module>> mod = parseBitcodeFile(buf, ctx);
  if (!mod)
    return fail(scanned.file, toString(mod.takeError()));
  // Comdat names are looked up before the values move: a comdat keyed by a
  // renamed value keeps its old name until re-keyed.
  rekeyComdats(**mod, scanned, table);
  if (Error e = renameValues(**mod, scanned, table))
    return std::move(e);
  std::string out;
  raw_string_ostream os(out);
  WriteBitcodeToFile(**mod, os);
  os.flush();
  return out;
}

} // namespace linkd::rewrite
