// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd-lld audit PROGRAM [MODULE...] [--search DIR]... [--json]
// [--allow FILE] [--allow-incomplete]` (docs/audit.md): the program's load
// closure (load_closure.h), each module's state (module_reader.h; for modules
// without a symbol table, the record linkd kept when it linked them, found
// by the module's digest in the local store), and the state symbols with
// more than one copy at run time (audit/audit_model.h).
// Exit status: 0 clean (the whole closure inspected), 1 duplicated state
// found, 2 bad usage or a module named on the command line that cannot be
// read, 3 incomplete (a module of the closure not inspectable, not readable
// or not found; each is named) unless --allow-incomplete.
#pragma once

namespace linkd {

int cmdAudit(int argc, char **argv);

} // namespace linkd
