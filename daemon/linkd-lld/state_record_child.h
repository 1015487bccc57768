// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link-time half of `linkd audit` (docs/audit.md): a link child whose
// output will carry no symbol table — every lld-link image, MinGW and ELF
// links with -s/--strip-all — asks LLD for a map file in the temp
// directory, and when the link exits successfully reduces it to the
// state symbols of each writable section (lib/audit/state_record.h), sent
// to the daemon as an 'A' access record; the daemon stores it with the
// cache record of the outputs, by their digests.
//
// Opt-in, with LINKD_AUDIT_RECORD=1 in the daemon's environment: writing
// the map costs LLD about as much again as the link on W1 (docs/audit.md,
// "Cost"). Never armed when the user asked for a map of their own (LLD
// keeps only the last one), for --reproduce (the tarball would list our
// option), or in the farm sandbox.
#pragma once

#include "daemon/linkd-lld/lld_entry.h"

namespace linkd {

// Whether the daemon asked for records (LINKD_AUDIT_RECORD=1 in its
// environment). Read before the link child takes the client's environment.
bool stateRecordWanted();

// With `wanted`: adds the map option to `inv` and arranges for the record at
// exit.
void armStateRecord(LldInvocation &inv, bool wanted);

} // namespace linkd
