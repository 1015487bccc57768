// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The loader's interposition across an ELF closure (modelInterposition in
// module_reader.h): which private copies of state are never reached because
// every accessor of theirs binds to an earlier module's.

#include "daemon/linkd-lld/audit/format_readers.h"

#include <set>
#include <string>
#include <vector>

namespace linkd::audit {

namespace {

// The first module before `before` whose exports bind `func`, or SIZE_MAX.
size_t firstExporter(const std::vector<ModuleInfo *> &mods, size_t before,
                     const std::string &func) {
  for (size_t k = 0; k < before; ++k)
    if (mods[k]->format == "ELF" && mods[k]->exportedFuncs.count(func))
      return k;
  return SIZE_MAX;
}

// The earliest module before `m` with a copy of `d` (same name, same source
// file where both know it), or SIZE_MAX.
size_t earlierCopy(const std::vector<ModuleInfo *> &mods, size_t m,
                   const StateDef &d) {
  for (size_t n = 0; n < m; ++n) {
    if (mods[n]->format != "ELF")
      continue;
    for (const StateDef &o : mods[n]->defs)
      if (o.display == d.display && (o.fileStem.empty() || d.fileStem.empty() ||
                                     o.fileStem == d.fileStem))
        return n;
  }
  return SIZE_MAX;
}

// The functions through which module `m` reaches its copy of `d`: those it
// shares with module `n` (the same objects linked into both) and its own of
// the same runtime.
std::set<std::string> accessorsOf(const ModuleInfo &m, const ModuleInfo &n,
                                  const StateDef &d) {
  std::set<std::string> out;
  std::string rt = runtimeOf(d.display);
  for (const std::string &f : m.definedFuncs)
    if (n.definedFuncs.count(f) || runtimeOf(demangled(f)) == rt)
      out.insert(f);
  return out;
}

// Why `d` of `m` is never reached, or empty: every accessor is interposable
// and an earlier module's export binds it.
std::string boundElsewhere(const std::vector<ModuleInfo *> &mods, size_t m,
                           const std::set<std::string> &accessors) {
  if (accessors.empty() || mods[m]->symbolic || mods[m]->executable)
    return {};
  std::set<size_t> binders;
  for (const std::string &f : accessors) {
    size_t k = firstExporter(mods, m, f);
    if (!mods[m]->interposableFuncs.count(f) || k == SIZE_MAX)
      return {};
    binders.insert(k);
  }
  std::string names, whose;
  size_t shown = 0;
  for (const std::string &f : accessors)
    if (shown++ < 4)
      names += std::string(names.empty() ? "" : ", ") + demangled(f);
  if (accessors.size() > 4)
    names += ", ...";
  for (size_t k : binders)
    whose += std::string(whose.empty() ? "" : ", ") + mods[k]->path + "'s";
  return "never reached: its accessors (" + names +
         ") are exported and interposable, and the loader binds them to " +
         whose;
}

} // namespace

void modelInterposition(std::vector<ModuleInfo *> &mods) {
  auto firstStateExporter = [&](const StateDef &d) {
    for (size_t k = 0; k < mods.size(); ++k)
      if (mods[k]->format == "ELF" && (mods[k]->exportedState.count(d.name) ||
                                       mods[k]->exportedState.count(d.display)))
        return k;
    return SIZE_MAX;
  };
  for (size_t m = 0; m < mods.size(); ++m) {
    if (mods[m]->format != "ELF")
      continue;
    for (StateDef &d : mods[m]->defs) {
      size_t k = firstStateExporter(d);
      // An exported copy kept for the module's own references (-Bsymbolic,
      // protected) is the one the loader binds the others to when this
      // module exports it first: one copy, not two.
      if (!d.shared && k == m && !mods[m]->executable) {
        d.shared = true;
        d.why += "; exported first in the search order, so it is also the "
                 "copy the loader binds the other modules to";
        d.fileStem.clear(); // one copy for everyone: pairs by name alone
        continue;
      }
      if (d.shared) {
        // Say whose copy the loader binds: the first module exporting it.
        if (k != SIZE_MAX)
          d.why += k == m ? " (this module's copy)"
                          : " (" + mods[k]->path + "'s copy)";
        continue;
      }
      size_t n = earlierCopy(mods, m, d);
      if (n == SIZE_MAX)
        continue;
      std::string why =
          boundElsewhere(mods, m, accessorsOf(*mods[m], *mods[n], d));
      if (!why.empty()) {
        d.interposed = true;
        d.why = why;
      }
    }
  }
}

} // namespace linkd::audit
