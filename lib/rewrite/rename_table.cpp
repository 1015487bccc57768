// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Computing the rename table over an input set (see rename_table.h).
#include "rewrite/rename_table.h"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace linkd::rewrite {
namespace {

// The AMDGPU names of runtime inputs that a loader looks up, by role.
// Only runtime inputs count: the table (and the link-time cache key) is a
// function of the spec and the runtime set.
void loaderNames(const std::vector<const ScannedObject *> &objs,
                 RenameTable::NameSet &exportOnly,
                 RenameTable::NameSet &explicitOnly) {
  for (const ScannedObject *obj : objs) {
    if (obj->scope != Scope::Runtime)
      continue;
    for (const ScannedSymbol &sym : obj->symbols) {
      if (sym.role == SymbolRole::Plain)
        continue;
      std::string base = parseName(obj->style, sym.name).base;
      (sym.role == SymbolRole::Slot ? explicitOnly : exportOnly).insert(base);
    }
  }
}

// MATCH names of runtime definitions that only an explicit rename reaches
// and none does (see LeftAloneRecord).
std::vector<LeftAloneRecord>
leftAloneNames(const RewriteSpec &spec,
               const std::vector<const ScannedObject *> &objs,
               const RenameTable::NameSet &explicitOnly) {
  std::vector<LeftAloneRecord> out;
  if (spec.match.empty())
    return out;
  for (const ScannedObject *obj : objs) {
    if (obj->scope != Scope::Runtime)
      continue;
    for (const ScannedSymbol &sym : obj->symbols) {
      if (!sym.defined || sym.role != SymbolRole::Slot)
        continue;
      std::string base = parseName(obj->style, sym.name).base;
      if (base.starts_with(spec.match) && explicitOnly.count(base) &&
          !spec.renames.count(base))
        out.push_back({sym.name, obj->scope, obj->file, sym.weak});
    }
  }
  return out;
}

// The internal set, step 1.
RenameTable::NameSet
runtimeDefinitions(const RewriteSpec &spec,
                   const std::vector<const ScannedObject *> &objs,
                   const RenameTable &table) {
  RenameTable::NameSet out;
  for (const ScannedObject *o : objs) {
    const ScannedObject &obj = *o;
    if (obj.scope != Scope::Runtime)
      continue;
    for (const ScannedSymbol &sym : obj.symbols) {
      if (!sym.defined)
        continue;
      NameForm form = parseName(obj.style, sym.name);
      if (form.base.empty() || form.derived)
        continue;
      if (!spec.match.empty() && form.base.starts_with(spec.match))
        continue;
      if (spec.renames.count(form.base) || isDeviceAbiName(form.base) ||
          table.exportOnlyNames().count(form.base) ||
          table.explicitOnlyNames().count(form.base))
        continue;
      out.insert(form.base);
    }
  }
  return out;
}

} // namespace

std::string LeftAloneRecord::why() const {
  return weak ? "left alone: a weak loader slot matched by --match (explicit "
                "--rename only); rewritten copies linked into one code object "
                "share it"
              : "left alone: a loader slot matched by --match (explicit "
                "--rename only)";
}

const char *scopeName(Scope scope) {
  switch (scope) {
  case Scope::Runtime:
    return "runtime";
  case Scope::Kernel:
    return "kernel";
  case Scope::Other:
    return "explicit";
  }
  return "?";
}

std::optional<std::string>
RenameTable::renameBase(Scope scope, std::string_view base) const {
  if (base.empty() || isDeviceAbiName(base))
    return std::nullopt;
  if (!spec_.renames.empty())
    if (auto it = spec_.renames.find(std::string(base));
        it != spec_.renames.end())
      return it->second;
  if (!explicitOnly_.empty() && explicitOnly_.count(base))
    return std::nullopt;
  if (scope != Scope::Other && !spec_.match.empty() &&
      base.starts_with(spec_.match)) {
    std::string prefix = scope == Scope::Runtime
                             ? spec_.exportPrefix.value_or(spec_.match)
                             : spec_.effectiveImportPrefix();
    // Without a different prefix a MATCH name stays, unless step 2 put it
    // into `internal` (it keys a group whose members are renamed).
    if (prefix != spec_.match)
      return prefix + std::string(base.substr(spec_.match.size()));
  }
  if (scope != Scope::Other && internal_.count(base))
    return spec_.internalPrefix + std::string(base);
  return std::nullopt;
}

std::optional<std::string> RenameTable::rename(Scope scope, NameStyle style,
                                               std::string_view raw) const {
  return mapName(style, raw, [&](std::string_view base) {
    return renameBase(scope, base);
  });
}

std::string RenameTable::canonical() const {
  std::string out = spec_.canonical();
  appendSorted(out, "internal ", internal_);
  appendSorted(out, "export-only ", exportOnly_);
  appendSorted(out, "explicit-only ", explicitOnly_);
  return out;
}

void RenameTable::appendSorted(std::string &out, const char *tag,
                               const NameSet &names) {
  std::vector<const std::string *> sorted;
  for (const std::string &name : names)
    sorted.push_back(&name);
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string *a, const std::string *b) { return *a < *b; });
  for (const std::string *p : sorted) {
    const std::string &name = *p;
    out += tag;
    out += std::to_string(name.size());
    out += ':';
    out += name;
    out += '\n';
  }
}

namespace {

struct Builder {
  RenameTable &table;
  const RewriteSpec &spec;
  const std::vector<const ScannedObject *> &objects;
  RenameTable::NameSet &internal;
  std::vector<std::string> &errors;

  bool renamed(const ScannedObject &obj, const std::string &raw) const {
    return table.rename(obj.scope, obj.style, raw).has_value();
  }

  // Step 2: one pass; true if it added names.
  bool closeGroups() {
    bool grew = false;
    for (const ScannedObject *obj : objects)
      for (const ScannedGroup &group : obj->groups)
        grew |= closeGroup(*obj, group);
    return grew;
  }

  bool closeGroup(const ScannedObject &obj, const ScannedGroup &group) {
    std::vector<std::string> all = group.members;
    if (group.keyIsSymbol)
      all.push_back(group.key);
    bool any = false;
    for (const std::string &raw : all)
      any |= renamed(obj, raw);
    if (!any)
      return false;
    if (!group.keyIsSymbol) {
      errors.push_back(obj.file + ": group '" + group.key +
                       "' is keyed by a section, not a symbol, and holds a "
                       "renamed symbol; it cannot be renamed consistently");
      return false;
    }
    bool grew = false;
    for (const std::string &raw : all) {
      if (renamed(obj, raw))
        continue;
      NameForm form = parseName(obj.style, raw);
      if (form.base.empty() || form.derived || spec.internalPrefix.empty() ||
          isDeviceAbiName(form.base) ||
          table.exportOnlyNames().count(form.base) ||
          table.explicitOnlyNames().count(form.base)) {
        errors.push_back(
            obj.file + ": '" + raw + "' is defined in COMDAT group '" +
            group.key +
            "' with renamed symbols but is not renamed "
            "itself; add a --rename for it or an --internal-prefix");
        continue;
      }
      grew |= internal.insert(form.base).second;
    }
    return grew;
  }

  // Step 4 plus the dry-run records. Most new names are defined once: the
  // first definition of each is kept in a flat map keyed by views; only
  // names defined twice collect all their definitions for checkOne().
  void collectAndCheck(std::vector<RenameRecord> *records) {
    struct Def {
      const std::string *oldName, *file; // into `objects`
      bool renamed;
    };
    std::deque<std::string> newNames; // stable storage for the keys
    std::unordered_map<std::string_view, Def> first;
    std::map<std::string, std::vector<Def>> shared; // sorted: report order
    for (const ScannedObject *o : objects) {
      const ScannedObject &obj = *o;
      std::unordered_set<std::string_view> seen;
      if (records)
        metadataRecords(obj, *records);
      for (const ScannedSymbol &sym : obj.symbols) {
        auto to = table.rename(obj.scope, obj.style, sym.name);
        if (records && to && seen.insert(sym.name).second)
          records->push_back(
              {sym.name, *to, obj.scope, obj.file, pairing(obj, sym)});
        if (!sym.defined)
          continue;
        bool renamed = to.has_value();
        std::string_view key =
            renamed ? std::string_view(newNames.emplace_back(std::move(*to)))
                    : std::string_view(sym.name);
        Def def{&sym.name, &obj.file, renamed};
        auto [it, fresh] = first.try_emplace(key, def);
        if (fresh)
          continue;
        auto &defs = shared[std::string(key)];
        if (defs.empty())
          defs.push_back(it->second);
        defs.push_back(def);
      }
    }
    for (const auto &[newName, defs] : shared)
      checkOne(newName, defs);
  }

  // The --dry-run note on an AMDGPU symbol: what it is renamed together
  // with, and why the loader cares.
  static std::string pairing(const ScannedObject &obj,
                             const ScannedSymbol &sym) {
    if (obj.style != NameStyle::Amdgpu && obj.style != NameStyle::IrAmdgpu)
      return {};
    std::string_view raw = sym.name;
    std::string base(amdgpuBase(raw));
    auto has = [&](const std::string &name) {
      for (const ScannedSymbol &s : obj.symbols)
        if (s.name == name)
          return true;
      return false;
    };
    if (raw.ends_with(".kd") && raw.size() > base.size())
      return "descriptor of kernel " + base;
    if (raw.ends_with(".managed") && raw.size() > base.size())
      return "managed value of " + base;
    if (sym.role == SymbolRole::Kernel)
      return "kernel entry point, with " + base + ".kd";
    if (has(base + ".managed"))
      return "managed variable, with " + base + ".managed";
    if (sym.role == SymbolRole::Slot)
      return "loader slot (explicit rename)";
    if (sym.role == SymbolRole::Export)
      return "exported from the code object";
    return {};
  }

  // The metadata note's names that change (AMDGPU).
  void metadataRecords(const ScannedObject &obj,
                       std::vector<RenameRecord> &records) const {
    for (const std::string &name : obj.metadataSymbols)
      if (auto to = table.rename(obj.scope, obj.style, name))
        records.push_back({name, *to, obj.scope, obj.file,
                           std::string_view(name).ends_with(".kd")
                               ? "NT_AMDGPU_METADATA .symbol"
                               : "NT_AMDGPU_METADATA .name"});
  }

  template <class Defs>
  void checkOne(const std::string &newName, const Defs &defs) {
    for (const auto &a : defs) {
      if (!a.renamed)
        continue;
      for (const auto &b : defs)
        if (*b.oldName != *a.oldName) {
          errors.push_back(
              "renaming '" + *a.oldName + "' (" + *a.file + ") to '" + newName +
              "' collides with '" + *b.oldName + "' (" + *b.file + ")" +
              (b.renamed ? " renamed to the same name" : ", already defined"));
          return;
        }
    }
  }
};

} // namespace

RenameTable::Built
RenameTable::build(const RewriteSpec &spec,
                   const std::vector<ScannedObject> &objects) {
  std::vector<const ScannedObject *> pointers;
  for (const ScannedObject &obj : objects)
    pointers.push_back(&obj);
  return build(spec, pointers, /*withRecords=*/true);
}

RenameTable::Built
RenameTable::build(const RewriteSpec &spec,
                   const std::vector<const ScannedObject *> &objects,
                   bool withRecords) {
  Built out;
  out.table.spec_ = spec;
  loaderNames(objects, out.table.exportOnly_, out.table.explicitOnly_);
  out.table.leftAlone_ = leftAloneNames(spec, objects, out.table.explicitOnly_);
  if (!spec.internalPrefix.empty())
    out.table.internal_ = runtimeDefinitions(spec, objects, out.table);
  Builder b{out.table, spec, objects, out.table.internal_, out.errors};
  // Each pass either adds a name or ends; names are finite.
  while (b.closeGroups() && out.errors.empty()) {
  }
  if (out.errors.empty())
    b.collectAndCheck(withRecords ? &out.table.records_ : nullptr);
  return out;
}

} // namespace linkd::rewrite
