// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// libFuzzer target over the audit's readers (docs/audit.md): the input
// bytes are one module of a program (ELF, PE or Mach-O, whatever they turn
// out to be) read as the audit reads a module it found on disk, as a PDB
// (the state a PE module's PDB lists), and, as text, an LLD map file and a
// stored link record. Modules are hostile
// input: errors are fine; crashes, aborts, sanitizer reports and leaks are
// not. Built only with -DLINKD_FUZZ=ON; seeds from tests/fuzz/make_corpus.sh
// plus any linked modules (docs/audit.md, "Fuzzing").
#include "audit/state_record.h"
#include "daemon/linkd-lld/audit/module_reader.h"
#include "daemon/linkd-lld/audit/pdb_reader.h"

#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  std::string error;
  if (auto m = linkd::audit::readModuleBytes("fuzz-input", bytes, &error)) {
    // A record applied to what was read, as for a stripped module.
    std::vector<linkd::audit::RecordedSymbol> rec = {
        {'D', "halide_state", "rt.o", 0, ""},
        {'T', "tls", "lib.a(x.o)", 'g', ""},
        {'W', "12", "rt.o", 0, ""}};
    linkd::audit::applyRecord(*m, rec);
  }
  std::vector<linkd::audit::RecordedSymbol> fromPdb;
  linkd::audit::pdbStateSymbolsFromBytes("fuzz.pdb", bytes, "", fromPdb,
                                         &error);
  auto syms = linkd::audit::stateFromLldMap(bytes);
  std::vector<linkd::audit::RecordedSymbol> decoded;
  linkd::audit::decodeStateRecord(bytes, decoded, &error);
  for (const auto &s : syms)
    (void)linkd::audit::isToolchainInput(s.input);
  return 0;
}
