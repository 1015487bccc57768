// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/link_names.h"

#include <algorithm>

namespace linkd {
namespace {

constexpr char kOpen = '\x01';
constexpr char kClose = '\x02';

bool isPrefixRole(NameRole r) {
  return r == NameRole::SearchDir || r == NameRole::Cwd ||
         r == NameRole::BaseDir;
}

// A character that may stand before a name in a diagnostic ("cannot open
// NAME", "'NAME'", "NAME(member.o)", "--version-script=NAME").
bool opensWord(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\'' || c == '"' ||
         c == '`' || c == '(' || c == '[' || c == '<' || c == '=' ||
         c == ':' || c == ',' || c == '@';
}

bool closesWord(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\'' ||
         c == '"' || c == '`' || c == ')' || c == '(' || c == ']' ||
         c == '>' || c == ':' || c == ',' || c == ';';
}

// Replaces `from` by `to` where it is a whole path prefix of a word
// (preceded by a word start, followed by '/', a word end or the end).
std::string replacePrefix(const std::string &text, const std::string &from,
                          const std::string &to) {
  if (from.empty() || from == "/")
    return text;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string::npos;) {
    size_t end = hit + from.size();
    bool ok = end == text.size() || text[end] == '/' || closesWord(text[end]);
    out.append(text, pos, hit - pos);
    out.append(ok ? to : from);
    pos = end;
  }
  out.append(text, pos);
  return out;
}

// The end of the path that starts at `begin` (the next character that ends
// a word in a diagnostic or an option list).
size_t pathEnd(const std::string &text, size_t begin) {
  size_t end = begin;
  while (end < text.size() && !closesWord(text[end]))
    ++end;
  return end;
}

// ccache's base dir: every path under `baseDir` (ending at a path boundary)
// becomes the working directory's token and the path relative to it.
std::string relativePrefixes(const std::string &text, const std::string &cwd,
                             const std::string &baseDir) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(baseDir, pos)) != std::string::npos;) {
    size_t end = hit + baseDir.size();
    out.append(text, pos, hit - pos);
    if (end != text.size() && text[end] != '/' && !closesWord(text[end])) {
      out.append(baseDir);
      pos = end;
      continue;
    }
    size_t stop = pathEnd(text, hit);
    std::string rel =
        relativePath(cwd, std::string_view(text).substr(hit, stop - hit));
    out += PathMapper::token("C");
    if (!rel.empty())
      out += "/" + rel;
    pos = stop;
  }
  out.append(text, pos);
  return out;
}

std::string withoutTrailingSlashes(std::string s) {
  while (s.size() > 1 && s.back() == '/')
    s.pop_back();
  return s;
}

} // namespace

bool isUnder(std::string_view path, std::string_view dir) {
  return path == dir || (path.size() > dir.size() && path.starts_with(dir) &&
                         path[dir.size()] == '/');
}

std::string relativePath(std::string_view from, std::string_view path) {
  auto split = [](std::string_view s) {
    std::vector<std::string_view> parts;
    for (size_t i = 0; i < s.size();) {
      size_t j = s.find('/', i);
      if (j == std::string_view::npos)
        j = s.size();
      if (std::string_view part = s.substr(i, j - i);
          !part.empty() && part != ".")
        parts.push_back(part);
      i = j + 1;
    }
    return parts;
  };
  std::vector<std::string_view> a = split(from), b = split(path);
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common] &&
         b[common] != "..")
    ++common;
  std::string out;
  for (size_t i = common; i < a.size(); ++i)
    out += out.empty() ? ".." : "/..";
  for (size_t i = common; i < b.size(); ++i) {
    if (!out.empty())
      out += '/';
    out.append(b[i]);
  }
  return out;
}

PathMapper::PathMapper(std::vector<LeftOutName> names) : list(std::move(names)) {
  for (LeftOutName &n : list)
    for (std::string *s : {&n.absolute, &n.spelling})
      while (isPrefixRole(n.role) && s->size() > 1 && s->back() == '/')
        s->pop_back();
  // "/" as a prefix would stand for everything; it is not left out.
  std::erase_if(list, [](const LeftOutName &n) {
    return n.spelling.empty() || n.absolute.empty() ||
           (isPrefixRole(n.role) && n.absolute == "/");
  });
  for (size_t i = 0; i < list.size(); ++i) {
    const LeftOutName &n = list[i];
    int idx = static_cast<int>(i);
    if (n.id == "C")
      cwdIndex = idx;
    else if (n.id == "B")
      baseIndex = idx;
    else if (!n.id.empty() &&
             std::all_of(n.id.begin(), n.id.end(),
                         [](char c) { return c >= '0' && c <= '9'; }) &&
             n.id.size() < 9) {
      size_t num = std::stoul(n.id);
      if (byNumber.size() <= num)
        byNumber.resize(num + 1, -1);
      byNumber[num] = idx;
    }
    if (isPrefixRole(n.role))
      prefixes.push_back(idx);
    else
      wholeByAbsolute.emplace(n.absolute, idx); // the first of equal names
  }
  relative = cwdIndex >= 0 && baseIndex >= 0 &&
             isUnder(list[static_cast<size_t>(cwdIndex)].absolute,
                     list[static_cast<size_t>(baseIndex)].absolute);
}

PathMapper PathMapper::forBaseDir(const std::string &baseDir) {
  return PathMapper({{NameRole::BaseDir, "B", baseDir, baseDir, ""}});
}

std::string PathMapper::token(std::string_view id) {
  std::string t(1, kOpen);
  t.append(id);
  t.push_back(kClose);
  return t;
}

const LeftOutName *PathMapper::byId(std::string_view id) const {
  int idx = -1;
  if (id == "C")
    idx = cwdIndex;
  else if (id == "B")
    idx = baseIndex;
  else if (!id.empty() && id.size() < 9 &&
           std::all_of(id.begin(), id.end(),
                       [](char c) { return c >= '0' && c <= '9'; })) {
    size_t num = std::stoul(std::string(id));
    idx = num < byNumber.size() ? byNumber[num] : -1;
  }
  return idx < 0 ? nullptr : &list[static_cast<size_t>(idx)];
}

std::string PathMapper::toStored(const std::string &path) const {
  const LeftOutName *best = nullptr;
  if (auto it = wholeByAbsolute.find(path); it != wholeByAbsolute.end())
    best = &list[static_cast<size_t>(it->second)];
  else
    for (int i : prefixes) {
      const LeftOutName &n = list[static_cast<size_t>(i)];
      const std::string &f = n.absolute;
      bool match = path == f || (path.size() > f.size() &&
                                 path.starts_with(f) && path[f.size()] == '/');
      if (match && (!best || f.size() > best->absolute.size()))
        best = &n;
    }
  if (!best)
    return path;
  if (relative && best->role == NameRole::BaseDir) {
    std::string rel =
        relativePath(list[static_cast<size_t>(cwdIndex)].absolute, path);
    return token("C") + (rel.empty() ? "" : "/" + rel);
  }
  bool spelledRelative = best->spelling != best->absolute;
  return token(spelledRelative ? best->id + "a" : best->id) +
         path.substr(best->absolute.size());
}

std::string PathMapper::toStoredText(const std::string &text,
                                     std::set<std::string> *embedded) const {
  if (list.empty() || text.empty())
    return text;
  struct Form {
    const std::string *text;
    std::string token;
    const LeftOutName *name;
    size_t order = 0;
  };
  std::vector<Form> forms;
  for (const LeftOutName &n : list) {
    forms.push_back({&n.absolute,
                     token(n.spelling != n.absolute ? n.id + "a" : n.id), &n,
                     0});
    if (n.spelling != n.absolute)
      forms.push_back({&n.spelling, token(n.id), &n, 0});
  }
  // Longest first; ties keep the names' order (sort by both: stable_sort's
  // temporary buffer is deprecated in this libstdc++).
  for (size_t k = 0; k < forms.size(); ++k)
    forms[k].order = k;
  std::sort(forms.begin(), forms.end(), [](const Form &a, const Form &b) {
    return a.text->size() != b.text->size() ? a.text->size() > b.text->size()
                                            : a.order < b.order;
  });
  bool firstChar[256] = {};
  for (const Form &f : forms)
    firstChar[static_cast<unsigned char>((*f.text)[0])] = true;
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const Form *hit = nullptr;
    if (firstChar[static_cast<unsigned char>(text[i])]) {
      for (const Form &f : forms) {
        const std::string &s = *f.text;
        if (text.compare(i, s.size(), s) != 0)
          continue;
        size_t end = i + s.size();
        bool starts = i == 0 || opensWord(text[i - 1]);
        bool prefix = isPrefixRole(f.name->role);
        bool ends = end == text.size() || closesWord(text[end]) ||
                    (prefix && text[end] == '/');
        // A path under the base dir but outside the working directory
        // would replay as "cwd/../x", not as LLD prints it: the text
        // depends on where the link ran.
        bool relativeBase = relative && f.name->role == NameRole::BaseDir;
        if (starts && ends && !relativeBase) {
          hit = &f;
          break;
        }
        if (embedded)
          embedded->insert(f.name->id); // inside a longer word
      }
    }
    if (hit) {
      out += hit->token;
      i += hit->text->size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

std::string PathMapper::toLocal(const std::string &text) const {
  if (text.find(kOpen) == std::string::npos)
    return text;
  std::string out;
  size_t pos = 0;
  for (size_t open; (open = text.find(kOpen, pos)) != std::string::npos;) {
    size_t close = text.find(kClose, open + 1);
    if (close == std::string::npos)
      break;
    out.append(text, pos, open - pos);
    std::string_view id(text.data() + open + 1, close - open - 1);
    bool absolute = id.size() > 1 && id.back() == 'a';
    if (absolute)
      id.remove_suffix(1);
    const LeftOutName *n = byId(id);
    if (!n) {
      out.append(text, open, close + 1 - open); // not ours: left as is
      pos = close + 1;
      continue;
    }
    std::string name = absolute ? n->absolute : n->spelling;
    pos = close + 1;
    // "C/../x" (a path under the base dir, stored relative to the working
    // directory): the working directory has no symbolic links (getcwd), so
    // its parent is what ".." names; give the path as LLD was given it.
    if (n->role == NameRole::Cwd)
      while (text.compare(pos, 3, "/..") == 0 &&
             (pos + 3 == text.size() || text[pos + 3] == '/' ||
              closesWord(text[pos + 3])) &&
             name.size() > 1) {
        size_t slash = name.rfind('/');
        name.resize(slash == 0 ? 1 : slash);
        pos += 3;
      }
    if (name == "/" && pos < text.size() && text[pos] == '/')
      name.clear(); // "/" + "/x"
    out += name;
  }
  out.append(text, pos);
  return out;
}

std::string storedPrefixes(const std::string &text, const std::string &cwd,
                           const std::string &baseDirAsGiven) {
  std::string baseDir = withoutTrailingSlashes(baseDirAsGiven);
  if (!baseDir.empty() && baseDir != "/" && isUnder(cwd, baseDir))
    return relativePrefixes(text, cwd, baseDir);
  // The longer first: the working directory usually lies under the base.
  const std::string *first = &cwd, *second = &baseDir;
  std::string firstTok = PathMapper::token("C"),
              secondTok = PathMapper::token("B");
  if (baseDir.size() > cwd.size()) {
    std::swap(first, second);
    std::swap(firstTok, secondTok);
  }
  return replacePrefix(replacePrefix(text, *first, firstTok), *second,
                       secondTok);
}

} // namespace linkd
