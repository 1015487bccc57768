// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Temporaries a link child left behind.
//
// LLD writes each output as `<out>.tmpXXXXXX` beside it and renames it into
// place at the end; on SIGINT or SIGTERM LLVM's signal handler removes it,
// so stock LLD interrupted by Ctrl-C leaves nothing. A link child killed
// outright (the daemon's last resort for a cancelled link, the OOM killer, a
// crash) cannot, and the temporary would stay in the build directory for
// good. The child's access records name every file it wrote under its
// current name; those still called like LLD's temporaries are the litter.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

class TempJournal;

// Files the records say the link wrote and left under a temporary name
// (`<out>.tmp` and seven hex digits, store/temp_journal.h: isLldTemporary).
std::vector<std::string> leftTemporaries(std::string_view records);

// Journals every LLD temporary the records from offset `from` say the link
// created; returns the offset of the first record not yet complete.
size_t journalTemporaries(std::string_view records, size_t from,
                          TempJournal &journal);

// Removes each of `paths` that is (still) a regular file; how many.
size_t removeTemporaries(const std::vector<std::string> &paths);

} // namespace linkd
