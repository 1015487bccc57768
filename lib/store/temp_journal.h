// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// linkd's own temporaries in build directories, written down before they
// exist.
//
// Outputs reach their place through a hidden temporary beside them
// (`.<out>.linkd-XXXXXX`, then a rename): a cache hit's outputs, a farm
// link's outputs. A daemon killed in between (SIGKILL, OOM, power) would
// leave that file in the build directory for good. So each temporary's name
// is appended to a journal in the state directory first (one write), and
// the next daemon, before it serves, removes every journaled temporary that
// still exists, then starts the journal afresh; `linkd cache trim` sweeps
// the entries older than an hour. The journal belongs to the daemon holding
// the state directory (one per state directory); past 4 MiB it restarts
// (the few names in flight at that moment are forgotten).
#pragma once

#include <mutex>
#include <string>
#include <string_view>

namespace linkd {

class TempJournal {
public:
  // Removes what `path` names that is still there, then opens it afresh.
  // How many it removed in `swept`.
  explicit TempJournal(std::string path, size_t *swept = nullptr);
  ~TempJournal();
  TempJournal(const TempJournal &) = delete;

  // Records `tmp` (a name `.<x>.linkd-<random>`) before it is created.
  void note(const std::string &tmp);
  // Removes journaled temporaries older than `ageSeconds` that still exist;
  // how many.
  size_t sweepOlderThan(int64_t ageSeconds);

private:
  std::string path;
  std::mutex mu;
  int fd = -1;
};

// The journal of the daemon whose state directory is `stateDir`.
std::string tempJournalPath(const std::string &stateDir);

// A temporary's name: the hidden `.<base>.linkd-` form in `path`'s dir.
bool isLinkdTemporary(const std::string &path);
// LLD's form (LLVM's FileOutputBuffer): `<out>.tmp` and seven lowercase hex
// digits, exactly; a user's own file named otherwise is never taken for one.
// A link child's temporaries are journaled too: a daemon killed mid-link
// takes its children along, and they cannot remove what they were writing.
// The child writes each name itself, before it creates the file
// (daemon/linkd-lld/access_recorder.h: startTempJournal): the daemon could
// only journal it once the child's record reached it, and a daemon killed
// in between (or a child killed before its record went out) left the file
// unnamed. The daemon journals what the records name as well, for a child
// that could not open the journal.
bool isLldTemporary(std::string_view path);

} // namespace linkd
