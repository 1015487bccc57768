// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd-lld/relink_commands.h"

#include "daemon/linkd-lld/incremental_link.h"
#include "incremental/link_map.h"
#include "incremental/patcher.h"
#include "incremental/relink_check.h"
#include "util/files.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

int cmdRelinkCheck(int argc, char **argv) {
  incremental::SlackPolicy slack;
  int i = 2;
  if (i + 1 < argc && std::string_view(argv[i]) == "--slack") {
    char *end = nullptr;
    slack.percent = std::strtoull(argv[i + 1], &end, 10);
    if (*end == ',')
      slack.bytes = std::strtoull(end + 1, &end, 10);
    if (*end != '\0') {
      std::fprintf(stderr, "linkd-lld relink-check: --slack PERCENT,BYTES\n");
      return 2;
    }
    i += 2;
  }
  if (argc - i != 2) {
    std::fprintf(stderr, "usage: linkd-lld relink-check [--slack "
                         "PERCENT,BYTES] OLD.o NEW.o\n");
    return 2;
  }
  Result<std::string> before = readFile(argv[i]);
  Result<std::string> after = readFile(argv[i + 1]);
  for (const Result<std::string> *r : {&before, &after})
    if (!*r) {
      std::fprintf(stderr, "linkd-lld relink-check: %s\n", r->error().c_str());
      return 2;
    }
  incremental::RelinkCheck c = incremental::checkRelink(
      llvm::MemoryBufferRef(*before, argv[i]),
      llvm::MemoryBufferRef(*after, argv[i + 1]), slack);
  if (!c.patchable) {
    std::printf("full-link kind=%s reason=\"%s\"\n", c.kind.c_str(),
                c.reason.c_str());
    return 1;
  }
  std::string sections;
  for (const std::string &s : c.changedSections)
    sections += (sections.empty() ? "" : ",") + s;
  std::string references;
  for (const std::string &s : c.newReferences)
    references += (references.empty() ? "" : ",") + s;
  std::printf(
      "patchable sections=%s bytes=%llu relocations=%llu%s%s\n",
      sections.empty() ? "-" : sections.c_str(),
      static_cast<unsigned long long>(c.changedBytes),
      static_cast<unsigned long long>(c.relocations),
      references.empty() ? "" : " if-the-link-has=", references.c_str());
  return 0;
}

int cmdRelinkPatch(int argc, char **argv) {
  const char *usage =
      "usage: linkd-lld relink-patch --map MAP [--object NAME] OLD_OUTPUT "
      "OLD.o NEW.o {-o NEW_OUTPUT | --in-place}\n";
  std::string mapPath, objectName, outPath;
  std::vector<std::string> files;
  bool inPlace = false;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--in-place") {
      inPlace = true;
      continue;
    }
    std::string *value = a == "--map"      ? &mapPath
                         : a == "--object" ? &objectName
                         : a == "-o"       ? &outPath
                                           : nullptr;
    if (value && i + 1 < argc)
      *value = argv[++i];
    else if (value || a.starts_with("-")) {
      std::fputs(usage, stderr);
      return 2;
    } else
      files.emplace_back(a);
  }
  if (files.size() != 3 || mapPath.empty() || outPath.empty() == !inPlace) {
    std::fputs(usage, stderr);
    return 2;
  }
  if (objectName.empty())
    objectName = files[1];
  Result<std::string> map = readFile(mapPath), oldObj = readFile(files[1]),
                      newObj = readFile(files[2]);
  for (const Result<std::string> *r : {&map, &oldObj, &newObj})
    if (!*r) {
      std::fprintf(stderr, "linkd-lld relink-patch: %s\n", r->error().c_str());
      return 2;
    }
  // Mapped, not read: the patch reads what it changes and the build-id's
  // hash reads the rest once.
  auto oldOut = llvm::MemoryBuffer::getFile(files[0], /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!oldOut) {
    std::fprintf(stderr, "linkd-lld relink-patch: %s: %s\n", files[0].c_str(),
                 oldOut.getError().message().c_str());
    return 2;
  }
  auto linkMap = incremental::LinkMap::parse(*map, objectName);
  if (!linkMap) {
    std::fprintf(stderr, "linkd-lld relink-patch: %s: %s\n", mapPath.c_str(),
                 llvm::toString(linkMap.takeError()).c_str());
    return 2;
  }
  incremental::PatchInputs in;
  in.oldOutput = (*oldOut)->getMemBufferRef();
  in.map = &*linkMap;
  in.objectName = objectName;
  in.oldObject = llvm::MemoryBufferRef(*oldObj, files[1]);
  in.newObject = llvm::MemoryBufferRef(*newObj, files[2]);
  incremental::PatchResult r = incremental::patchOutput(in);
  if (!r.patched) {
    std::printf("full-link kind=%s reason=\"%s\"\n", r.kind.c_str(),
                r.reason.c_str());
    return 1;
  }
  std::string error = inPlace ? writeEditsInPlace(files[0], r.edits)
                              : writePatchedCopy(files[0], outPath, r.edits);
  if (!error.empty()) {
    std::fprintf(stderr, "linkd-lld relink-patch: %s\n", error.c_str());
    return 2;
  }
  std::printf("patched sections=%llu bytes=%llu relocations=%llu\n",
              static_cast<unsigned long long>(r.sectionsWritten),
              static_cast<unsigned long long>(r.bytesWritten),
              static_cast<unsigned long long>(r.relocationsApplied));
  return 0;
}

} // namespace linkd
