// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "store/temp_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <string_view>
#include <vector>

namespace linkd {
namespace {

constexpr off_t kMaxJournalBytes = 4 << 20;

std::vector<std::string> readLines(const std::string &path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      out.push_back(line);
  return out;
}

// Removes `p` if it is one of ours and (for age >= 0) old enough.
bool removeIfLeft(const std::string &p, int64_t ageSeconds) {
  struct stat st {};
  if (!(isLinkdTemporary(p) || isLldTemporary(p)) ||
      lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return false;
  if (ageSeconds >= 0 && st.st_mtime > std::time(nullptr) - ageSeconds)
    return false;
  return unlink(p.c_str()) == 0;
}

} // namespace

std::string tempJournalPath(const std::string &stateDir) {
  return stateDir + "/temporaries.journal";
}

bool isLldTemporary(std::string_view path) {
  constexpr size_t kRandom = 7; // FileOutputBuffer's `.tmp%%%%%%%`
  size_t slash = path.rfind('/');
  std::string_view base(path);
  base.remove_prefix(slash == std::string_view::npos ? 0 : slash + 1);
  if (path.empty() || path[0] != '/' || base.size() <= 4 + kRandom)
    return false;
  std::string_view tail = base.substr(base.size() - 4 - kRandom);
  return tail.starts_with(".tmp") &&
         tail.find_first_not_of("0123456789abcdef", 4) == std::string_view::npos;
}

bool isLinkdTemporary(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);
  return path[0] == '/' && base.size() > 1 && base[0] == '.' &&
         base.find(".linkd-") != std::string::npos;
}

TempJournal::TempJournal(std::string p, size_t *swept) : path(std::move(p)) {
  size_t n = 0;
  for (const std::string &t : readLines(path))
    n += removeIfLeft(t, -1);
  if (swept)
    *swept = n;
  fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
              0600);
}

TempJournal::~TempJournal() {
  if (fd >= 0)
    close(fd);
}

void TempJournal::note(const std::string &tmp) {
  std::lock_guard lock(mu);
  if (fd < 0)
    return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > kMaxJournalBytes)
    (void)!ftruncate(fd, 0);
  std::string line = tmp + "\n";
  (void)!write(fd, line.data(), line.size());
}

size_t TempJournal::sweepOlderThan(int64_t ageSeconds) {
  std::lock_guard lock(mu);
  size_t n = 0;
  for (const std::string &t : readLines(path))
    n += removeIfLeft(t, ageSeconds);
  return n;
}

} // namespace linkd
