// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "audit/audit_model.h"

#include <cctype>

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace linkd::audit {

namespace {

std::string kindName(char k) {
  return k == 'T'   ? "thread-local"
         : k == 'B' ? "zero-initialised data"
                    : "data";
}

std::string jsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// The qualified part of a demangled name before its parameters/templates.
std::string_view qualifiedHead(std::string_view d) {
  for (std::string_view p :
       {"guard variable for ", "thread-local wrapper routine for ",
        "TLS init function for "})
    if (d.starts_with(p))
      d.remove_prefix(p.size());
  size_t depth = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == '<')
      ++depth;
    else if (d[i] == '>' && depth)
      --depth;
    else if (d[i] == '(' && depth == 0)
      return d.substr(0, i);
  }
  return d;
}

} // namespace

std::string runtimeOf(const std::string &display) {
  std::string_view head = qualifiedHead(display);
  std::vector<std::string_view> parts;
  size_t depth = 0, start = 0;
  for (size_t i = 0; i + 1 < head.size(); ++i) {
    if (head[i] == '<')
      ++depth;
    else if (head[i] == '>' && depth)
      --depth;
    else if (depth == 0 && head[i] == ':' && head[i + 1] == ':') {
      parts.push_back(head.substr(start, i - start));
      start = i + 2;
      ++i;
    }
  }
  if (!parts.empty()) {
    std::string ns;
    for (size_t i = 0; i < parts.size() && i < 3; ++i)
      ns += (i ? "::" : "") + std::string(parts[i]);
    return ns;
  }
  size_t lead = display.find_first_not_of('_');
  size_t us = lead == std::string::npos ? lead : display.find('_', lead);
  if (us == std::string::npos || us + 1 >= display.size())
    return display;
  return display.substr(0, us + 1) + "*";
}

bool AllowList::allows(const Finding &f) const {
  for (const std::string &p : patterns)
    for (const std::string *s : {&f.name, &f.display, &f.runtime})
      if (fnmatch(p.c_str(), s->c_str(), 0) == 0)
        return true;
  return false;
}

bool parseAllowList(const std::string &text, AllowList &out,
                    std::string *error) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line =
        text.substr(pos, nl == std::string::npos ? nl : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
    if (size_t hash = line.find('#'); hash != std::string::npos)
      line.erase(hash);
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos)
      continue;
    size_t e = line.find_last_not_of(" \t\r");
    out.patterns.push_back(line.substr(b, e - b + 1));
  }
  (void)error;
  return true;
}

std::string fileStemOf(std::string_view file) {
  if (file.ends_with(")")) {
    size_t open = file.rfind('(');
    if (open != std::string_view::npos)
      file = file.substr(open + 1, file.size() - open - 2);
  }
  if (size_t slash = file.find_last_of("/\\"); slash != std::string_view::npos)
    file = file.substr(slash + 1);
  return std::string(file.substr(0, file.find('.')));
}

std::string recordedStemOf(std::string_view input) {
  std::string stem = fileStemOf(input);
  // A compiler driver's temporary object, made by a one-step `cc a.c rt.c
  // -o prog`: absolute, in a temp directory. Clang names it
  // <source stem>-XXXXXX.o, GCC ccXXXXXX.o (no trace of the source).
  bool temp = input.starts_with("/") && !input.ends_with(")") &&
              (input.find("/tmp/") != std::string_view::npos ||
               input.find("/temp/") != std::string_view::npos ||
               input.find("/Temp/") != std::string_view::npos);
  auto randomTail = [](std::string_view s) {
    return s.size() == 6 && std::all_of(s.begin(), s.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) != 0;
           });
  };
  if (!temp)
    return stem;
  if (size_t dash = stem.rfind('-');
      dash != std::string::npos && dash > 0 &&
      randomTail(std::string_view(stem).substr(dash + 1)))
    return stem.substr(0, dash);
  if (stem.size() == 8 && stem.starts_with("cc") &&
      randomTail(std::string_view(stem).substr(2)))
    return ""; // unknown: pairs by name alone
  return stem;
}

std::string plainVariableName(std::string_view n) {
  // A function's static: "<type> `<signature>'::`<n>'::<name>".
  if (size_t tick = n.find('`'); tick != std::string_view::npos) {
    size_t close = n.find('\'', tick);
    size_t last = n.rfind("::");
    if (close == std::string_view::npos || last == std::string_view::npos ||
        last < close)
      return std::string(n);
    std::string_view sig = n.substr(tick + 1, close - tick - 1);
    size_t paren = sig.find('(');
    std::string_view fn = sig.substr(0, paren);
    if (size_t sp = fn.rfind(' '); sp != std::string_view::npos)
      fn = fn.substr(sp + 1);
    return std::string(fn) + "::" + std::string(n.substr(last + 2));
  }
  if (n.find(' ') == std::string_view::npos)
    return std::string(n);
  // The last space outside <...> and (...) ends the type.
  int depth = 0;
  for (size_t i = n.size(); i-- > 0;) {
    char c = n[i];
    if (c == '>' || c == ')')
      ++depth;
    else if ((c == '<' || c == '(') && depth > 0)
      --depth;
    else if (c == ' ' && depth == 0) {
      std::string_view name = n.substr(i + 1);
      while (!name.empty() && (name[0] == '*' || name[0] == '&'))
        name.remove_prefix(1); // "struct Q *ns::queue"
      return std::string(name.empty() ? n : name);
    }
  }
  return std::string(n);
}

namespace {

// Copies of one name that are one piece of state: those from a file of the
// same stem, plus those whose file is unknown.
std::vector<std::vector<Copy>> clustersOf(const std::vector<Copy> &copies) {
  std::map<std::string, std::vector<Copy>> byStem;
  std::vector<Copy> anywhere;
  for (const Copy &c : copies)
    (c.def->fileStem.empty() ? anywhere : byStem[c.def->fileStem]).push_back(c);
  std::vector<std::vector<Copy>> out;
  if (byStem.empty())
    out.push_back(anywhere);
  for (auto &[stem, list] : byStem) {
    list.insert(list.end(), anywhere.begin(), anywhere.end());
    std::sort(list.begin(), list.end(),
              [](const Copy &a, const Copy &b) { return a.module < b.module; });
    out.push_back(std::move(list));
  }
  return out;
}

size_t instancesOf(const std::vector<Copy> &copies) {
  bool anyShared = false;
  size_t privates = 0;
  std::set<size_t> modules;
  for (const Copy &c : copies) {
    modules.insert(c.module);
    if (c.def->shared)
      anyShared = true;
    else
      ++privates;
  }
  return modules.size() < 2 ? 0 : privates + (anyShared ? 1 : 0);
}

} // namespace

std::vector<Finding> findDuplicates(const std::vector<AuditModule> &modules,
                                    const AllowList &allow, size_t *allowed) {
  std::map<std::string, std::vector<Copy>> byName;
  for (size_t m = 0; m < modules.size(); ++m) {
    std::set<std::string> seen; // one copy per module, name and file
    for (const StateDef &d : modules[m].defs)
      if (!d.interposed && seen.insert(d.display + '\0' + d.fileStem).second)
        byName[d.display].push_back({m, &d}); // link records hold no others
  }
  std::vector<Finding> out;
  size_t allowedCount = 0;
  for (auto &[name, copies] : byName) {
    if (copies.size() < 2)
      continue;
    for (std::vector<Copy> &cluster : clustersOf(copies)) {
      Finding f;
      f.instances = instancesOf(cluster);
      if (f.instances < 2)
        continue;
      f.name = cluster.front().def->name;
      f.display = name;
      f.kind = cluster.front().def->kind;
      for (const Copy &c : cluster)
        if (!c.def->fileStem.empty())
          f.fileStem = c.def->fileStem;
      f.runtime = runtimeOf(f.display);
      f.copies = std::move(cluster);
      if (allow.allows(f))
        ++allowedCount;
      else
        out.push_back(std::move(f));
    }
  }
  // byName is ordered, so ties keep name order.
  std::sort(out.begin(), out.end(), [](const Finding &a, const Finding &b) {
    return std::tie(a.runtime, a.name, a.fileStem) <
           std::tie(b.runtime, b.name, b.fileStem);
  });
  if (allowed)
    *allowed = allowedCount;
  return out;
}

std::vector<std::string> Report::incomplete() const {
  std::vector<std::string> out;
  for (const AuditModule &m : modules)
    if (!m.inspectable && !m.system)
      out.push_back(m.path);
  for (const NotFollowed &n : notFollowed)
    if (n.incomplete)
      out.push_back(n.text.substr(0, n.text.find(" (")));
  return out;
}

int exitStatus(const Report &r, bool allowIncomplete) {
  if (!r.findings.empty())
    return kExitFound;
  if (!allowIncomplete && !r.incomplete().empty())
    return kExitIncomplete;
  return 0;
}

namespace {

// How to give the audit what it lacks for a module without symbols.
constexpr const char *kRecordHint =
    "link it through linkd (PE images are recorded by default; ELF with "
    "LINKD_AUDIT_RECORD=1 in the daemon's environment), or audit the "
    "unstripped module";

std::string headline(const Report &r) {
  std::vector<std::string> missing = r.incomplete();
  std::string out = "linkd audit: " + r.program + ": ";
  if (!missing.empty())
    out += "incomplete: " + std::to_string(missing.size()) +
           (missing.size() == 1 ? " module" : " modules") +
           " not inspected (listed below); ";
  if (r.findings.empty()) {
    size_t seen = 0;
    for (const AuditModule &m : r.modules)
      seen += m.inspectable || m.system ? 1 : 0;
    return out + "no state duplicated across " +
           (missing.empty() ? "its " : "the ") + std::to_string(seen) +
           (missing.empty() ? " modules\n" : " modules it could inspect\n");
  }
  std::set<std::string> runtimes;
  for (const Finding &f : r.findings)
    runtimes.insert(f.runtime);
  return out + std::to_string(r.findings.size()) +
         " state symbols in more than one copy, " +
         std::to_string(runtimes.size()) + " runtimes\n";
}

} // namespace

std::string formatText(const Report &r) {
  std::string out = headline(r);
  std::map<std::string, std::vector<const Finding *>> groups;
  for (const Finding &f : r.findings)
    groups[f.runtime].push_back(&f);
  for (const auto &[runtime, list] : groups) {
    std::set<size_t> mods;
    for (const Finding *f : list)
      for (const Copy &c : f->copies)
        mods.insert(c.module);
    out += "\nruntime " + runtime + ": " + std::to_string(list.size()) +
           " symbols, copies in " + std::to_string(mods.size()) + " modules\n";
    for (const Finding *f : list) {
      out += "  " + f->display;
      if (f->display != f->name)
        out += " (" + f->name + ")";
      if (!f->fileStem.empty())
        out += " [" + f->fileStem + "]";
      out += ", " + kindName(f->kind) + ", " + std::to_string(f->instances) +
             " copies at run time\n";
      for (const Copy &c : f->copies)
        out += "    " + r.modules[c.module].path + ": " + c.def->why + "\n";
    }
  }
  std::string bound;
  for (const AuditModule &m : r.modules)
    for (const StateDef &d : m.defs)
      if (d.interposed)
        bound += "  " + m.path + ": " + d.display +
                 (d.fileStem.empty() ? "" : " [" + d.fileStem + "]") + ": " +
                 d.why + "\n";
  if (!bound.empty())
    out += "\none copy at run time (the loader interposes):\n" + bound;
  if (r.allowed)
    out += "\n" + std::to_string(r.allowed) +
           " duplicated symbols allowed by --allow\n";
  out += "\nmodules:\n";
  for (const AuditModule &m : r.modules)
    out += "  " + m.path + " (" + m.format + ", " + m.how + "; " + m.source +
           ")\n";
  for (const AuditModule &m : r.modules)
    if (!m.inspectable && !m.system)
      out += "not inspectable: " + m.path +
             ": no symbol table and no link record (only its exports were "
             "seen; state it keeps private cannot be checked): " +
             kRecordHint + "\n";
  for (const NotFollowed &n : r.notFollowed)
    out += "not followed: " + n.text + "\n";
  return out;
}

std::string formatJson(const Report &r) {
  std::string out = "{\"program\":" + jsonString(r.program) + ",\"modules\":[";
  for (size_t i = 0; i < r.modules.size(); ++i) {
    const AuditModule &m = r.modules[i];
    out += std::string(i ? "," : "") + "{\"path\":" + jsonString(m.path) +
           ",\"format\":" + jsonString(m.format) +
           ",\"how\":" + jsonString(m.how) +
           ",\"source\":" + jsonString(m.source) +
           ",\"inspectable\":" + (m.inspectable ? "true" : "false") +
           ",\"system\":" + (m.system ? "true" : "false") +
           ",\"state_symbols\":" + std::to_string(m.defs.size()) + "}";
  }
  out += "],\"findings\":[";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding &f = r.findings[i];
    out += std::string(i ? "," : "") + "{\"runtime\":" + jsonString(f.runtime) +
           ",\"symbol\":" + jsonString(f.name) +
           ",\"demangled\":" + jsonString(f.display) +
           ",\"kind\":" + jsonString(kindName(f.kind)) +
           ",\"instances\":" + std::to_string(f.instances) + ",\"copies\":[";
    for (size_t j = 0; j < f.copies.size(); ++j) {
      const Copy &c = f.copies[j];
      out += std::string(j ? "," : "") +
             "{\"module\":" + jsonString(r.modules[c.module].path) +
             ",\"shared\":" + (c.def->shared ? "true" : "false") +
             ",\"why\":" + jsonString(c.def->why) + "}";
    }
    out += "]}";
  }
  out += "],\"interposed\":[";
  bool first = true;
  for (const AuditModule &m : r.modules)
    for (const StateDef &d : m.defs)
      if (d.interposed) {
        out += std::string(first ? "" : ",") +
               "{\"module\":" + jsonString(m.path) +
               ",\"symbol\":" + jsonString(d.name) +
               ",\"why\":" + jsonString(d.why) + "}";
        first = false;
      }
  out += "],\"allowed\":" + std::to_string(r.allowed) + ",\"not_followed\":[";
  for (size_t i = 0; i < r.notFollowed.size(); ++i)
    out += std::string(i ? "," : "") + jsonString(r.notFollowed[i].text);
  out += "],\"incomplete\":[";
  std::vector<std::string> missing = r.incomplete();
  for (size_t i = 0; i < missing.size(); ++i)
    out += std::string(i ? "," : "") + jsonString(missing[i]);
  return out + "]}\n";
}

} // namespace linkd::audit
