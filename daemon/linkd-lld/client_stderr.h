// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// File descriptor 2 as the client's terminal would be: a tool running in a
// link child writes its diagnostics into a pipe, but colours them as the
// stock tool would on the client's stderr. LLVM decides colours with
// raw_ostream::has_colors() (WithColor, LLD's error handler), so overriding
// it on the stream the tool writes to is all it takes.
#pragma once

#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace linkd {

class ClientStderr : public llvm::raw_fd_ostream {
public:
  explicit ClientStderr(bool colorTty)
      : llvm::raw_fd_ostream(STDERR_FILENO, /*shouldClose=*/false,
                             /*unbuffered=*/true),
        colorTty(colorTty) {}
  bool has_colors() const override { return colorTty; }
  bool is_displayed() const override { return colorTty; }

private:
  bool colorTty;
};

} // namespace linkd
