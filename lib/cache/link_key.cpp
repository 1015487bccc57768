// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/link_key.h"

#include "cache/arg_roles.h"
#include "cache/object_identity.h"
#include "cache/stat_cache.h"
#include "link/link_outputs.h"
#include "link/response_files.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

namespace linkd {
namespace {

constexpr std::string_view kKeyFormat = "linkd-link-key-v3";

bool isPeTarget(const std::vector<std::string> &args) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-m") {
      const std::string &m = args[i + 1];
      return m == "i386pe" || m == "i386pep" || m == "thumb2pe" ||
             m == "arm64pe" || m == "arm64ecpe" || m == "arm64xpe" ||
             m == "mipspe";
    }
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// GNU-style option `name` given as "--name", "-name", "--name=V", "-name=V"
// or, for `joined`, "--nameV"; returns its value ("" if none) via `value`.
bool gnuOption(std::string_view arg, std::string_view name) {
  if (arg.starts_with("--"))
    arg.remove_prefix(2);
  else if (arg.starts_with("-"))
    arg.remove_prefix(1);
  else
    return false;
  return arg == name || (arg.starts_with(name) && arg.size() > name.size() &&
                         arg[name.size()] == '=');
}

std::string gnuValue(const std::vector<std::string> &args, size_t &i,
                     std::string_view name) {
  std::string_view a = args[i];
  size_t eq = a.find('=');
  if (eq != std::string_view::npos)
    return std::string(a.substr(eq + 1));
  if (i + 1 < args.size())
    return args[++i];
  return {};
}

// Options that make any GNU-style link uncacheable.
std::optional<std::string> gnuReason(std::string_view a) {
  if (gnuOption(a, "reproduce"))
    return "--reproduce";
  if (a.starts_with("--time-trace") || a.starts_with("-time-trace"))
    return "--time-trace";
  return std::nullopt;
}

void elfReasons(const std::vector<std::string> &args, bool mingw,
                const LinkInvocation &inv, const KeyContext &ctx,
                std::vector<std::string> &out) {
  bool fixedTime = inv.env.count("SOURCE_DATE_EPOCH") > 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (auto reason = gnuReason(a))
      out.push_back(*reason);
    else if (a == "-o" || gnuOption(a, "output")) {
      if (gnuValue(args, i, "output") == "-")
        out.push_back("output to stdout");
    } else if (a == "-o-")
      out.push_back("output to stdout");
    else if (a == "-")
      out.push_back("input from stdin");
    else if (gnuOption(a, "build-id") && a.ends_with("=uuid"))
      out.push_back("--build-id=uuid");
    else if (gnuOption(a, "shuffle-sections")) {
      std::string v = gnuValue(args, i, "shuffle-sections");
      size_t eq = v.rfind('=');
      if (eq == std::string::npos || v.substr(eq + 1) == "0")
        out.push_back("random --shuffle-sections seed");
    } else if (mingw && (gnuOption(a, "no-insert-timestamp") ||
                         lower(a).find("brepro") != std::string::npos))
      fixedTime = true;
  }
  if (mingw && !fixedTime && !ctx.sloppiness.count("coff_timestamp"))
    out.push_back("COFF timestamp (no --no-insert-timestamp)");
}

void coffReasons(const std::vector<std::string> &args,
                 const LinkInvocation &inv, const KeyContext &ctx,
                 std::vector<std::string> &out) {
  bool fixedTime = inv.env.count("SOURCE_DATE_EPOCH") > 0;
  for (const std::string &raw : args) {
    if (raw.empty() || (raw[0] != '/' && raw[0] != '-'))
      continue;
    std::string a = lower(std::string_view(raw).substr(1));
    if (a.starts_with("reproduce:") || a.starts_with("linkrepro:"))
      out.push_back("--reproduce");
    else if (a.starts_with("time-trace"))
      out.push_back("--time-trace");
    else if (a == "brepro" || a.starts_with("timestamp:"))
      fixedTime = true;
    else if (a == "out:-")
      out.push_back("output to stdout");
  }
  if (!fixedTime && !ctx.sloppiness.count("coff_timestamp"))
    out.push_back("COFF timestamp (no /Brepro, /timestamp: or "
                  "SOURCE_DATE_EPOCH)");
}

void genericReasons(const std::vector<std::string> &args,
                    std::vector<std::string> &out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (auto reason = gnuReason(a))
      out.push_back(*reason);
    else if (a == "-o" && i + 1 < args.size() && args[i + 1] == "-")
      out.push_back("output to stdout");
  }
}

// `/dev/null` as LLD names it, and the null device (a FIFO or a device of
// another name is not: its reader sees what LLD writes).
bool isNullDevice(const std::string &path) {
  struct stat st{};
  return path == "/dev/null" && ::stat(path.c_str(), &st) == 0 &&
         S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

// A named output that exists and is neither a regular file, a directory nor
// the null device (`-o fifo`, `-o /dev/stdout`): LLD writes into it, which a
// cache hit could not replay. The output options are the farm's list
// (link_outputs.h). Outputs to the null device are keyed as such (LLD's
// bytes go nowhere, so a probe's result is not a real link's) and make an
// empty result.
std::string specialOutput(const LinkInvocation &inv,
                          const std::vector<std::string> &args, Sha256 &h,
                          LinkAnalysis &out) {
  std::set<std::string> files = linkOutputs(inv.flavor, args, inv.cwd).files;
  size_t nulls = 0;
  for (const std::string &p : files) {
    if (isNullDevice(p)) {
      h.field("null-output").field(p);
      ++nulls;
      continue;
    }
    struct stat st{};
    if (::stat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode) &&
        !S_ISDIR(st.st_mode))
      return "output to a FIFO or device";
  }
  out.nullOutputs = nulls > 0;
  out.resultMayBeEmpty = out.nullOutputs;
  out.onlyNullOutputs = out.nullOutputs && nulls == files.size();
  return {};
}

} // namespace

namespace {

// Forwarded variables that can change a link's outputs: not TERM (colour is
// keyed as stderrIsColorTty), and HOME only where Mach-O's -oso_prefix
// expands `~` (osoPrefixExpandsHome).
bool keyedVariable(const std::string &name, bool homeMatters) {
  return name != "TERM" && name != "PWD" && (name != "HOME" || homeMatters);
}

// What the key says of PWD (keyedPwd), and the same for the miss
// explanation.
void keyPwd(const std::string &pwd, const std::string &pwdAsKeyed, Sha256 &h,
            LinkAnalysis &out) {
  h.field("PWD").field(pwdAsKeyed);
  out.env.push_back("PWD=" + (pwd.empty() ? "(the working directory)" : pwd));
}

// The output a link names (-o, --output, COFF's /out:), absolute, for
// explaining the next miss of the same output; empty if it names none
// (lld-link then derives it from the first input).
std::string namedOutput(Flavor flavor, const std::vector<std::string> &args,
                        const std::string &cwd) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (flavor == Flavor::Coff) {
      if (a.size() > 5 && (a[0] == '/' || a[0] == '-') &&
          lower(std::string_view(a).substr(1, 4)) == "out:")
        out = a.substr(5);
    } else if ((a == "-o" || a == "--output" || a == "-output") &&
               i + 1 < args.size()) {
      out = args[++i];
    } else if (a.starts_with("--output=")) {
      out = a.substr(9);
    } else if (a.starts_with("-o") && a.size() > 2 && a[2] != '-' &&
               a != "-omagic") {
      out = a.substr(2);
    }
  }
  return out.empty() || out == "-" ? std::string() : absolutePath(out, cwd);
}

// The key of a link that holds every argument and the working directory as
// given (COFF, Mach-O, and GNU-style links whose names matter).
void keyAsGiven(const LinkInvocation &inv, const ExpandedArgs &expanded,
                bool homeMatters, Sha256 &h, LinkAnalysis &out) {
  out.primaryOutput = namedOutput(inv.flavor, expanded.args, inv.cwd);
  h.field("as-given").field(inv.cwd);
  for (const auto &[name, value] : inv.env)
    if (keyedVariable(name, homeMatters))
      h.field(name).field(value);
  std::string pwd = keyedPwd(inv);
  keyPwd(pwd, pwd, h, out);
  h.field("argv");
  // argv[0] as LLD sees it: its name is in diagnostics, and COFF records
  // the whole path in PDBs.
  h.field(lldProgramName(inv.argv.empty() ? "" : inv.argv[0], inv.flavor));
  for (size_t i = 1; i < inv.argv.size(); ++i) {
    const std::string &a = inv.argv[i];
    if (keyResponseFile(a, inv.cwd, expanded, h, out.responseFiles))
      continue;
    h.field(a);
    out.keyFields.push_back(a);
    out.localFields.push_back(a);
  }
  // Every spec, in order: a link with two specs is not the link with one.
  for (const std::string &spec : inv.rewriteSpecs)
    h.field("rewrite-spec").field(spec);
}

// The key of a link that holds names by role (link_names.h).
// The content of the few files a small link names (see link_key.h).
void keyNamedInputs(const PathMapper &names, StatCache &stats, Sha256 &h,
                    LinkAnalysis &out) {
  size_t inputs = 0;
  for (const LeftOutName &n : names.names())
    inputs += n.role == NameRole::Input;
  if (inputs > kKeyedInputs)
    return;
  h.field("named-inputs");
  for (const LeftOutName &n : names.names()) {
    if (n.role != NameRole::Input)
      continue;
    if (out.onlyNullOutputs) {
      if (auto id = fileIdentityWithoutFileSymbols(n.absolute)) {
        h.field(n.id).field("identity").field(id->digest.raw());
        out.keyedInputs.push_back(n.spelling + "=" + id->digest.hex() +
                                  " (without its source file name)");
        out.identityKeyed[withoutDotComponents(n.absolute)] = id->bytes;
        out.digestsBeforeLink[withoutDotComponents(n.absolute)] = id->bytes;
        out.fileSymbols.insert(id->fileSymbols.begin(), id->fileSymbols.end());
        continue;
      }
    }
    std::optional<FileState> st = stats.lookup(n.absolute);
    std::string_view digest = st && st->exists && !st->isDirectory
                                  ? std::string_view(st->digest.raw())
                                  : std::string_view("-");
    h.field(n.id).field(digest);
    if (digest != "-")
      out.digestsBeforeLink[withoutDotComponents(n.absolute)] = st->digest;
    out.keyedInputs.push_back(
        n.spelling + "=" +
        (digest == "-" ? std::string("-") : Digest::fromRaw(digest)->hex()));
  }
}

void keyByContent(const LinkInvocation &inv, const ExpandedArgs &expanded,
                  ArgRoles &roles, const std::string &baseDir, Sha256 &h,
                  LinkAnalysis &out) {
  std::vector<LeftOutName> names = std::move(roles.names);
  names.push_back({NameRole::Cwd, "C", inv.cwd, inv.cwd, ""});
  if (!baseDir.empty())
    names.push_back({NameRole::BaseDir, "B", baseDir, baseDir, ""});
  out.paths = PathMapper(std::move(names));
  out.ignoredOptions = std::move(roles.ignored);
  auto stored = [&](const std::string &s) {
    return storedPrefixes(s, inv.cwd, baseDir);
  };
  // Whether the prefixes are left out (a working directory of "/" is not),
  // and what a path under the base dir is stored relative to.
  h.field("by-content").field(out.paths.byId("C") ? "" : inv.cwd);
  h.field(out.paths.relativeToCwd() ? "base-relative"
          : out.paths.byId("B")     ? "base"
                                    : "");
  for (const auto &[name, value] : inv.env)
    if (keyedVariable(name, /*homeMatters=*/false))
      h.field(name).field(stored(value));
  std::string pwd = keyedPwd(inv);
  keyPwd(pwd, stored(pwd), h, out);
  h.field("argv");
  h.field(stored(lldProgramName(inv.argv.empty() ? "" : inv.argv[0],
                                inv.flavor)));
  for (const std::string &a : roles.keyArgs) {
    std::string k = stored(a);
    h.field(k);
    out.localFields.push_back(out.paths.toLocal(k));
    out.keyFields.push_back(std::move(k));
  }
  for (const LeftOutName &n : out.paths.names())
    if (n.role == NameRole::Output) {
      out.primaryOutput = n.absolute; // -o comes first
      break;
    }
  for (const ResponseFile &f : expanded.files)
    out.responseFiles.insert(f.path); // their content is in the arguments
  for (const std::string &spec : inv.rewriteSpecs)
    h.field("rewrite-spec").field(stored(spec));
}

// Mach-O's `-oso_prefix ~` (or `~/...`) is expanded from HOME (real_path
// with expand_tilde); HOME changes no other link's outputs.
bool osoPrefixExpandsHome(Flavor flavor, const std::vector<std::string> &args) {
  if (flavor != Flavor::MachO)
    return false;
  for (size_t i = 0; i + 1 < args.size(); ++i) // args: argv[1..]
    if (args[i] == "-oso_prefix" &&
        (args[i + 1] == "~" || args[i + 1].starts_with("~/")))
      return true;
  return false;
}

} // namespace

std::string keyedPwd(const LinkInvocation &inv) {
  auto it = inv.env.find("PWD");
  if (it == inv.env.end() || it->second.empty() || it->second[0] != '/' ||
      it->second == inv.cwd)
    return {};
  struct stat pwd {};
  struct stat cwd {};
  if (::stat(it->second.c_str(), &pwd) != 0 ||
      ::stat(inv.cwd.c_str(), &cwd) != 0 || pwd.st_dev != cwd.st_dev ||
      pwd.st_ino != cwd.st_ino)
    return {};
  return it->second;
}

const ResponseFile *expandedResponseFile(const std::string &arg,
                                         const std::string &cwd,
                                         const ExpandedArgs &expanded) {
  if (arg.size() < 2 || arg[0] != '@')
    return nullptr;
  std::string path = absolutePath(arg.substr(1), cwd);
  for (const ResponseFile &f : expanded.files)
    if (f.path == path)
      return &f;
  return nullptr;
}

bool keyResponseFile(const std::string &arg, const std::string &cwd,
                     const ExpandedArgs &expanded, Sha256 &h,
                     std::set<std::string> &responseFiles) {
  const ResponseFile *rf = expandedResponseFile(arg, cwd, expanded);
  if (!rf)
    return false;
  h.field("@").field(rf->content);
  responseFiles.insert(rf->path);
  return true;
}

LinkAnalysis analyzeLink(const LinkInvocation &inv, const KeyContext &ctx,
                         StatCache *stats) {
  LinkAnalysis out;
  ExpandedArgs expanded = expandResponseFiles(inv.argv, inv.cwd);
  bool mingw = inv.flavor == Flavor::Elf && isPeTarget(expanded.args);
  // MinGW links too: a PE image embeds its own base name (the export
  // directory; the import library), which the outputs are searched for,
  // and a PDB its inputs' names, which the name check finds (a link that
  // writes one then requires its names exactly).
  bool byContent = inv.flavor == Flavor::Elf || inv.flavor == Flavor::Wasm;
  std::string baseDir = inv.baseDir.empty() ? ctx.baseDir : inv.baseDir;

  if (auto it = inv.env.find("LLD_REPRODUCE");
      it != inv.env.end() && !it->second.empty())
    out.uncacheable.push_back("--reproduce");
  if (!expanded.unread.empty())
    out.uncacheable.push_back(expanded.unread);
  switch (inv.flavor) {
  case Flavor::Elf:
    elfReasons(expanded.args, mingw, inv, ctx, out.uncacheable);
    break;
  case Flavor::Coff:
    coffReasons(expanded.args, inv, ctx, out.uncacheable);
    break;
  default:
    genericReasons(expanded.args, out.uncacheable);
    break;
  }

  Sha256 h;
  h.field(kKeyFormat).field(ctx.linkdVersion).field(ctx.lldVersion);
  if (std::string special = specialOutput(inv, expanded.args, h, out);
      !special.empty())
    out.uncacheable.push_back(special);
  h.field(flavorName(inv.flavor));
  h.field(std::to_string(inv.umask)).field(inv.stderrIsColorTty ? "1" : "0");
  bool homeMatters = osoPrefixExpandsHome(inv.flavor, expanded.args);
  out.other = std::string(ctx.linkdVersion) + " " + ctx.lldVersion + " " +
              std::string(flavorName(inv.flavor)) + " umask=" + std::to_string(inv.umask) +
              (inv.stderrIsColorTty ? " colour" : "");
  out.cwd = inv.cwd;
  out.baseDir = baseDir;
  out.requestKind = std::string(flavorName(inv.flavor));
  for (const auto &[name, value] : inv.env)
    if (name != "TERM" && name != "PWD")
      out.env.push_back(name + "=" + value);
  ArgRoles roles;
  if (byContent) {
    roles = gnuArgRoles(expanded.args, inv.cwd);
    out.namesMatter = roles.namesMatter;
    if (mingw)
      for (LeftOutName &n : roles.names)
        if (n.role == NameRole::Output)
          n.embeddedAs = n.spelling.substr(n.spelling.find_last_of('/') + 1);
  }
  if (byContent && roles.namesMatter.empty()) {
    keyByContent(inv, expanded, roles, baseDir, h, out);
    if (stats)
      keyNamedInputs(out.paths, *stats, h, out);
  } else
    keyAsGiven(inv, expanded, homeMatters, h, out);
  out.key = h.finish();
  return out;
}

} // namespace linkd
