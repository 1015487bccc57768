// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Parsing of link-time rewrite specs (see link_spec.h).
#include "rewrite/link_spec.h"

#include "link/response_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>

namespace linkd::rewrite {
namespace {

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A spec is read by the daemon itself (a link's other files are read by its
// child): a regular file of at most 16 MiB, never a FIFO or a device, which
// would block the daemon's thread for good or fill its heap (`/dev/zero`).
bool readText(const std::string &path, std::string *out, std::string *error) {
  constexpr off_t kMaxSpecBytes = 16 << 20;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size > kMaxSpecBytes) {
    *error = path + (S_ISREG(st.st_mode) ? ": larger than 16 MiB"
                                         : ": not a regular file");
    close(fd);
    return false;
  }
  out->clear();
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || out->size() + n > static_cast<size_t>(kMaxSpecBytes)) {
      if (n != 0)
        *error =
            path + (n < 0 ? ": cannot read: " + std::string(strerror(errno))
                          : std::string(": larger than 16 MiB"));
      close(fd);
      return n == 0;
    }
    out->append(buf, static_cast<size_t>(n));
  }
}

} // namespace

std::optional<LinkRewriteSpec> loadLinkRewriteSpec(const std::string &path,
                                                   const std::string &cwd,
                                                   std::string *error) {
  LinkRewriteSpec out;
  std::string file = absolutePath(path, cwd);
  std::string text;
  if (!readText(file, &text, error))
    return std::nullopt;
  out.specFiles.push_back(file);
  std::string base = dirOf(file);
  auto fail = [&](int line, const std::string &msg) {
    *error = file + ":" + std::to_string(line) + ": " + msg;
    return std::nullopt;
  };
  std::istringstream lines(text);
  std::string raw;
  for (int n = 1; std::getline(lines, raw); ++n) {
    std::string_view l = trim(raw);
    if (l.empty() || l[0] == '#')
      continue;
    size_t eq = l.find('=');
    if (eq == std::string_view::npos)
      return fail(n, "expected 'key = value', got '" + std::string(l) + "'");
    std::string key(trim(l.substr(0, eq)));
    std::string value(trim(l.substr(eq + 1)));
    if (key == "match") {
      out.spec.match = value;
    } else if (key == "export-prefix") {
      out.spec.exportPrefix = value;
    } else if (key == "import-prefix") {
      out.spec.importPrefix = value;
    } else if (key == "internal-prefix") {
      out.spec.internalPrefix = value;
    } else if (key == "rename") {
      if (std::string err = addRename(out.spec, value); !err.empty())
        return fail(n, "rename: " + err);
    } else if (key == "rename-file") {
      if (value.empty())
        return fail(n, key + ": empty path");
      std::string renames = absolutePath(value, base), renameText;
      if (!readText(renames, &renameText, error))
        return std::nullopt;
      if (std::string err = parseRenameFile(out.spec, renameText, renames);
          !err.empty()) {
        *error = err;
        return std::nullopt;
      }
      out.specFiles.push_back(renames);
    } else if (key == "runtime" || key == "kernel" || key == "input") {
      if (value.empty())
        return fail(n, key + ": empty path");
      Scope scope = key == "runtime"  ? Scope::Runtime
                    : key == "kernel" ? Scope::Kernel
                                      : Scope::Other;
      out.inputs.push_back({absolutePath(value, base), scope});
    } else {
      return fail(n, "unknown key '" + key +
                         "' (match, export-prefix, import-prefix, "
                         "internal-prefix, rename, rename-file, runtime, "
                         "kernel, input)");
    }
  }
  if (out.inputs.empty()) {
    *error = file + ": no inputs (runtime, kernel or input)";
    return std::nullopt;
  }
  if (std::string err = validate(out.spec); !err.empty()) {
    *error = file + ": " + err;
    return std::nullopt;
  }
  return out;
}

std::string
checkSpecsDisjoint(const std::vector<std::string> &specPaths,
                   const std::vector<std::vector<std::string>> &inputs) {
  std::map<std::pair<dev_t, ino_t>, std::pair<size_t, std::string>> seen;
  for (size_t i = 0; i < inputs.size(); ++i)
    for (const std::string &path : inputs[i]) {
      struct stat st {};
      if (stat(path.c_str(), &st) != 0)
        continue; // the spec's own loading reports it
      auto [it, fresh] = seen.emplace(std::make_pair(st.st_dev, st.st_ino),
                                      std::make_pair(i, path));
      if (!fresh && it->second.first != i)
        return path + ": an input of two rewrite specs (" +
               specPaths[it->second.first] + " and " + specPaths[i] +
               "); a file is read in one rewritten form, so each copy needs a "
               "file of its own";
    }
  return {};
}

} // namespace linkd::rewrite
