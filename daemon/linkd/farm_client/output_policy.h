// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What a farm client lets a node write on this machine.
//
// The node's answer names each output's path and mode; both are hostile.
// An output is written only if the same link run here could have written
// it (lib/link/link_outputs.h: the request's own output options), at the
// path as this side spells it, with the node's mode masked by the client's
// umask, never with setuid, setgid or sticky bits, and never over a file
// here that is not a regular file or a symbolic link (`-Map=/dev/null`: the
// new file is renamed over the old one). Anything else fails
// the offload: the link runs locally, `farm_rejected` counts it, the log
// says what the node sent.
#pragma once

#include "link/link_outputs.h"
#include "linkd/v1/linkd.pb.h"

#include <cstdint>
#include <string>

namespace linkd {

class OutputPolicy {
public:
  explicit OutputPolicy(const v1::LinkRequest &req);

  struct Admitted {
    std::string path; // where to write it ("" = refused)
    uint32_t mode = 0;
    std::string refusal; // why not
  };
  Admitted admit(const std::string &path, uint32_t mode) const;

private:
  LinkOutputs allowed;
  uint32_t umask;
};

} // namespace linkd
