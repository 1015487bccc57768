// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/state_record_child.h"

#include "audit/state_record.h"
#include "daemon/linkd-lld/access_recorder.h"
#include "daemon/linkd-lld/audit/record_facts.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace linkd {

namespace {

// The map's path; process-global because the exit hook has no context.
// LLD checks that it can create the map beside its name, so it is a real
// file in the temp directory (the access log leaves such names out,
// lib/cache/access_log.cpp), removed at exit.
char gMapPath[4096];

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
  std::vector<audit::RecordedSymbol> symbols =
      audit::stateFromLldMap(std::string_view(static_cast<const char *>(p),
                                              static_cast<size_t>(st.st_size)));
  munmap(p, static_cast<size_t>(st.st_size));
  close(fd);
  // Each symbol's binding from its input (the link's own files: reading
  // them again records nothing new).
  audit::addInputFacts(symbols);
  recordText('A', audit::encodeStateRecord(symbols));
}

} // namespace

audit::RecordPolicy stateRecordPolicy() {
  return audit::recordPolicyFrom(std::getenv("LINKD_AUDIT_RECORD"));
}

void armStateRecord(LldInvocation &inv, audit::RecordPolicy policy) {
  if (policy == audit::RecordPolicy::Off)
    return;
  const char *tmp = std::getenv("TMPDIR");
  // A name of its own (mkstemps): a pid is only this PID namespace's, and
  // children of several daemons may share the temp directory.
  std::string path = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/" +
                     audit::kMapFilePrefix + "XXXXXX.map";
  if (path.size() >= sizeof(gMapPath))
    return;
  // The child runs in the link's directory with the client's environment.
  std::string option = audit::stateRecordMapOption(
      policy, inv.flavor, inv.argv, ".",
      audit::environmentAddsToTheLink(
          [](const char *n) -> const char * { return std::getenv(n); }),
      path);
  if (option.empty())
    return;
  // A temp directory the link cannot write to (TMPDIR unset for the link's
  // user, read-only, gone) gets no record, rather than LLD's error about
  // our map file.
  std::string made = path;
  int fd = mkstemps(made.data(), 4);
  if (fd < 0)
    return;
  close(fd);
  option.replace(option.find(path), path.size(), made);
  std::memcpy(gMapPath, made.c_str(), made.size() + 1);
  inv.leadingOption = option;
  setExitHook(&emitRecord);
}

} // namespace linkd
