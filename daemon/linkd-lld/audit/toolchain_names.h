// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The names every module of a program has a copy of by design: the C
// runtime's and the linker's own state, the startup files' functions, the
// MinGW/GCC runtime's source files, and the sections that hold no mutable
// state of a program's. The format readers (elf_reader.cpp, pe_reader.cpp,
// macho_reader.cpp) and the interposition model leave them out.
#pragma once

#include <string_view>

namespace linkd::audit {

// Names of the C runtime's and the linker's own state (seen only when a
// symbol table lists them).
bool isToolchainName(std::string_view n);
// Functions of the C runtime's startup files: never a runtime's accessor.
bool isToolchainFunction(std::string_view n);
// Source files of the MinGW/GCC C runtime.
bool isToolchainFile(std::string_view stem);
// Writable sections that hold the loader's or the runtime's data, not a
// program's state (relocated read-only data, GOT, constructors, imports).
bool isNotStateSection(std::string_view s);

} // namespace linkd::audit
