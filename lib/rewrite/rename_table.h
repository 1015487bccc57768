// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The rename table: computed once over the whole input set, before any file
// is rewritten, so that every file agrees on every name.
//
// Algorithm:
//  1. internal = C-level names of external symbols (global, weak, common,
//     COMDAT) defined by runtime inputs, minus MATCH-prefixed names and
//     explicit renames. Derived COFF forms (`.refptr.X`, `__imp_X`,
//     `.weak.X.default.Y`) do not define X. Minus, too, the names a GPU
//     loader looks up (AMDGPU kernels, exports and slots of runtime inputs)
//     and device-library ABI names (`__oclc_*`, ...), which no rule renames.
//  2. Groups (ELF SHT_GROUP, COFF COMDAT sections with their associative
//     sections, IR comdats): if any symbol defined in a group is renamed,
//     every symbol defined in it must be, or two copies end up sharing a
//     group key or a guard variable (see lld-library-facts.md, "COMDAT
//     traps"). Unrenamed members join `internal`; repeat to a fixpoint.
//  3. A name maps by the first rule that applies: explicit rename; MATCH
//     prefix -> export (runtime) / import (kernel) prefix; in `internal` ->
//     internal prefix + name. Undefined symbols that no runtime input
//     defines (libc, libstdc++) match no rule and are left alone.
//  4. Collisions: two different old names with the same new name, where at
//     least one of them was renamed and both are defined, is an error naming
//     both symbols and files.
// No LLVM here: the input is a plain description of each file's symbols.
#pragma once

#include "rewrite/rewrite_spec.h"
#include "rewrite/symbol_names.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace linkd::rewrite {

enum class Scope { Runtime, Kernel, Other };
const char *scopeName(Scope scope);

// What a symbol of an AMDGPU code object is to the loader, which finds
// symbols by name (docs/rewrite.md, "AMDGPU").
enum class SymbolRole {
  Plain,
  // A kernel: its entry point NAME or its descriptor NAME.kd.
  Kernel,
  // Another symbol the code object exports (not hidden): managed pairs,
  // constants. Like kernels, renamed by the export rule or an explicit
  // rename, never by the internal prefix.
  Export,
  // A named writable global a loader patches by name (GPUCompiler's
  // relocation slots, HIP __device__ variables): explicit renames only.
  Slot,
};

struct ScannedSymbol {
  ScannedSymbol(std::string name, bool defined,
                SymbolRole role = SymbolRole::Plain, bool weak = false)
      : name(std::move(name)), defined(defined), role(role), weak(weak) {}
  std::string name; // raw, as in the symbol table
  bool defined = false;
  SymbolRole role = SymbolRole::Plain;
  // A weak (or linkonce) definition: copies of it merge silently in a link.
  // Set where it matters (AMDGPU slots).
  bool weak = false;
};

struct ScannedGroup {
  std::string key; // the group signature / COMDAT leader / comdat name
  // False when the key is not a symbol a rename can reach (an ELF group
  // keyed by a section symbol): renaming a member is then an error.
  bool keyIsSymbol = true;
  std::vector<std::string> members; // raw names of external definitions
};

// One object file (or archive member): its external symbols and groups.
struct ScannedObject {
  std::string file; // "dir/x.o" or "lib.a(member.o)", for messages
  Scope scope = Scope::Other;
  NameStyle style = NameStyle::Elf;
  std::vector<ScannedSymbol> symbols;
  std::vector<ScannedGroup> groups;
  // AMDGPU: the symbol names the NT_AMDGPU_METADATA note holds.
  std::vector<std::string> metadataSymbols;
};

// A name --match selects that no rule renames: an AMDGPU loader slot
// defined by a runtime input (explicit renames only). Two rewritten copies
// of the runtime keep the one name; if it is weak they share one variable
// in a code object that links both, silently (docs/rewrite.md, "AMDGPU").
struct LeftAloneRecord {
  std::string name; // raw
  Scope scope;
  std::string file;
  bool weak = false;
  std::string why() const;
};

struct RenameRecord {
  std::string oldName, newName; // raw names
  Scope scope;
  std::string file;
  // What pairs it with others (AMDGPU: "kernel", "descriptor of kernel X",
  // "managed value of X", "metadata .name/.symbol"); empty for plain names.
  std::string note;
};

class RenameTable {
public:
  // The table, or errors (collisions, impossible group renames). Each error
  // is one complete message.
  struct Built;
  static Built build(const RewriteSpec &spec,
                     const std::vector<ScannedObject> &objects);
  // The same over objects owned elsewhere; records() (the --dry-run view)
  // only `withRecords`: a large archive has tens of thousands.
  static Built build(const RewriteSpec &spec,
                     const std::vector<const ScannedObject *> &objects,
                     bool withRecords);

  // The new raw name of `raw` in a file of `scope` and `style`, if renamed.
  std::optional<std::string> rename(Scope scope, NameStyle style,
                                    std::string_view raw) const;
  // The C-level rule (step 3 above).
  std::optional<std::string> renameBase(Scope scope,
                                        std::string_view base) const;

  // Every symbol renamed in every file, in input order: the --dry-run view.
  const std::vector<RenameRecord> &records() const { return records_; }
  // Every MATCH name a runtime input defines that stays as it is (always
  // computed: a link with several specs compares them).
  const std::vector<LeftAloneRecord> &leftAlone() const { return leftAlone_; }
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  using NameSet = std::unordered_set<std::string, NameHash, std::equal_to<>>;
  const NameSet &internalNames() const { return internal_; }
  // AMDGPU names (C-level) that only the export rule or explicit renames
  // reach (kernels, exports), and those only explicit renames reach (slots).
  const NameSet &exportOnlyNames() const { return exportOnly_; }
  const NameSet &explicitOnlyNames() const { return explicitOnly_; }
  // canonical spec + the internal names: with the scope and an input's
  // digest, a complete cache key for that input's rewrite.
  std::string canonical() const;

private:
  static void appendSorted(std::string &out, const char *tag,
                           const NameSet &names);
  RewriteSpec spec_;
  // Hashed and looked up by string_view: once per symbol per file.
  NameSet internal_;
  NameSet exportOnly_, explicitOnly_;
  std::vector<RenameRecord> records_;
  std::vector<LeftAloneRecord> leftAlone_;
};

struct RenameTable::Built {
  RenameTable table;
  std::vector<std::string> errors;
};

} // namespace linkd::rewrite
