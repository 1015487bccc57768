// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/archive_key.h"

#include "archive/ar_command_line.h"
#include "link/response_files.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace linkd {
namespace {

constexpr std::string_view kKeyFormat = "linkd-archive-key-v1";
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

  Sha256 h;
  h.field(kKeyFormat).field(ctx.linkdVersion).field(ctx.lldVersion);
  h.field(flavorName(inv.flavor));
  h.field(lldProgramName(inv.argv.empty() ? "" : inv.argv[0], inv.flavor));
  h.field(inv.cwd);
  h.field(std::to_string(inv.umask)).field(inv.stderrIsColorTty ? "1" : "0");
  for (const auto &[name, value] : inv.env)
    h.field(name).field(value);
  h.field("argv");
  for (size_t i = 1; i < inv.argv.size(); ++i) {
    const std::string &a = inv.argv[i];
    if (expands &&
        keyResponseFile(a, inv.cwd, expanded, h, out.responseFiles))
      continue;
    h.field(a);
  }
  // Nested response files are inputs by content too.
  for (const ResponseFile &f : expanded.files)
    if (out.responseFiles.insert(f.path).second)
      h.field("@@").field(f.path).field(f.content);
  if (inv.stdinData)
    h.field("stdin").field(*inv.stdinData);
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
    h.field("replaced").field(p).field(*state);
    if (facts.onlyUpdate && *state != "absent")
      out.uncacheable.push_back("update by modification time (u)");
  }
  out.key = h.finish();
  return out;
}

} // namespace linkd
