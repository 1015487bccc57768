// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "link/response_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace linkd {
namespace {

bool isWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// Reads a response file the way the daemon may: never blocking (a FIFO or
// a device is not read at all; the link child, which reads it as LLD does,
// behaves like stock), and never more than `budget` bytes in all.
enum class Read { Ok, Absent, Special, TooBig };
Read readFile(const std::string &path, std::string &out, size_t &budget) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return errno == ENXIO ? Read::Special : Read::Absent;
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bool dir = S_ISDIR(st.st_mode);
    close(fd);
    return dir ? Read::Absent : Read::Special;
  }
  if (static_cast<uint64_t>(st.st_size) > budget) {
    close(fd);
    return Read::TooBig;
  }
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      close(fd);
      return Read::Absent;
    }
    if (n == 0)
      break;
    if (static_cast<size_t>(n) > budget) { // it grew while we read
      close(fd);
      return Read::TooBig;
    }
    budget -= static_cast<size_t>(n);
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return Read::Ok;
}

void expandInto(const std::vector<std::string> &args, const std::string &cwd,
                int depth, ExpandedArgs &out) {
  for (const std::string &a : args) {
    if (a.size() > 1 && a[0] == '@' && depth < 20) {
      ResponseFile rf;
      rf.path = absolutePath(a.substr(1), cwd);
      Read r = readFile(rf.path, rf.content, out.budget);
      if (r == Read::Ok) {
        std::vector<std::string> inner = tokenizeGnu(rf.content);
        out.files.push_back(std::move(rf));
        expandInto(inner, cwd, depth + 1, out);
        continue;
      }
      if (r != Read::Absent && out.unread.empty())
        out.unread = r == Read::Special
                         ? "response file " + rf.path +
                               " is not a regular file"
                         : "response files larger than " +
                               std::to_string(kMaxResponseFileBytes >> 20) +
                               " MiB";
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

std::string withoutDotComponents(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  size_t i = 0;
  while (i < path.size()) {
    size_t end = path.find('/', i);
    if (end == std::string_view::npos)
      end = path.size();
    std::string_view part = path.substr(i, end - i);
    if (i == 0 && part.empty())
      out += '/'; // absolute
    else if (!part.empty() && part != ".") {
      if (!out.empty() && out.back() != '/')
        out += '/';
      out += part;
    }
    i = end + 1;
  }
  if (out.empty() && !path.empty())
    out = path[0] == '/' ? "/" : ".";
  return out;
}

} // namespace linkd
