// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd-lld remote-link IN OUT`: one link as a Remote Execution API action,
// on a worker of the user's cluster (docs/farm.md, "REAPI clusters").
//
// IN is the action's input directory: `request` (a v1::OffloadStart: the
// link, and the facts of every path the daemon describes, with the client's
// stat fields and digests) and `blobs/<sha256 hex>` (each file fact's
// content). The link runs in a child exactly as on a farm node: sandboxed
// (daemon/linkd-lld/sandbox_child.h), its questions answered here from a
// SandboxView over those facts and blobs (lib/view/sandbox_view.h), so it
// sees the client's files at the client's paths and nothing of the
// worker's, whatever the worker's image holds. A path without a fact is
// answered as absent and listed in the result; the daemon checks each on
// its machine, and one that exists there voids the result.
//
// OUT receives `result` (a v1::RemoteLinkResult: exit status, resources,
// the access records with client paths, the outputs' client paths, modes,
// sizes and digests, the unknown paths) and `files/<i>`, the i-th output's
// content. The link's stdout and stderr are the action's. The runner exits
// 0 when it leaves a result (whatever the link's own status), non-zero with
// a message on stderr when it cannot.
#pragma once

namespace linkd {

int remoteLinkMain(int argc, char **argv);

} // namespace linkd
