// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What module_reader.cpp's readers share, and each format's entry point:
// ELF (elf_reader.cpp), PE (pe_reader.cpp), Mach-O (macho_reader.cpp), as
// LLD splits its drivers by format. Internal to the audit.
#pragma once

#include "daemon/linkd-lld/audit/module_reader.h"

#include "llvm/Demangle/Demangle.h"
#include "llvm/Object/COFF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/MachO.h"
#include "llvm/Support/Error.h"

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linkd::audit {

inline std::string errorText(llvm::Error e) { return toString(std::move(e)); }

inline std::string demangled(std::string_view name) {
  return llvm::demangle(std::string(name));
}

// A NUL-terminated string at `off` in [base, base+size), or nullopt.
inline std::optional<std::string> boundedString(const char *base, uint64_t size,
                                                uint64_t off) {
  if (!base || off >= size)
    return std::nullopt;
  size_t len = strnlen(base + off, size - off);
  if (len == size - off)
    return std::nullopt;
  return std::string(base + off, len);
}

// The non-empty entries of a colon-separated search path.
inline void splitPaths(const std::string &list, std::vector<std::string> &out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t colon = list.find(':', start);
    std::string p =
        list.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!p.empty())
      out.push_back(p);
    if (colon == std::string::npos)
      break;
    start = colon + 1;
  }
}

// An ELF executable or shared object, any class and byte order.
void readElf(const llvm::object::ELFObjectFileBase &o, ModuleInfo &m);
// How the loader treats an ELF module's copy of `name`, recorded by a link
// (its binding known only as local or not, its visibility not at all).
void judgeRecordedElf(const ModuleInfo &m, const std::string &name, bool local,
                      StateDef &d);

// A PE image.
void readPe(const llvm::object::COFFObjectFile &o, ModuleInfo &m);
// Why a PE module's copy is its own (`from` names the source of the
// definition).
std::string peCopyWhy(const ModuleInfo &m, const char *from);

// A Mach-O executable, dylib or bundle.
void readMachO(const llvm::object::MachOObjectFile &o, ModuleInfo &m);

} // namespace linkd::audit
