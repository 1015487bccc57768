// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The action key of an archive request (ar.linkd, ranlib.linkd, lib.linkd),
// and whether it can be cached.
//
// An archive request is cached like a link: the key covers what the command
// line says, the manifest (lib/cache/link_cache.h) every file it read
// (members, libraries merged in, .def files) by content, and the result
// every file it wrote. Key = SHA-256 over: the key format version, linkd's
// and LLVM's versions, the tool and the program name it prints, the working
// directory and the base dir as a link's content key holds them (tokens;
// paths under the base dir relative to the working directory: a second
// checkout's `ar rcs lib.a *.o` hits), the umask, the colour decision, the
// environment it reads (TZ, LIB; PWD as keyedPwd says), every argument with
// response files replaced by their content (paths in it as above), the
// MRI script sent on stdin, and the content of every file the request reads
// and then replaces (the existing archive of `ar r`/`d`/`m`/`q`/`s` and of
// ranlib, or "absent"). That last part cannot come from the manifest: a path
// the request writes is never one of its recorded inputs, and the file is
// gone by the time a result is stored.
//
// The command line is read with lib/archive/ar_command_line.h, the reading
// the archiver child itself uses. Not cached (run every time, counted by
// reason): read-only operations (t, p, x; lib /list), U (real dates and
// owners), u (which compares modification times), and command lines that
// run no operation (help, version, usage errors). A thin archive that records
// absolute member paths contains the working directory: the name check
// (name_check.h) stores it as requiring that directory.
#pragma once

#include "cache/link_key.h"
#include "cache/stat_cache.h"

namespace linkd {

LinkAnalysis analyzeArchiveRequest(const LinkInvocation &inv,
                                   const KeyContext &ctx, StatCache &stats);

} // namespace linkd
