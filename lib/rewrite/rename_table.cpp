// Computing the rename table over an input set (see rename_table.h).
#include "rewrite/rename_table.h"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace linkd::rewrite {
namespace {

// The internal set, step 1.
RenameTable::NameSet
runtimeDefinitions(const RewriteSpec &spec,
                   const std::vector<const ScannedObject *> &objs) {
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
      if (spec.renames.count(form.base))
        continue;
      out.insert(form.base);
    }
  }
  return out;
}

} // namespace

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
  if (base.empty())
    return std::nullopt;
  if (!spec_.renames.empty())
    if (auto it = spec_.renames.find(std::string(base));
        it != spec_.renames.end())
      return it->second;
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
  std::vector<const std::string *> sorted;
  for (const std::string &name : internal_)
    sorted.push_back(&name);
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string *a, const std::string *b) { return *a < *b; });
  for (const std::string *p : sorted) {
    const std::string &name = *p;
    out += "internal ";
    out += std::to_string(name.size());
    out += ':';
    out += name;
    out += '\n';
  }
  return out;
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
      if (form.base.empty() || form.derived || spec.internalPrefix.empty()) {
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
      for (const ScannedSymbol &sym : obj.symbols) {
        auto to = table.rename(obj.scope, obj.style, sym.name);
        if (records && to && seen.insert(sym.name).second)
          records->push_back({sym.name, *to, obj.scope, obj.file});
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
  if (!spec.internalPrefix.empty())
    out.table.internal_ = runtimeDefinitions(spec, objects);
  Builder b{out.table, spec, objects, out.table.internal_, out.errors};
  // Each pass either adds a name or ends; names are finite.
  while (b.closeGroups() && out.errors.empty()) {
  }
  if (out.errors.empty())
    b.collectAndCheck(withRecords ? &out.table.records_ : nullptr);
  return out;
}

} // namespace linkd::rewrite
