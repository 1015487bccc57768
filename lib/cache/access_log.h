// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a link touched, reduced from the child's access records
// (daemon/linkd-lld/access_recorder.h) to the sets the cache needs.
//
// Rules: a path the link wrote, renamed or removed at any point is an output
// or scratch, never an input or probe (LLD writes `out.tmpXXXX` and renames it
// to `out`; it may move an old output aside first). Of the rest, a path that
// was opened for reading is an input (content matters), one that was only
// stat'ed is an existence check, one that was probed and absent is a missing
// path. Starting processes, changing directory, listing or creating
// directories, and unrecordable paths make the link uncacheable. Reads of
// /proc, /sys and /dev are not inputs (LLVM sizes thread pools from
// /proc/cpuinfo).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

// The files a link read, opened before its client is answered: a driver that
// deletes its temp files as soon as the linker returns (rustc) cannot take
// them from a result stored after that. Path -> descriptor, closed with it.
struct InputFds {
  InputFds() = default;
  InputFds(const InputFds &) = delete;
  InputFds &operator=(const InputFds &) = delete;
  ~InputFds();
  struct Held {
    int fd;
    struct stat st; // when opened: a later unlink changes only the ctime
  };
  const Held *find(const std::string &path) const;
  std::map<std::string, Held> fds;
};

struct AccessLog {
  std::set<std::string> read;     // opened for reading
  std::set<std::string> existing; // stat/access/realpath succeeded, not read
  std::set<std::string> missing;  // probed, absent
  std::set<std::string> outputs;  // final paths of files written
  // Read, and also written, renamed or removed: its content before the
  // request mattered but is gone (an archive `ar r` updates). Not an input;
  // the key must cover it (lib/cache/archive_key.h).
  std::set<std::string> overwritten;
  std::vector<std::string> uncacheable; // reasons, empty if cacheable
  // The audit's record of the state symbols the link placed in its output
  // (lib/audit/state_record.h); hasStateRecord: the child made one.
  std::string stateRecord;
  bool hasStateRecord = false;          // an empty record is one too (no state)
  std::shared_ptr<InputFds> inputFds;   // from openInputs(); may be null
};

// Opens every file of `log.read` (regular files and directories).
std::shared_ptr<InputFds> openInputs(const AccessLog &log);

// Parses the record stream written by the access recorder.
AccessLog parseAccessLog(std::string_view records);

} // namespace linkd
