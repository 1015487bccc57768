// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Output options per LLD 19 driver (see link_outputs.h). Option spellings
// follow lld/{ELF,MinGW,COFF,MachO,wasm}/Options.td.
#include "link/link_outputs.h"

#include "link/response_files.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace linkd {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string stemOf(const std::string &path) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path;
  return path.substr(0, dot);
}

// GNU-style options (ELF, MinGW, Mach-O, Wasm): `-name value`,
// `--name value`, `-name=value`, `--name=value`; `joined` ones also `-oX`.
struct GnuOptions {
  const std::vector<std::string> &args;
  // The value of option `name` at args[i] (advancing i past a separate
  // value), if args[i] is that option.
  std::optional<std::string> value(size_t &i, std::string_view name,
                                   bool joined = false) const {
    std::string_view a = args[i];
    std::string_view bare = a.starts_with("--")  ? a.substr(2)
                            : a.starts_with("-") ? a.substr(1)
                                                 : std::string_view();
    if (bare.empty())
      return std::nullopt;
    if (bare == name) {
      if (i + 1 >= args.size())
        return std::nullopt;
      return args[++i];
    }
    if (bare.starts_with(name) && bare.size() > name.size() &&
        bare[name.size()] == '=')
      return std::string(bare.substr(name.size() + 1));
    if (joined && a.starts_with("-") && !a.starts_with("--") &&
        bare.starts_with(name) && bare.size() > name.size())
      return std::string(bare.substr(name.size()));
    return std::nullopt;
  }
};

// ELF options spelled with one dash that start with "o" but are not `-oX`.
bool joinedElfOption(std::string_view a) {
  for (std::string_view name : {"-omagic", "-oformat", "-orphan-handling",
                                "-opt-remarks", "-optimize-bb-jumps"})
    if (a.starts_with(name))
      return true;
  return false;
}

// `-m i386pe`, `-m i386pep`, `-marm64pe` ...: the MinGW driver.
bool isMinGW(const std::vector<std::string> &args) {
  auto pe = [](std::string_view m) {
    return m.ends_with("pe") || m.ends_with("pep");
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-m" && i + 1 < args.size() && pe(args[i + 1]))
      return true;
    if (args[i].starts_with("-m") && args[i].size() > 2 &&
        !args[i].starts_with("-mllvm") && pe(args[i]))
      return true;
  }
  return false;
}

struct Collect {
  const std::string &cwd;
  LinkOutputs out;
  void file(const std::string &p) {
    if (!p.empty() && p != "-")
      out.files.insert(tidyPath(absolutePath(p, cwd)));
  }
  void dir(const std::string &p) {
    if (!p.empty())
      out.dirs.insert(tidyPath(absolutePath(p, cwd)));
  }
};

void gnuOutputs(Flavor flavor, const std::vector<std::string> &args,
                Collect &c) {
  GnuOptions o{args};
  std::string output = "a.out";
  bool mingw = flavor == Flavor::Elf && isMinGW(args);
  bool timeTrace = false, pdbDefault = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto v = o.value(i, "o"))
      output = *v;
    else if (auto v = o.value(i, "output"))
      output = *v;
    else if (auto v = o.value(i, "Map"))
      c.file(*v);
    else if (auto v = o.value(i, "map")) // Mach-O
      c.file(*v);
    else if (auto v = o.value(i, "dependency-file"))
      c.file(*v);
    else if (auto v = o.value(i, "dependency_info")) // Mach-O
      c.file(*v);
    else if (auto v = o.value(i, "why-extract"))
      c.file(*v);
    else if (auto v = o.value(i, "print-archive-stats"))
      c.file(*v);
    else if (auto v = o.value(i, "reproduce"))
      c.file(*v);
    else if (auto v = o.value(i, "time-trace-file"))
      c.file(*v);
    else if (auto v = o.value(i, "lto-obj-path"))
      c.file(*v);
    else if (auto v = o.value(i, "plugin-opt"); v && v->starts_with("dwo_dir="))
      c.dir(v->substr(8));
    else if (auto v = o.value(i, "out-implib"); v && mingw)
      c.file(*v);
    else if (auto v = o.value(i, "output-def"); v && mingw)
      c.file(*v);
    else if (auto v = o.value(i, "pdb"); v && mingw)
      v->empty() ? void(pdbDefault = true) : c.file(*v);
    else if (args[i] == "--time-trace" || args[i] == "-time-trace")
      timeTrace = true;
    else if (auto v = o.value(i, "o", /*joined=*/true);
             v && flavor == Flavor::Elf && !joinedElfOption(args[i]))
      output = *v;
  }
  c.file(output);
  if (timeTrace)
    c.file(output + ".time-trace");
  if (pdbDefault)
    c.file(stemOf(output) + ".pdb");
}

// lld-link: `/name:value` or `-name:value`, names case-insensitive.
void coffOutputs(const std::vector<std::string> &args, Collect &c) {
  std::string output;
  bool timeTrace = false, manifest = false;
  for (const std::string &a : args) {
    if (a.empty() || (a[0] != '/' && a[0] != '-'))
      continue;
    std::string body = a.substr(a.starts_with("--") ? 2 : 1);
    size_t colon = body.find(':');
    std::string name = lower(body.substr(0, colon));
    std::string value =
        colon == std::string::npos ? "" : body.substr(colon + 1);
    if (name == "out")
      output = value;
    else if (name == "implib" || name == "pdb" || name == "pdbstripped" ||
             name == "map" || name == "lldmap" || name == "manifestfile" ||
             name == "reproduce" || name == "time-trace-file" ||
             name == "lto-obj-path")
      c.file(value);
    else if (name == "linkrepro" && !value.empty())
      c.file(value + "/repro.tar");
    else if (name == "time-trace")
      timeTrace = true;
    else if (name == "manifest" && lower(value) != "no" &&
             !lower(value).starts_with("embed"))
      manifest = true;
  }
  if (output.empty())
    return; // LLD names it after the first input: not offloaded as it is
  c.file(output);
  for (const char *ext : {".lib", ".pdb", ".map"})
    c.file(stemOf(output) + ext);
  if (manifest)
    c.file(output + ".manifest");
  if (timeTrace)
    c.file(output + ".time-trace");
}

} // namespace

bool LinkOutputs::allows(const std::string &p) const {
  if (files.count(p))
    return true;
  size_t slash = p.rfind('/');
  return slash != std::string::npos && slash > 0 &&
         dirs.count(p.substr(0, slash));
}

std::string tidyPath(const std::string &path) {
  if (path.empty() || path[0] != '/')
    return {};
  std::string out;
  for (size_t i = 0; i < path.size();) {
    size_t next = path.find('/', i + 1);
    std::string part = path.substr(
        i, next == std::string::npos ? std::string::npos : next - i);
    if (part != "/" && part != "/.")
      out += part;
    if (next == std::string::npos)
      break;
    i = next;
  }
  return out.empty() ? "/" : out;
}

LinkOutputs linkOutputs(Flavor flavor, const std::vector<std::string> &args,
                        const std::string &cwd,
                        const std::string &reproduceEnv) {
  Collect c{cwd, {}};
  if (flavor == Flavor::Coff)
    coffOutputs(args, c);
  else if (flavor == Flavor::Elf || flavor == Flavor::MachO ||
           flavor == Flavor::Wasm)
    gnuOutputs(flavor, args, c);
  if (!reproduceEnv.empty())
    c.file(reproduceEnv);
  return std::move(c.out);
}

} // namespace linkd
