// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The private directories of liblinkd's local links (child_link.h), kept
// for the life of the process and reused link after link: one per link
// running at once, emptied after each. Making and removing two directories
// per link cost more than the link's own files: on ext4 each directory is
// a block allocated and freed again, and with `discard` the free waits for
// the device (perf, a Python JIT loop with a no-op linker: 2.6 ms per call
// against the stock subprocess path's 1.3 ms, a third of it in mkdir and
// rmdir).
//
// Each is `<TMPDIR or /tmp>/linkd-kernel.<pid>.XXXXXX` (0700) holding
// `work`, the link's working directory, and `view` with `empty` (linkd-lld's
// view, daemon/linkd-lld/local_view.h). The free ones are removed when the
// process exits (or the library is unloaded); a forked child starts with
// none (its parent's stay its parent's). One a process left behind (it
// ended through _exit or a signal) is removed by a later process's first
// local link once its owner is gone and it was not used for an hour.
// A directory is reused only if it is still the one given back (same
// inode, this user's, mode 0700, its layout real directories): a temp
// cleaner may remove it and another user make one of the same name with
// symbolic links inside. Thread-safe, fork-safe.
#pragma once

#include <string>

namespace linkd::kernel {

// A private directory under `base`, empty but for its layout; "" with
// `error` set if none could be made.
std::string takePrivateDir(const std::string &base, std::string &error);

// Gives back a directory takePrivateDir returned: emptied and kept for the
// next link, or removed if it cannot be emptied.
void givePrivateDir(const std::string &dir);

} // namespace linkd::kernel
