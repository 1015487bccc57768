// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/link_litter.h"

#include "cache/access_log.h"
#include "store/temp_journal.h"

#include <sys/stat.h>
#include <unistd.h>

namespace linkd {
namespace {

bool looksTemporary(const std::string &path) { return isLldTemporary(path); }

} // namespace

std::vector<std::string> leftTemporaries(std::string_view records) {
  std::vector<std::string> out;
  for (const std::string &p : parseAccessLog(records).outputs)
    if (looksTemporary(p))
      out.push_back(p);
  return out;
}

size_t journalTemporaries(std::string_view records, size_t from,
                          TempJournal &journal) {
  size_t pos = from;
  while (pos < records.size()) {
    char kind = records[pos];
    size_t end = records.find('\0', pos + 1);
    if (end == std::string_view::npos)
      return pos; // the rest comes later
    size_t next = end + 1;
    if (kind == 'N') {
      next = records.find('\0', end + 1);
      if (next == std::string_view::npos)
        return pos;
      ++next;
    }
    std::string path(records.substr(pos + 1, end - pos - 1));
    if (kind == 'W' && isLldTemporary(path))
      journal.note(path);
    pos = next;
  }
  return pos;
}

size_t removeTemporaries(const std::vector<std::string> &paths) {
  size_t n = 0;
  for (const std::string &p : paths) {
    struct stat st {};
    if (lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        unlink(p.c_str()) == 0)
      ++n;
  }
  return n;
}

} // namespace linkd
