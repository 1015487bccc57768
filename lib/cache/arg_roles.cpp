// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/arg_roles.h"

#include "link/response_files.h"

#include <array>
#include <map>
#include <optional>
#include <string_view>

namespace linkd {
namespace {

// Long options (one or two dashes) that take a value, given separately or
// after '=' (Options.td's Eq, EEq and Separate).
constexpr std::array kValued = {
    "auxiliary", "compress-debug-sections", "defsym", "split-stack-adjust-size",
    "Tbss", "Tdata", "Ttext", "Ttext-segment", "call-graph-ordering-file",
    "dynamic-linker", "dynamic-list", "entry", "exclude-libs", "filter", "fini",
    "format", "hash-style", "init", "just-symbols", "keep-unique", "Map",
    "orphan-handling", "print-symbol-order", "rpath", "retain-symbols-file",
    "script", "section-start", "soname", "sort-section", "sysroot", "target2",
    "trace-symbol", "undefined", "unresolved-symbols", "version-script", "wrap",
    "mllvm", "plugin", "mips-got-size", "compress-sections", "in-implib",
    "out-implib", "irpgo-profile", "default-script", "dependency-file",
    "error-limit", "error-handling-script", "export-dynamic-symbol",
    "export-dynamic-symbol-list", "image-base", "oformat", "pack-dyn-relocs",
    "remap-inputs", "reproduce", "symbol-ordering-file", "threads",
    "time-trace-granularity", "undefined-glob", "rsp-quoting",
    "warn-backrefs-exclude", "why-live", "opt-remarks-hotness-threshold",
    "shuffle-sections", "thinlto-cache-policy", "lto-known-safe-vtables",
    "load-pass-plugin", "android-memtag-mode", "chroot", "opt-remarks-filename",
    "opt-remarks-passes", "opt-remarks-format", "rpath-link", "library",
    "library-path", "output", "dT", "flavor",
    // wasm-ld
    "export", "export-if-defined", "allow-undefined-file",
    // LLD's MinGW driver (lld/MinGW/Options.td)
    "pdb", "output-def", "subsystem", "stack", "heap", "major-os-version",
    "minor-os-version", "major-subsystem-version", "minor-subsystem-version",
    "major-image-version", "minor-image-version", "file-alignment",
    "section-alignment", "exclude-symbols", "require-defined", "delayload",
    "thinlto-cache-dir"};

// Long flags that start like a one-letter option with a joined value
// ("-export-dynamic" is not "-e xport-dynamic").
constexpr std::array kFlags = {
    "eh-frame-hdr", "no-eh-frame-hdr", "emit-relocs", "enable-new-dtags",
    "end-group", "end-lib", "error-unresolved-symbols", "export-dynamic",
    "no-export-dynamic", "execute-only", "help", "unique", "undefined-version",
    "no-undefined-version", "use-android-relr-tags", "omagic", "long-plt",
    "export-all", "export-table", "entry-none"};

// One-letter options with a value, joined ("-Lx") or separate ("-L x").
constexpr std::string_view kShortValued = "olLmeRThyuzOGfFb";

enum class FileRole { None, Input, Output, SearchDir };

FileRole roleOf(std::string_view opt) {
  static const std::map<std::string_view, FileRole> roles = {
      {"o", FileRole::Output},
      {"output", FileRole::Output},
      {"Map", FileRole::Output},
      {"dependency-file", FileRole::Output},
      {"T", FileRole::Input},
      {"script", FileRole::Input},
      {"default-script", FileRole::Input},
      {"dT", FileRole::Input},
      {"version-script", FileRole::Input},
      {"dynamic-list", FileRole::Input},
      {"just-symbols", FileRole::Input},
      {"retain-symbols-file", FileRole::Input},
      {"symbol-ordering-file", FileRole::Input},
      {"call-graph-ordering-file", FileRole::Input},
      {"export-dynamic-symbol-list", FileRole::Input},
      {"allow-undefined-file", FileRole::Input},
      // MinGW: the import library and the .def file written beside a DLL.
      {"out-implib", FileRole::Output},
      {"output-def", FileRole::Output},
      {"L", FileRole::SearchDir},
      {"library-path", FileRole::SearchDir}};
  auto it = roles.find(opt);
  return it == roles.end() ? FileRole::None : it->second;
}

template <size_t N>
bool inList(const std::array<const char *, N> &list, std::string_view s) {
  for (const char *x : list)
    if (s == x)
      return true;
  return false;
}

// Why an option's value makes input names matter, or nullopt.
std::optional<std::string> namesMatter(std::string_view opt,
                                       std::string_view value) {
  if (opt == "exclude-libs" && value != "ALL")
    return "--exclude-libs matches archive names";
  if ((opt == "format" || opt == "b") && value == "binary")
    return "-b binary makes symbols from file names";
  for (std::string_view o :
       {"remap-inputs", "remap-inputs-file", "warn-backrefs-exclude", "chroot",
        "lto-obj-path", "save-temps", "thinlto-index-only",
        "thinlto-prefix-replace", "thinlto-object-suffix-replace",
        "thinlto-emit-imports-files", "thinlto-emit-index-files"})
    if (opt == o)
      return "--" + std::string(o) + " depends on file names";
  if (opt == "plugin-opt")
    for (std::string_view v : {"thinlto", "obj-path=", "dwo_dir=", "save-temps"})
      if (value.starts_with(v))
        return "-plugin-opt=" + std::string(value) + " depends on file names";
  return std::nullopt;
}

// LLD 19 accepts these and does nothing with them (Options.td's "ignored"
// group and Driver.cpp's lto-wrapper check).
bool ignoredPluginOpt(std::string_view v) {
  return v.starts_with("-fresolution=") || v.starts_with("-pass-through=") ||
         v.ends_with("lto-wrapper") || v.ends_with("lto-wrapper.exe");
}

class Parser {
public:
  Parser(const std::vector<std::string> &args, const std::string &cwd)
      : args(args), cwd(cwd) {}

  ArgRoles run() {
    for (i = 0; i < args.size(); ++i)
      one(args[i]);
    return std::move(out);
  }

private:
  void one(const std::string &a) {
    if (a.size() < 2 || a[0] != '-') {
      if (a == "-")
        out.keyArgs.push_back(a);
      else
        out.keyArgs.push_back(bind(a, NameRole::Input));
      return;
    }
    std::string_view name(a);
    name.remove_prefix(name.starts_with("--") ? 2 : 1);
    if (ignored(a, name))
      return;
    size_t eq = name.find('=');
    if (eq != std::string_view::npos && eq > 0 &&
        (inList(kValued, name.substr(0, eq)) ||
         name.substr(0, eq) == "plugin-opt" ||
         namesMatter(name.substr(0, eq), name.substr(eq + 1)))) {
      valued(a.substr(0, a.size() - name.size() + eq + 1),
             name.substr(0, eq), name.substr(eq + 1));
      return;
    }
    if (inList(kValued, name)) {
      out.keyArgs.push_back(a);
      if (i + 1 < args.size()) {
        ++i;
        valued("", name, args[i]);
      }
      return;
    }
    if (a[1] != '-' && !inList(kFlags, name) &&
        kShortValued.find(a[1]) != std::string_view::npos) {
      std::string_view opt(a.data() + 1, 1);
      if (a.size() > 2) {
        valued(a.substr(0, 2), opt, std::string_view(a).substr(2));
      } else {
        out.keyArgs.push_back(a);
        if (i + 1 < args.size()) {
          ++i;
          valued("", opt, args[i]);
        }
      }
      return;
    }
    if (auto why = namesMatter(name, ""))
      out.namesMatter = *why;
    out.keyArgs.push_back(a); // a flag
  }

  bool ignored(const std::string &a, std::string_view name) {
    bool skipNext = name == "plugin" || name == "rpath-link";
    bool drop = skipNext || name.starts_with("plugin=") ||
                name.starts_with("rpath-link=") ||
                (name.starts_with("plugin-opt=") &&
                 ignoredPluginOpt(name.substr(11)));
    if (!drop)
      return false;
    out.ignored.push_back(a);
    if (skipNext && i + 1 < args.size())
      out.ignored.push_back(args[++i]);
    return true;
  }

  // `prefix` + `value` was one argument (prefix empty: the value stood
  // alone after its option).
  void valued(const std::string &prefix, std::string_view opt,
              std::string_view value) {
    if (auto why = namesMatter(opt, value))
      out.namesMatter = *why;
    std::string v(value);
    FileRole role = roleOf(opt);
    // "=dir" is under the sysroot; "-" is stdout/stdin.
    if (role == FileRole::None || v.empty() || v == "-" || v[0] == '=') {
      out.keyArgs.push_back(prefix + v);
      return;
    }
    NameRole r = role == FileRole::Output      ? NameRole::Output
                 : role == FileRole::SearchDir ? NameRole::SearchDir
                                               : NameRole::Input;
    out.keyArgs.push_back(prefix + bind(v, r));
  }

  // The token for `spelling`, one per distinct spelling.
  std::string bind(const std::string &spelling, NameRole role) {
    auto it = ids.find(spelling);
    if (it == ids.end()) {
      std::string id = std::to_string(out.names.size());
      out.names.push_back(
          {role, id, spelling, absolutePath(spelling, cwd), ""});
      it = ids.emplace(spelling, id).first;
    }
    return PathMapper::token(it->second);
  }

  const std::vector<std::string> &args;
  const std::string &cwd;
  size_t i = 0;
  ArgRoles out;
  std::map<std::string, std::string> ids;
};

} // namespace

ArgRoles gnuArgRoles(const std::vector<std::string> &args,
                     const std::string &cwd) {
  return Parser(args, cwd).run();
}

} // namespace linkd
