#include "link/response_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace linkd {
namespace {

bool isWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool readFile(const std::string &path, std::string &out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      close(fd);
      return false;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

void expandInto(const std::vector<std::string> &args, const std::string &cwd,
                int depth, ExpandedArgs &out) {
  for (const std::string &a : args) {
    if (a.size() > 1 && a[0] == '@' && depth < 20) {
      ResponseFile rf;
      rf.path = absolutePath(a.substr(1), cwd);
      if (readFile(rf.path, rf.content)) {
        std::vector<std::string> inner = tokenizeGnu(rf.content);
        out.files.push_back(std::move(rf));
        expandInto(inner, cwd, depth + 1, out);
        continue;
      }
    }
    out.args.push_back(a);
  }
}

} // namespace

std::vector<std::string> tokenizeGnu(std::string_view src) {
  std::vector<std::string> out;
  std::string token;
  bool inToken = false;
  for (size_t i = 0, e = src.size(); i != e; ++i) {
    char c = src[i];
    if (!inToken && isWhitespace(c))
      continue;
    if (c == '\\' && i + 1 < e) {
      token.push_back(src[++i]);
      inToken = true;
      continue;
    }
    if (c == '\'' || c == '"') {
      inToken = true;
      for (++i; i != e && src[i] != c; ++i) {
        if (src[i] == '\\' && i + 1 != e)
          ++i;
        token.push_back(src[i]);
      }
      if (i == e)
        break;
      continue;
    }
    if (isWhitespace(c)) {
      out.push_back(std::move(token));
      token.clear();
      inToken = false;
      continue;
    }
    token.push_back(c);
    inToken = true;
  }
  if (inToken)
    out.push_back(std::move(token));
  return out;
}

ExpandedArgs expandResponseFiles(const std::vector<std::string> &argv,
                                 const std::string &cwd) {
  ExpandedArgs out;
  if (argv.size() > 1)
    expandInto({argv.begin() + 1, argv.end()}, cwd, 0, out);
  return out;
}

std::string absolutePath(const std::string &path, const std::string &cwd) {
  if (!path.empty() && path[0] == '/')
    return path;
  return cwd + "/" + path;
}

} // namespace linkd
