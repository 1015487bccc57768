// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The file system of a link child on a farm node: path mapping inside the
// child (docs/design.md, "Farm").
//
// On a farm node the link must see the client's files at the client's paths
// and nothing of the node's own file system. The link child already defines
// every libc file-system entry point libLLVM imports (access_recorder.cpp);
// with the sandbox on, each of them asks the node's daemon instead of the
// kernel (lib/child/sandbox_protocol.h): the daemon answers from the client's
// facts (fetching unknown paths from the client), hands out the real file on
// the node to open (an input blob, or a scratch file for an output), and
// never resolves a client path against the node's own tree. Relative paths
// are made absolute with the client's cwd, and getcwd() reports it.
//
// A few kernel pseudo-files LLVM reads for its thread pool and for random
// temp names (/dev/null, /dev/urandom, /proc/cpuinfo, /sys/devices/system/cpu)
// go to the node's kernel, read-only. Directory listing, process creation,
// directory creation, hard and symbolic links and chdir fail in the sandbox;
// they are also recorded, and the node then reports the link as not
// offloadable so that the client links locally.
//
// Process-global state, like the recorder: set once in the link child.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include <string>

namespace linkd::sandbox {

// Turns the sandbox on for the rest of the process: questions go to `fd`,
// relative paths are relative to the client's `cwd`.
void startSandbox(int fd, const std::string &cwd);
// Turns it off again: a reusable worker between two sandboxed links
// (link_worker.h). Its Landlock confinement stays.
void stopSandbox();
// The real file (on the node) of the last file the link opened for
// writing, "" if none: the output's content, whatever its client name.
const char *lastWrittenFile();

// Defence in depth for a link process that an input could subvert: with
// Landlock (Linux 5.13+, unprivileged), the calling thread and the threads
// it starts afterwards may read only `readDir` (the node's blobs), read and
// create files only in `writeDir` (the farm link's scratch directory; a
// kernel link's lane, daemon/linkd/service/kernel_link.cpp), and use the
// pseudo-files above and their own /proc/self task, fd, statm and maps;
// raw system calls cannot reach anything else of the node. Threads already
// running stay as they were: call it before LLD starts its pool (a spare
// for sandboxed links is confined when forked, zygote.cpp). "" on success,
// else why not (an old kernel: the path mapping still holds for everything
// LLD does). Once per process: a second call with the same directories
// returns the first one's outcome, with others an error.
std::string confineSandbox(const std::string &readDir,
                           const std::string &writeDir);
bool sandboxActive();

int sbOpen(const char *path, int flags, mode_t mode);
int sbStat(const char *path, struct stat *st);
int sbAccess(const char *path, int mode);
char *sbRealpath(const char *path, char *resolved);
ssize_t sbReadlink(const char *path, char *buf, size_t size);
int sbRename(const char *from, const char *to);
int sbUnlink(const char *path);
int sbChmod(const char *path, mode_t mode);
int sbStatfs(const char *path, struct statfs *buf);
char *sbGetcwd(char *buf, size_t size);
// Operations the sandbox refuses (errno set, -1 returned).
int sbRefuse(int err);

} // namespace linkd::sandbox
