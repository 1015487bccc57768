// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What an LLD map does not say about a recorded state symbol, read from the
// input that defined it, in the link child when the link is done: whether it
// is a global (one entity wherever the name appears: two modules with a copy
// hold two copies, whatever their objects were called) or file-local (then
// only copies from a source of the same name are one piece of state), and a
// local's source file as the object names it (`rt.cpp` also when the driver
// compiled it to /tmp/rt-a1b2c3.o or /tmp/ccXyZ123.o).
//
// Inputs the map names by a path the child can open (objects, and ELF's
// "archive(member)") are read; LLD's COFF map names archive members without
// their archive, LTO's objects are LLD's own: those symbols stay unknown
// (binding 0), and the audit pairs them as before (by name and the input's
// stem). The inputs were the link's own; a file that changed or does not
// parse is skipped, never an error.
#pragma once

#include "audit/state_record.h"

#include <vector>

namespace linkd::audit {

// Fills `binding` and `source` of each symbol whose input can be read.
void addInputFacts(std::vector<RecordedSymbol> &symbols);

} // namespace linkd::audit
