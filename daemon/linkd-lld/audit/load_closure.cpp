// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/audit/load_closure.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <string_view>

namespace linkd::audit {

namespace {

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string realPath(const std::string &p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string replaceToken(std::string s, const std::string &token,
                         const std::string &value) {
  for (const std::string &t : {"${" + token.substr(1) + "}", token}) {
    for (size_t at = s.find(t); at != std::string::npos; at = s.find(t, at)) {
      s.replace(at, t.size(), value);
      at += value.size();
    }
  }
  return s;
}

// The entries of a ':'- (or ';'-) separated list, empty ones left out.
void splitList(const std::string &list, std::vector<std::string> &out) {
  size_t start = 0;
  while (start < list.size()) {
    size_t c = list.find_first_of(":;", start);
    if (c == std::string::npos)
      c = list.size();
    if (c > start)
      out.push_back(list.substr(start, c - start));
    start = c + 1;
  }
}

// A file named `name` in `dir`, compared without case (Windows).
std::string findNoCase(const std::string &dir, const std::string &name) {
  std::string want = lower(name);
  std::string found;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (lower(e->d_name) == want && isRegularFile(dir + "/" + e->d_name)) {
        found = dir + "/" + e->d_name;
        break;
      }
    closedir(d);
  }
  return found;
}

struct Search {
  const ClosureOptions &opts;
  Closure &out;
  std::set<std::string> loadedPaths; // real paths
  std::set<std::string> loadedNames; // SONAMEs and base names
  std::deque<size_t> queue;
  // What the search learnt of the file system, so that a module's N needs
  // over M search directories cost N x M lookups in memory, not N x M
  // system calls (a module with 2000 missing DT_NEEDED and a 2000-entry
  // DT_RUNPATH took 41 s): whether a directory exists, and each module's
  // $ORIGIN.
  std::map<std::string, bool> directoryExists;
  std::map<size_t, std::string> originOf;

  bool directoryThere(const std::string &dir) {
    auto [it, fresh] = directoryExists.emplace(dir, false);
    if (fresh) {
      struct stat st;
      it->second = stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    return it->second;
  }

  const std::string &moduleOrigin(size_t i) {
    auto [it, fresh] = originOf.emplace(i, std::string());
    if (fresh)
      it->second = dirOf(realPath(out.modules[i].info.path));
    return it->second;
  }

  // Reads `path` as a module the loader would accept for `machine` (empty:
  // any). Sets `mismatch` when it exists but is for another machine.
  std::optional<ModuleInfo> tryModule(const std::string &path,
                                      const std::string &machine,
                                      std::string *mismatch) {
    if (!directoryThere(dirOf(path)) || !isRegularFile(path))
      return std::nullopt;
    std::string error;
    auto info = readModule(path, &error);
    if (!info) {
      if (mismatch)
        *mismatch = error;
      return std::nullopt;
    }
    if (!machine.empty() && info->machine != machine) {
      if (mismatch)
        *mismatch = path + ": for " + info->machine + ", not " + machine;
      return std::nullopt;
    }
    return info;
  }

  void add(ModuleInfo info, std::string how, size_t loader,
           bool system = false) {
    std::string real = realPath(info.path);
    if (!loadedPaths.insert(real).second)
      return;
    if (!info.soname.empty())
      loadedNames.insert(info.soname);
    loadedNames.insert(baseOf(info.path));
    out.modules.push_back({std::move(info), std::move(how), loader, system});
    queue.push_back(out.modules.size() - 1);
  }

  void root(const std::string &path, const std::string &how) {
    std::string error;
    auto info = readModule(path, &error);
    if (!info) {
      out.errors.push_back(error);
      return;
    }
    if (!out.modules.empty() && info->machine != out.modules[0].info.machine) {
      out.errors.push_back(path + ": for " + info->machine +
                           ", the program is for " +
                           out.modules[0].info.machine);
      return;
    }
    add(std::move(*info), how, SIZE_MAX);
  }

  std::vector<std::string> elfDefaultDirs(const std::string &machine) {
    std::string triple = machine.starts_with("aarch64")  ? "aarch64-linux-gnu"
                         : machine.starts_with("x86_64") ? "x86_64-linux-gnu"
                         : machine.starts_with("i386")   ? "i386-linux-gnu"
                                                         : "";
    std::vector<std::string> dirs;
    if (!triple.empty())
      dirs = {"/lib/" + triple, "/usr/lib/" + triple};
    for (const char *d :
         {"/usr/local/lib", "/lib64", "/usr/lib64", "/lib", "/usr/lib"})
      dirs.push_back(d);
    return dirs;
  }

  using Candidates = std::vector<std::pair<std::string, std::string>>;
  static constexpr const char *kDefaultDirectory = "default directory";

  // Where ld.so looks for `name` needed by module `idx`, in order, each
  // with how it was found.
  Candidates elfCandidates(size_t idx, const std::string &name) {
    const ModuleInfo &info = out.modules[idx].info;
    auto origin = [&](size_t i, const std::string &p) {
      return p.find("ORIGIN") == std::string::npos
                 ? p
                 : replaceToken(p, "$ORIGIN", moduleOrigin(i));
    };
    Candidates c;
    if (name.find('/') != std::string::npos)
      return {{origin(idx, name), "path"}};
    if (info.runpath.empty()) // DT_RPATH of the loading chain
      for (size_t i = idx; i != SIZE_MAX; i = out.modules[i].loader)
        for (const std::string &d : out.modules[i].info.rpath)
          c.push_back({origin(i, d) + "/" + name, "DT_RPATH " + d});
    std::vector<std::string> ld;
    splitList(opts.ldLibraryPath, ld);
    for (const std::string &d : ld)
      c.push_back({d + "/" + name, "LD_LIBRARY_PATH"});
    for (const std::string &d : info.runpath)
      c.push_back({origin(idx, d) + "/" + name, "DT_RUNPATH " + d});
    for (const std::string &d : elfDefaultDirs(info.machine))
      c.push_back({d + "/" + name, kDefaultDirectory});
    for (const std::string &d : opts.searchDirs)
      c.push_back({d + "/" + name, "--search"});
    return c;
  }

  void followElf(size_t idx, const std::string &name) {
    if (name.find('/') == std::string::npos && loadedNames.count(name))
      return; // ld.so: a loaded SONAME satisfies the need
    std::string machine = out.modules[idx].info.machine;
    std::string needer = out.modules[idx].info.path;
    std::string mismatch;
    for (const auto &[path, how] : elfCandidates(idx, name)) {
      std::string why;
      if (auto info = tryModule(path, machine, &why)) {
        add(std::move(*info), "DT_NEEDED of " + needer + " (" + how + ")", idx,
            how == kDefaultDirectory);
        return;
      }
      if (!why.empty() && mismatch.empty())
        mismatch = why;
    }
    // ld.so would refuse to start the program: never a clean audit.
    out.notFollowed.push_back({name + " (needed by " + needer + "): " +
                                   (mismatch.empty() ? "not found" : mismatch),
                               true});
  }

  void followPe(size_t idx, const std::string &name) {
    const LoadedModule &mod = out.modules[idx];
    std::string lname = lower(name);
    if (lname.starts_with("api-ms-win-") || lname.starts_with("ext-ms-"))
      return; // API sets: resolved by the system
    if (loadedNames.count(lname))
      return;
    std::vector<std::string> dirs = {dirOf(opts.program)};
    dirs.insert(dirs.end(), opts.searchDirs.begin(), opts.searchDirs.end());
    std::string mismatch;
    for (size_t i = 0; i < dirs.size(); ++i) {
      std::string path = findNoCase(dirs[i], name);
      if (path.empty())
        continue;
      std::string why;
      if (auto info = tryModule(path, mod.info.machine, &why)) {
        loadedNames.insert(lname);
        add(std::move(*info),
            "imported by " + mod.info.path +
                (i == 0 ? " (program's directory)" : " (--search)"),
            idx);
        return;
      }
      if (mismatch.empty())
        mismatch = why;
    }
    loadedNames.insert(lname);
    bool system = mismatch.empty() && isWindowsSystemDll(lname);
    out.notFollowed.push_back(
        {name + " (imported by " + mod.info.path + "): " +
             (!mismatch.empty() ? mismatch
              : system          ? "a system DLL"
                       : "not in the program's directory or a --search "
                         "directory"),
         !system});
  }

  void followMachO(size_t idx, const std::string &name) {
    const LoadedModule &mod = out.modules[idx];
    std::vector<std::string> candidates;
    std::string exeDir = dirOf(opts.program);
    std::string loaderDir = dirOf(mod.info.path);
    auto expand = [&](std::string p, const std::string &loader) {
      p = replaceToken(p, "@executable_path", exeDir);
      return replaceToken(p, "@loader_path", loader);
    };
    if (name.starts_with("@rpath/")) {
      for (size_t i = idx; i != SIZE_MAX; i = out.modules[i].loader)
        for (const std::string &r : out.modules[i].info.rpath)
          candidates.push_back(expand(r, dirOf(out.modules[i].info.path)) +
                               name.substr(6));
    } else {
      candidates.push_back(expand(name, loaderDir));
    }
    for (const std::string &d : opts.searchDirs)
      candidates.push_back(d + "/" + baseOf(name));
    if (loadedNames.count(name))
      return;
    for (const std::string &c : candidates)
      if (auto info = tryModule(c, mod.info.machine, nullptr)) {
        loadedNames.insert(name);
        add(std::move(*info), "LC_LOAD_DYLIB of " + mod.info.path, idx);
        return;
      }
    loadedNames.insert(name);
    bool system = name.starts_with("/usr/lib/") || name.starts_with("/System/");
    out.notFollowed.push_back({name + " (loaded by " + mod.info.path + "): " +
                                   (system ? "a system library" : "not found"),
                               !system});
  }

  void run() {
    root(opts.program, "program");
    for (const std::string &n : opts.named)
      root(n, "named on the command line");
    while (!queue.empty()) {
      size_t idx = queue.front();
      queue.pop_front();
      std::vector<std::string> needed = out.modules[idx].info.needed;
      std::string format = out.modules[idx].info.format;
      for (const std::string &n : needed) {
        if (format == "ELF")
          followElf(idx, n);
        else if (format == "PE")
          followPe(idx, n);
        else
          followMachO(idx, n);
      }
    }
  }
};

} // namespace

bool isWindowsSystemDll(const std::string &name) {
  std::string n = lower(name);
  if (n.ends_with(".dll"))
    n.resize(n.size() - 4);
  static constexpr std::string_view kExact[] = {
      "kernel32", "kernelbase", "ntdll",    "user32",   "gdi32",
      "gdiplus",  "advapi32",   "shell32",  "ole32",    "oleaut32",
      "ws2_32",   "wsock32",    "mswsock",  "msvcrt",   "ucrtbase",
      "comctl32", "comdlg32",   "shlwapi",  "crypt32",  "bcrypt",
      "ncrypt",   "secur32",    "winmm",    "version",  "imm32",
      "setupapi", "dbghelp",    "psapi",    "iphlpapi", "rpcrt4",
      "userenv",  "winhttp",    "wininet",  "dwmapi",   "uxtheme",
      "dxgi",     "opengl32",   "powrprof", "normaliz", "wtsapi32",
      "netapi32", "cfgmgr32",   "combase",  "shcore",   "winspool.drv",
      "msimg32",  "dnsapi",     "wintrust", "d2d1",     "dwrite"};
  for (std::string_view e : kExact)
    if (n == e)
      return true;
  for (std::string_view p : {"api-ms-win-", "ext-ms-", "msvcr", "msvcp",
                             "vcruntime", "concrt", "d3d", "xinput"})
    if (n.starts_with(p))
      return true;
  return false;
}

Closure loadClosure(const ClosureOptions &opts) {
  Closure out;
  Search s{opts, out, {}, {}, {}, {}, {}};
  s.run();
  return out;
}

} // namespace linkd::audit
