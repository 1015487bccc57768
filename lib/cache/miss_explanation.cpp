// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Why a link missed (link_cache.h, explainMiss): each stored link's key
// is remembered, field by field, for its kind of request and its primary
// output; a miss is compared with the last one, and a miss whose key has a
// manifest says which input or required name differed.
#include "cache/link_cache.h"

namespace linkd {
namespace {

constexpr const char *kLastKeyNs = "link-last-key";

// The last key of `kind` of requests (a flavor) for `output`.
Digest lastKeyId(const std::string &kind, const std::string &output) {
  std::string id = "link-last-key";
  id.push_back('\0');
  id += kind;
  id.push_back('\0');
  id += output;
  return sha256(id);
}

// The same output in another checkout under the base dir: its path below
// the base dir's first level (ws/A/lib/libg.so and ws/B/lib/libg.so are
// both "lib/libg.so"), or "" outside the base dir. Only for explanations: a
// collision compares a miss with another link, never serves one.
std::string outputInCheckout(const LinkAnalysis &link) {
  const std::string &out = link.primaryOutput;
  std::string base = link.baseDir;
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  if (base.empty() || !out.starts_with(base + "/"))
    return {};
  std::string below = out.substr(base.size() + 1);
  size_t slash = below.find('/');
  // A NUL parts it from any output path (the literal "checkout\0" once
  // ended at its NUL).
  return slash == std::string::npos
             ? std::string()
             : std::string("checkout") + '\0' + below.substr(slash + 1);
}

// The first difference of two lists, as "what[i]: 'a' -> 'b'".
std::string
firstDifference(const char *what,
                const google::protobuf::RepeatedPtrField<std::string> &was,
                const std::vector<std::string> &wasLocal,
                const std::vector<std::string> &now,
                const std::vector<std::string> &nowLocal, size_t *at) {
  size_t n = std::max(static_cast<size_t>(was.size()), now.size());
  for (size_t i = 0; i < n; ++i) {
    bool inWas = i < static_cast<size_t>(was.size()), inNow = i < now.size();
    if (inWas && inNow && was[static_cast<int>(i)] == now[i])
      continue;
    *at = i;
    std::string a = inWas ? "'" + wasLocal[i] + "'" : "(none)";
    std::string b = inNow ? "'" + nowLocal[i] + "'" : "(none)";
    return std::string(what) + "[" + std::to_string(i) + "]: " + a + " -> " + b;
  }
  return {};
}

} // namespace

void LinkCache::rememberKey(const LinkAnalysis &link) {
  if (link.primaryOutput.empty())
    return;
  cache::v1::KeyDescription d;
  d.set_key(std::string(link.key.raw()));
  for (const std::string &f : link.keyFields)
    d.add_key_fields(f);
  for (const std::string &f : link.localFields)
    d.add_local_fields(f);
  for (const std::string &e : link.env)
    d.add_env(e);
  d.set_cwd(link.cwd);
  d.set_base_dir(link.baseDir);
  d.set_other(link.other);
  for (const std::string &f : link.keyedInputs)
    d.add_keyed_inputs(f);
  std::string value = d.SerializeAsString();
  blobs.putAction(kLastKeyNs, lastKeyId(link.requestKind, link.primaryOutput),
                  value);
  if (std::string other = outputInCheckout(link); !other.empty())
    blobs.putAction(kLastKeyNs, lastKeyId(link.requestKind, other), value);
}

std::string LinkCache::explainMiss(const LinkAnalysis &link,
                                   std::string *kind) {
  std::string value;
  cache::v1::KeyDescription d;
  // The last link of this output, else of the same output in another
  // checkout under the base dir.
  auto found = [&](const std::string &id) {
    return !id.empty() &&
           blobs.getAction(kLastKeyNs, lastKeyId(link.requestKind, id),
                           value) == Lookup::Hit &&
           d.ParseFromString(value);
  };
  if (link.primaryOutput.empty() ||
      (!found(link.primaryOutput) && !found(outputInCheckout(link)))) {
    *kind = "new_output";
    return "no key stored before for this output";
  }
  std::vector<std::string> wasLocal(d.local_fields().begin(),
                                    d.local_fields().end());
  wasLocal.resize(static_cast<size_t>(d.key_fields_size()));
  size_t at = 0;
  if (std::string diff = firstDifference("argv", d.key_fields(), wasLocal,
                                         link.keyFields, link.localFields, &at);
      !diff.empty()) {
    // A path the key holds as given lies outside the base dir (the base
    // dir and the working directory are tokens in key fields).
    // COFF options start with '/' too ("/opt:noref", "/dll"): a path has
    // another '/' after the first.
    bool coff = link.requestKind == "coff" || link.requestKind == "lib";
    auto outside = [coff](std::string_view f) {
      if (coff && f.starts_with("/") &&
          f.find('/', 1) == std::string_view::npos)
        return false;
      return f.starts_with("/") || f.find("=/") != std::string_view::npos ||
             f.find(",/") != std::string_view::npos ||
             f.find(":/") != std::string_view::npos;
    };
    bool path = (at < static_cast<size_t>(d.key_fields_size()) &&
                 outside(d.key_fields(static_cast<int>(at)))) ||
                (at < link.keyFields.size() && outside(link.keyFields[at]));
    if (!path) {
      *kind = "argv";
      auto option = [coff](std::string_view f) {
        return f.starts_with("-") || (coff && f.starts_with("/"));
      };
      bool isOption =
          (at < static_cast<size_t>(d.key_fields_size()) &&
           option(d.key_fields(static_cast<int>(at)))) ||
          (at < link.keyFields.size() && option(link.keyFields[at]));
      return diff + (isOption ? " (an option)" : " (an argument)");
    }
    *kind = "outside_base_dir";
    return diff + (link.baseDir.empty()
                       ? " (a path, and no base dir is set)"
                       : " (a path outside the base dir " + link.baseDir + ")");
  }
  auto byName = [](const auto &list) {
    std::map<std::string, std::string> m;
    for (const std::string &e : list) {
      size_t eq = e.find('=');
      m[e.substr(0, eq)] = eq == std::string::npos ? "" : e.substr(eq + 1);
    }
    return m;
  };
  auto was = byName(d.env()), now = byName(link.env);
  // PWD counts only where it names the working directory (keyedPwd).
  if (auto w = was.find("PWD"), n = now.find("PWD");
      w != was.end() && n != now.end() && w->second != n->second) {
    *kind = "pwd";
    return "PWD: '" + w->second + "' -> '" + n->second +
           "' (PWD names the working directory; LLD uses its spelling)";
  }
  for (const auto &[name, value] : now)
    if (auto it = was.find(name); it == was.end() || it->second != value) {
      *kind = "env";
      return "env " + name + ": " +
             (it == was.end() ? "(unset)" : "'" + it->second + "'") + " -> '" +
             value + "'";
    }
  for (const auto &[name, value] : was)
    if (!now.count(name)) {
      *kind = "env";
      return "env " + name + ": '" + value + "' -> (unset)";
    }
  if (d.other() != link.other) {
    *kind = "other";
    return "'" + d.other() + "' -> '" + link.other + "'";
  }
  if (d.base_dir() != link.baseDir) {
    *kind = "base_dir";
    return "base dir '" + d.base_dir() + "' -> '" + link.baseDir + "'";
  }
  // A working directory the key left out differs only through the fields.
  if (d.cwd() != link.cwd && !link.paths.byId("C")) {
    *kind = "cwd";
    return "working directory '" + d.cwd() + "' -> '" + link.cwd + "'";
  }
  *kind = "input";
  // Which input, where both keys held the named inputs by content: in
  // order when there are as many (a temp object's name changes each time),
  // else by name.
  auto split = [](const std::string &e) { // the digest follows the last '='
    size_t eq = e.rfind('=');
    return eq == std::string::npos
               ? std::pair<std::string, std::string>{e, ""}
               : std::pair{e.substr(0, eq), e.substr(eq + 1)};
  };
  auto named = [](const std::string &name) {
    return "input '" + name +
           "' has other content (a link that names few files keys them by "
           "content)";
  };
  const auto &before = d.keyed_inputs();
  const std::vector<std::string> &after = link.keyedInputs;
  if (static_cast<size_t>(before.size()) == after.size()) {
    for (size_t i = 0; i < after.size(); ++i)
      if (split(before[static_cast<int>(i)]).second != split(after[i]).second)
        return named(split(after[i]).first);
  } else {
    std::map<std::string, std::string> was2;
    for (const std::string &e : before)
      was2.insert(split(e));
    for (const std::string &e : after)
      if (auto [name, digest] = split(e);
          was2.count(name) && was2[name] != digest)
        return named(name);
  }
  return "a file named on the command line has other content (a link that "
         "names few files keys them by content)";
}

std::string manifestMissKind(const std::string &why) {
  return why.starts_with("stored result embeds")     ? "embedded_name"
         : why.starts_with("stored result requires") ? "required_name"
                                                     : "input";
}

} // namespace linkd
