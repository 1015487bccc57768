// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A shared-cache tier on an REAPI server's CAS and action cache
// (`remote = grpc://host:port[/instance]`, `grpcs://...`): bazel-remote,
// BuildBuddy, Buildbarn, EngFlow, NativeLink and Bazel's RemoteWorker serve
// it, so a team shares link results on the cache it already runs.
//
// Blobs are CAS blobs under their own digest. An action entry (the tier's
// envelope around a manifest, remote_tiers.h: signed when a key is set) is
// a CAS blob too, reached through the action cache: its key is the digest of
// a small Action message that names the entry's action key
// (`command_digest.hash`) and linkd (`salt`), and the ActionResult stored
// there lists the entry as its one output file, `linkd-entry`. The Action
// itself is uploaded with it, so the cache holds no dangling reference. A
// server that inlines the file's contents saves the second read; either
// way the bytes are checked against the digest the ActionResult names.
//
// Nothing read is trusted more than the other tiers' answers: blobs are
// verified by the client (reapi_client.h) and again by RemoteTiers, and a
// signed reader rejects entries without our HMAC.
#pragma once

#include "daemon/linkd/reapi/reapi_client.h"
#include "store/remote_backend.h"

#include <memory>

namespace linkd::reapi {

// The action-cache key of action entry `key`.
re::Digest entryActionDigest(const Digest &key);

// The tier's backend for `cfg` (scheme grpc or grpcs); `tls` and `headers`
// come from the remote_tls_* and remote_header settings. Null and `error`
// when the URL or a file it needs cannot be used.
std::unique_ptr<RemoteBackend> makeCacheBackend(const RemoteTierConfig &cfg,
                                                const Endpoint &base,
                                                std::string *error);

} // namespace linkd::reapi
