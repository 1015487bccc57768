// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Where the daemon's socket, locks and logs live, for one user.
//
// Socket: $LINKD_SOCKET, else <runtime dir>/linkd/linkd.sock, else
// /tmp/linkd-$UID/linkd.sock (or, if another user holds that name,
// <home>/.cache/linkd/run/linkd.sock). The directory is created 0700 and must
// be owned by the user (a directory someone else created in /tmp is refused,
// since whoever owns it could impersonate the daemon). Locks sit next to the
// socket.
//
// State (log file): $LINKD_STATE_DIR, else $XDG_STATE_HOME/linkd, else
// <home>/.local/state/linkd, else the socket directory.
//
// The user's directories do not depend on the caller's environment being
// complete: JIT compilers run their linker with a stripped one (IREE keeps
// only LLD_VERSION), and such a client must reach the same daemon, settings
// and cache as the user's shell. Home is $HOME, else the password database's
// entry for the uid; the runtime directory is $XDG_RUNTIME_DIR, else
// /run/user/$UID when it exists and is this user's private directory (what
// pam_systemd makes and XDG_RUNTIME_DIR normally names). The client, liblinkd
// and the daemon all resolve through these two functions, so they agree.
#pragma once

#include <string>

namespace linkd {

struct RuntimePaths {
  std::string socketPath;    // unix socket the daemon listens on
  std::string runtimeDir;    // directory of the socket (0700)
  std::string autostartLock; // serialises clients starting a daemon
  std::string daemonLock;    // held by the running daemon for its lifetime
  std::string fallbackMark;  // exists while fallback has been warned about
  std::string stateDir;      // logs
  std::string logPath;
  // Non-empty: /tmp/linkd-$UID is not this user's private directory (someone
  // else made it first), so the paths above are in a private fallback under
  // $HOME/.cache/linkd; the client says so on every link.
  std::string squatted;
};

// Resolves the paths from the environment; creates nothing.
RuntimePaths resolveRuntimePaths();

// $HOME, else the home of the uid's password entry ("" if neither).
std::string homeDirectory();

// $XDG_RUNTIME_DIR, else /run/user/$UID if it is this user's directory and
// closed to others, else "".
std::string userRuntimeDirectory();

// Creates `dir` with mode 0700 if missing and checks that it is a directory
// owned by the current user and not accessible by others. Returns an empty
// string on success, else a message naming the directory and the problem.
std::string ensurePrivateDirectory(const std::string &dir);

// Why the cache may not live in `dir` (which exists), or "": like ssh's
// StrictModes, it must be this user's (after symbolic links) and not
// writable by group or others, who could otherwise plant entries.
std::string untrustedCacheDirectory(const std::string &dir);

// The cache directory `dir` resolved once, for good (`resolved`), or why it
// may not be used: a symbolic link on the way that another user owns (root
// excepted) could be pointed elsewhere once checked (a link in /tmp to the
// user's own directory, then to another user's), and what it leads to must
// pass untrustedCacheDirectory. The daemon keeps the resolved path, so
// repointing a link later changes nothing.
std::string resolveCacheDirectory(const std::string &dir,
                                  std::string &resolved);

// Creates `dir` and its parents (mode 0700 for the ones created).
std::string ensureDirectoryTree(const std::string &dir);

// Absolute path of the running executable's directory (resolves symlinks).
std::string executableDirectory();

} // namespace linkd
