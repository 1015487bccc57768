// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/access_log.h"

#include "audit/state_record.h"
#include <fcntl.h>
#include <unistd.h>

namespace linkd {

namespace {

// Kernel pseudo-files are not inputs: LLVM reads /proc/cpuinfo to size its
// thread pool (ThinLTO), and its "cpu MHz" lines change from read to read.
// /dev/shm holds ordinary files (a JIT's or a build's scratch inputs).
bool isPseudoFile(const std::string &p) {
  return p.starts_with("/proc/") || p.starts_with("/sys/") ||
         (p.starts_with("/dev/") && !p.starts_with("/dev/shm/"));
}

} // namespace

AccessLog parseAccessLog(std::string_view records) {
  AccessLog log;
  std::set<std::string> touched; // written, renamed, removed: not inputs
  std::set<std::string> written; // current names of files written
  std::set<std::string> reasons;
  auto nextPath = [&](size_t &pos) -> std::string {
    size_t end = records.find('\0', pos);
    if (end == std::string_view::npos) {
      reasons.insert("truncated access record");
      pos = records.size();
      return {};
    }
    std::string p(records.substr(pos, end - pos));
    pos = end + 1;
    return p;
  };
  std::set<std::string> read, existing, missing;
  size_t pos = 0;
  while (pos < records.size()) {
    char kind = records[pos++];
    std::string path = nextPath(pos);
    if (isPseudoFile(path) && (kind == 'R' || kind == 'S' || kind == 'M'))
      continue;
    // `-o /dev/null` (link_key.h, onlyNullOutputs): written, never an
    // output to store or to put back by renaming over the device.
    if (path == "/dev/null" && kind == 'W')
      continue;
    // The audit's map file (and LLD's probes beside it): scratch, neither
    // an input nor an output (state_record_child.h).
    if (kind != 'N' && kind != 'A' &&
        path.find(std::string("/") + audit::kMapFilePrefix) !=
            std::string::npos)
      continue;
    switch (kind) {
    case 'R':
      read.insert(path);
      break;
    case 'S':
      existing.insert(path);
      break;
    case 'M':
      missing.insert(path);
      break;
    case 'W':
      written.insert(path);
      touched.insert(path);
      break;
    case 'N': {
      std::string to = nextPath(pos);
      touched.insert(path);
      touched.insert(to);
      if (written.erase(path))
        written.insert(to);
      else
        written.erase(to); // an old file moved over `to`: not our output
      break;
    }
    case 'U':
      written.erase(path);
      touched.insert(path);
      break;
    case 'A':
      log.stateRecord = std::move(path);
      log.hasStateRecord = true;
      break;
    case 'D':
      reasons.insert("the link created a directory");
      break;
    case 'L':
      reasons.insert("the link listed a directory");
      break;
    case 'X':
      reasons.insert("the link started a process or made a link");
      break;
    case 'C':
      reasons.insert("the link changed its directory");
      break;
    case 'E':
      reasons.insert("a file access could not be recorded");
      break;
    default:
      reasons.insert("unknown access record");
      pos = records.size();
      break;
    }
  }
  for (const std::string &p : read)
    (touched.count(p) ? log.overwritten : log.read).insert(p);
  for (const std::string &p : existing)
    if (!touched.count(p) && !log.read.count(p))
      log.existing.insert(p);
  for (const std::string &p : missing) {
    if (touched.count(p))
      continue;
    if (log.read.count(p) || log.existing.count(p))
      reasons.insert("an input appeared or vanished during the link");
    log.missing.insert(p);
  }
  log.outputs = std::move(written);
  log.uncacheable.assign(reasons.begin(), reasons.end());
  return log;
}

InputFds::~InputFds() {
  for (const auto &[path, held] : fds)
    ::close(held.fd);
}

const InputFds::Held *InputFds::find(const std::string &path) const {
  auto it = fds.find(path);
  return it == fds.end() ? nullptr : &it->second;
}

std::shared_ptr<InputFds> openInputs(const AccessLog &log) {
  auto out = std::make_shared<InputFds>();
  for (const std::string &p : log.read) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && ::fstat(fd, &st) == 0)
      out->fds.emplace(p, InputFds::Held{fd, st});
    else if (fd >= 0)
      ::close(fd);
  }
  return out;
}

} // namespace linkd
