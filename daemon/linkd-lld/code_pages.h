// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Drops this process's page-table entries for executable file mappings
// (libLLVM's code, mostly). They are clean copies of page-cache pages, so
// nothing is lost; what runs next faults them in again. Only r-x mappings:
// read-only data may be RELRO, written during relocation, and discarding it
// would revert it to the file's bytes.
//
// The zygote does it once it is loaded (its children fault their code in
// anyway: fork does not copy page tables of file mappings that were never
// written), which keeps its idle RSS small; a reusable worker does it when
// it has waited a while (link_worker.cpp).
#pragma once

namespace linkd {

void dropCodePages();

} // namespace linkd
