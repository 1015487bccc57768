// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link-time half of `linkd audit` (docs/audit.md): a link child whose
// output will carry no symbol table — every lld-link image, MinGW and ELF
// links with -s/--strip-all — asks LLD for a map file in the temp
// directory, and when the link exits successfully reduces it to the
// state symbols of each writable section (lib/audit/state_record.h), sent
// to the daemon as an 'A' access record; the daemon stores it with the
// cache record of the outputs, by their digests.
//
// Which links: audit::RecordPolicy (PE images by default, ELF too with
// LINKD_AUDIT_RECORD=1 in the daemon's environment, none with =0; writing
// the map costs LLD about as much again as the link on W1, docs/audit.md
// "Cost"). Never armed when the user asked for a map of their own (LLD
// keeps only the last one), for --reproduce (the tarball would list our
// option), or in the farm sandbox (the daemon links such links locally).
#pragma once

#include "audit/state_record.h"
#include "daemon/linkd-lld/lld_entry.h"

namespace linkd {

// The daemon's record policy (LINKD_AUDIT_RECORD in its environment). Read
// before the link child takes the client's environment.
audit::RecordPolicy stateRecordPolicy();

// Adds the map option to `inv` if `policy` wants a record of this link, and
// arranges for the record at exit.
void armStateRecord(LldInvocation &inv, audit::RecordPolicy policy);

} // namespace linkd
