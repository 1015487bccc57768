// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/state_record_child.h"

#include "audit/state_record.h"
#include "daemon/linkd-lld/access_recorder.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace linkd {

namespace {

// The map's path; process-global because the exit hook has no context.
// LLD checks that it can create the map beside its name, so it is a real
// file in the temp directory (the access log leaves such names out,
// lib/cache/access_log.cpp), removed at exit.
char gMapPath[4096];

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool isMinGW(const std::vector<std::string> &argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    std::string_view emu = a == "-m" && i + 1 < argv.size() ? argv[i + 1]
                           : a.starts_with("-m")            ? a.substr(2)
                                                 : std::string_view();
    if (emu == "i386pep" || emu == "i386pe" || emu == "arm64pe" ||
        emu == "thumb2pe" || emu == "arm64ecpe")
      return true;
  }
  return false;
}

// An argument that makes our map option wrong or visible, or a response
// file that might hold one.
bool conflicts(std::string_view a) {
  std::string l = lower(a);
  if (l.starts_with("@")) {
    std::ifstream in(std::string(a.substr(1)));
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = lower(ss.str());
    return text.find("map") != std::string::npos ||
           text.find("reproduce") != std::string::npos;
  }
  for (std::string_view p :
       {"-map", "--map", "/map", "-lldmap", "/lldmap", "--print-map",
        "--reproduce", "-reproduce", "/reproduce", "-###"})
    if (l.starts_with(p))
      return true;
  return l == "-m" ? false : a == "-M";
}

bool strips(const std::vector<std::string> &argv) {
  for (size_t i = 1; i < argv.size(); ++i)
    if (argv[i] == "-s" || argv[i] == "--strip-all" || argv[i] == "-strip-all")
      return true;
  return false;
}

// Which option to add, or empty: the output has a symbol table, or we must
// not touch the command line.
std::string mapOption(const LldInvocation &inv, const std::string &path) {
  if (std::getenv("LLD_REPRODUCE"))
    return {};
  for (size_t i = 1; i < inv.argv.size(); ++i)
    if (conflicts(inv.argv[i]))
      return {};
  if (inv.flavor == Flavor::Coff)
    return "/lldmap:" + path;
  if (inv.flavor == Flavor::Elf && strips(inv.argv))
    return "-Map=" + path;
  if (inv.flavor == Flavor::Elf && isMinGW(inv.argv))
    return "-Map=" + path; // PE images: no symbol table unless debug info
  return {};
}

void emitRecord(int status) {
  int fd = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, gMapPath, O_RDONLY | O_CLOEXEC));
  syscall(SYS_unlink, gMapPath); // not recorded: not the link's doing
  if (fd < 0)
    return;
  if (status != 0) {
    close(fd);
    return;
  }
  struct stat st;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size > 0)
    p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE,
             fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return;
  }
  std::string text =
      audit::encodeStateRecord(audit::stateFromLldMap(std::string_view(
          static_cast<const char *>(p), static_cast<size_t>(st.st_size))));
  munmap(p, static_cast<size_t>(st.st_size));
  close(fd);
  recordText('A', text);
}

} // namespace

bool stateRecordWanted() {
  // Opt-in: LLD's map costs as much as the link again on W1 (docs/audit.md).
  const char *e = std::getenv("LINKD_AUDIT_RECORD");
  return e && *e == '1';
}

void armStateRecord(LldInvocation &inv, bool wanted) {
  if (!wanted)
    return;
  const char *tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/" +
                     audit::kMapFilePrefix + std::to_string(getpid()) + ".map";
  if (path.size() >= sizeof(gMapPath))
    return;
  std::string option = mapOption(inv, path);
  if (option.empty())
    return;
  std::memcpy(gMapPath, path.c_str(), path.size() + 1);
  inv.argv.push_back(option);
  setExitHook(&emitRecord);
}

} // namespace linkd
