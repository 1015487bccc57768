// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Records what a link touches on the file system, from inside the link child.
//
// The cache needs the exact input set of a link — every file it read, every
// path it probed and did not find — and the exact set of files it wrote, for
// every flavor alike. LLD's own reports are per flavor and incomplete (ELF's
// --dependency-file lists no failed probes, COFF has none), so instead the
// link child interposes the libc calls through which libLLVM reaches the file
// system (its dynamic imports: open, stat, lstat, access, realpath, opendir,
// readlink, rename, unlink, remove, mkdir, link, symlink, chdir, and process
// creation) and reports each call's path and outcome. The executable defines
// these symbols; libLLVM's PLT binds to them before libc. Each wrapper does
// the real work with the raw system call (or libc's own function via
// RTLD_NEXT) and, while recording is on, records it for the pipe.
//
// Its state is process-global, as a libc hook has no context to carry (so
// are the child's report, child_report.cpp, and the library's view,
// local_view.cpp): set in the link child before LLD starts and only read
// afterwards; the zygote and `linkd-lld link` never turn it on.
//
// Record format: a kind byte, the absolute path, NUL; renames carry two
// paths. Records are collected in the child (under a lock: LLD's threads
// record at once) and written in large pieces, each holding whole records:
// when the buffer is full, before another program starts or the process
// forks, and when the process exits (exit, _exit and _Exit are interposed
// too); the daemon parses them after the child is gone. Kinds:
//   R  opened for reading          W  opened for writing/created
//   S  exists (stat/access/realpath)  M  does not exist (ENOENT/ENOTDIR)
//   N  renamed: from, to           U  removed
//   D  directory created           L  directory listed
//   X  started a process           C  changed directory
//   E  a path could not be recorded (too long) or resolved
//   A  the audit's state record of the output (text instead of a path)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

// Starts recording to `fd` for the rest of the process. `cwd` must be the
// process's working directory (relative paths are resolved against it).
void startAccessRecording(int fd, const std::string &cwd);

// From now on, before this process creates one of LLD's temporary outputs
// (`<out>.tmpXXXXXXX`, store/temp_journal.h), it appends the file's name to
// the daemon's temporaries journal on `fd` (O_APPEND), so that the next
// daemon removes it if this process dies before renaming it: killed
// (SIGKILL, the OOM killer), or dying of SIGPIPE or SIGTERM in the moment
// between the file's creation and LLVM's registering it for removal on a
// signal (a daemon killed mid-link does both: its pipes close, its zygote
// dies). Written before the file exists, so no kill comes between; a name
// that exists already is not journaled (not this process's to create).
// Not in the sandbox (its paths are the client's). `cwd` as for
// startAccessRecording.
void startTempJournal(int fd, const std::string &cwd);

// From now on, opening `original` (any path to the same file) for reading
// opens `target` instead; the access is recorded as a read of the path the
// linker used. Link-time rewriting: LLD reads the rewritten object, and its
// diagnostics and the cache's manifest name the user's file. An error
// message if `original` cannot be stat'ed.
std::string redirectReads(const std::string &original,
                          const std::string &target);

// From now on, nothing under `dir` (absolute, as the link spells paths
// there) is recorded: the incremental relink's state (its copies, LLD's map
// and dependency file there) is linkd's, neither input nor output of the
// link (incremental_link.h).
void ignoreAccessesUnder(const std::string &dir);

// From now on, the paths this process probes and does not find (the `M`
// records) are also kept in it, for takeMissingProbes: the incremental
// relink's manifest (a file appearing at one of them, say a library in an
// earlier -L directory, would change the link).
void keepMissingProbes();
// Those paths, in the order probed (the kept list is emptied); nullopt when
// nothing is recorded in this process.
std::optional<std::vector<std::string>> takeMissingProbes();

// Runs `hook(status)` once, on the process's way out, before the last
// records are written (the audit's state record, state_record_child.h).
void setExitHook(void (*hook)(int status));
// Sends `text` (no NUL inside) as one record of `kind`, after what is
// buffered.
void recordText(char kind, std::string_view text);

// The end of a link in a process that goes on (a reusable worker,
// link_worker.h), in the order of _exit's: the exit hook with `status`, then
// the records collected so far are written out. Then nothing more is
// recorded or journaled, until the next start*.
void endLinkRecording(int status);
// True if the link read through a redirect (redirectReads): such a process
// is never reused.
bool readsRedirected();

// Resolves libc's own functions ahead of time (call in the zygote, so that
// children do not each pay for dlsym).
void prepareAccessRecording();

} // namespace linkd
