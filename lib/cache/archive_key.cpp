// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/archive_key.h"

#include "archive/ar_command_line.h"
#include "link/response_files.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace linkd {
namespace {

constexpr std::string_view kKeyFormat = "linkd-archive-key-v2";
constexpr const char *kNoOperation =
    "no archive operation (help, version or a usage error)";
constexpr const char *kReadOnly =
    "read-only archive operation (t, p, x, /list)";

// What the command line tells the key: reasons not to cache, and the files
// the request reads and replaces (as written on the command line).
struct CommandFacts {
  std::vector<std::string> uncacheable;
  std::vector<std::string> replaced;
  // `u`: only members newer than the archive's copies; with no archive to
  // compare against (automake's `rm -f lib.a; ar cru lib.a ...`) that is
  // every member, the same operation as without `u`.
  bool onlyUpdate = false;
  std::string output; // lib's /out:, as given (empty: none named)
};

CommandFacts arFacts(const LinkInvocation &inv,
                     const std::vector<std::string> &expandedArgs) {
  using namespace archive;
  CommandFacts facts;
  if (arResponseFileQuoting(inv.argv).error) {
    facts.uncacheable.push_back(kNoOperation);
    return facts;
  }
  ArCommand cmd = parseArCommandLine(expandedArgs);
  if (cmd.stop != ArStop::None) {
    facts.uncacheable.push_back(kNoOperation);
  } else if (cmd.mri) {
    // The script (keyed as stdin) names a new archive; nothing is replaced
    // that was read.
  } else if (!cmd.writesArchive()) {
    facts.uncacheable.push_back(kReadOnly);
  } else {
    if (!cmd.deterministic)
      facts.uncacheable.push_back("real dates and owners (U)");
    facts.onlyUpdate = cmd.onlyUpdate;
    facts.replaced.push_back(cmd.archive);
  }
  return facts;
}

CommandFacts ranlibFacts(const LinkInvocation &inv) {
  using namespace archive;
  CommandFacts facts;
  // The daemon refuses an empty argv; the fuzzer found this needs it.
  RanlibCommand cmd = parseRanlibCommandLine(
      inv.argv.empty()
          ? std::vector<std::string>()
          : std::vector<std::string>(inv.argv.begin() + 1, inv.argv.end()));
  if (cmd.stop != ArStop::None)
    facts.uncacheable.push_back(kNoOperation);
  else if (!cmd.deterministic)
    facts.uncacheable.push_back("real dates and owners (U)");
  facts.replaced = cmd.archives;
  return facts;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// llvm-lib options are "/name" or "-name", any case. The output is replaced,
// never read, unless it is also an input ("lib /out:a.lib a.lib b.obj" adds
// b.obj to a.lib).
CommandFacts libFacts(const std::vector<std::string> &expandedArgs) {
  CommandFacts facts;
  std::string out;
  for (const std::string &a : expandedArgs) {
    if (a.size() < 2 || (a[0] != '/' && a[0] != '-'))
      continue;
    std::string opt = lower(std::string_view(a).substr(1));
    if (opt == "list")
      facts.uncacheable.push_back(kReadOnly);
    else if (opt.starts_with("out:"))
      out = a.substr(5);
  }
  if (!out.empty() &&
      std::count(expandedArgs.begin(), expandedArgs.end(), out) > 0)
    facts.replaced.push_back(out);
  facts.output = out;
  return facts;
}

// The content of a file the request will replace, as the key sees it.
std::optional<std::string> keyedState(StatCache &stats,
                                      const std::string &path) {
  std::optional<FileState> st = stats.lookup(path);
  if (!st)
    return std::nullopt;
  if (!st->exists)
    return "absent";
  if (st->isDirectory)
    return "directory";
  return st->digest.hex();
}

} // namespace

LinkAnalysis analyzeArchiveRequest(const LinkInvocation &inv,
                                   const KeyContext &ctx, StatCache &stats) {
  LinkAnalysis out;
  out.resultMayBeEmpty = true;
  // llvm-ranlib reads no response files; "@x.a" is an archive name.
  bool expands = inv.flavor != Flavor::Ranlib;
  ExpandedArgs expanded;
  if (expands)
    expanded = expandResponseFiles(inv.argv, inv.cwd);
  CommandFacts facts;
  if (inv.flavor == Flavor::Ar)
    facts = arFacts(inv, expanded.args);
  else if (inv.flavor == Flavor::Ranlib)
    facts = ranlibFacts(inv);
  else
    facts = libFacts(expanded.args);
  out.uncacheable = facts.uncacheable;
  if (!expanded.unread.empty())
    out.uncacheable.push_back(expanded.unread);

  // The working directory and the base dir are prefixes the key does not
  // hold, as in a link's content key (link_names.h): members and the
  // archive are in the manifest relative to them, and a result that names
  // them (a thin archive of absolute member paths) requires them exactly.
  std::string baseDir = inv.baseDir.empty() ? ctx.baseDir : inv.baseDir;
  std::vector<LeftOutName> names = {{NameRole::Cwd, "C", inv.cwd, inv.cwd, ""}};
  if (!baseDir.empty())
    names.push_back({NameRole::BaseDir, "B", baseDir, baseDir, ""});
  out.paths = PathMapper(std::move(names));
  auto stored = [&](const std::string &s) {
    return storedPrefixes(s, inv.cwd, baseDir);
  };

  Sha256 h;
  h.field(kKeyFormat).field(ctx.linkdVersion).field(ctx.lldVersion);
  h.field(flavorName(inv.flavor));
  h.field(lldProgramName(inv.argv.empty() ? "" : inv.argv[0], inv.flavor));
  h.field(out.paths.byId("C") ? "" : inv.cwd);
  h.field(out.paths.relativeToCwd() ? "base-relative"
          : out.paths.byId("B")     ? "base"
                                    : "");
  h.field(std::to_string(inv.umask)).field(inv.stderrIsColorTty ? "1" : "0");
  for (const auto &[name, value] : inv.env)
    if (name != "PWD")
      h.field(name).field(value);
  h.field("PWD").field(stored(keyedPwd(inv)));
  h.field("argv");
  for (size_t i = 1; i < inv.argv.size(); ++i) {
    const std::string &a = inv.argv[i];
    std::string k;
    if (const ResponseFile *f =
            expands ? expandedResponseFile(a, inv.cwd, expanded) : nullptr) {
      h.field("@").field(stored(f->content));
      out.responseFiles.insert(f->path);
      k = a;
    } else {
      k = stored(a);
      h.field(k);
    }
    out.localFields.push_back(out.paths.toLocal(k));
    out.keyFields.push_back(std::move(k));
  }
  // Nested response files are inputs by content too.
  for (const ResponseFile &f : expanded.files)
    if (out.responseFiles.insert(f.path).second)
      h.field("@@").field(out.paths.toStored(f.path)).field(stored(f.content));
  if (inv.stdinData)
    h.field("stdin").field(stored(*inv.stdinData));
  else
    h.field("no stdin");
  for (const std::string &p : facts.replaced)
    out.replacedInputs.insert(absolutePath(p, inv.cwd));
  for (const std::string &p : out.replacedInputs) {
    std::optional<std::string> state = keyedState(stats, p);
    if (!state) {
      out.uncacheable.push_back("cannot read the archive it updates");
      break;
    }
    h.field("replaced").field(out.paths.toStored(p)).field(*state);
    if (facts.onlyUpdate && *state != "absent")
      out.uncacheable.push_back("update by modification time (u)");
  }
  // For explainMiss: the archive the request writes.
  if (!out.replacedInputs.empty())
    out.primaryOutput = *out.replacedInputs.begin();
  else if (!facts.output.empty())
    out.primaryOutput = absolutePath(facts.output, inv.cwd);
  out.requestKind = std::string(flavorName(inv.flavor));
  out.cwd = inv.cwd;
  out.baseDir = baseDir;
  for (const auto &[name, value] : inv.env)
    if (name != "PWD")
      out.env.push_back(name + "=" + value);
  std::string pwd = keyedPwd(inv);
  out.env.push_back("PWD=" + (pwd.empty() ? "(the working directory)" : pwd));
  out.other = std::string(ctx.linkdVersion) + " " + ctx.lldVersion + " " +
              std::string(flavorName(inv.flavor)) +
              " umask=" + std::to_string(inv.umask) +
              (inv.stderrIsColorTty ? " colour" : "");
  out.key = h.finish();
  return out;
}

} // namespace linkd
