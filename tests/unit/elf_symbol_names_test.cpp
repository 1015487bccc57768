// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The ELF fast path of renaming (elf_symbol_names.cpp) against LLVM's own
// reading of the result, and its refusal of anything it does not fully
// check: every single-byte corruption of the headers it reads must either
// produce an object LLVM reads with the new names, or nullopt (ObjCopy then
// reports it) — never a crash or an out-of-bounds read (run under ASan in
// the fuzz build).
#include "rewrite/object_rewriter.h"

#include "elf_corruptions.h"

#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace linkd::rewrite {
namespace {

// A small real object, compiled by `compiler` (clang-19's assembler shares
// one string table between section and symbol names; GCC's does not).
std::string compiledObject(const std::string &compiler = "clang-19") {
  char dir[] = "/tmp/linkd-elf-names.XXXXXX";
  if (!mkdtemp(dir))
    return {};
  std::string d = dir;
  std::ofstream(d + "/a.c")
      << "static int counter;\nint shared_state;\n"
         "int helper(int x) { return x + shared_state + counter++; }\n"
         "inline int inl(void) { return 3; }\n"
         "int (*inl_ptr)(void) = inl;\n"
         "int use(void) { return inl() + helper(1); }\n";
  std::string cmd = compiler + " -x c++ -O1 -c " + d + "/a.c -o " + d + "/a.o";
  if (std::system(cmd.c_str()) != 0)
    return {};
  std::ifstream in(d + "/a.o", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::system(("rm -rf " + d).c_str());
  return s.str();
}

std::set<std::string> symbolNames(const std::string &image) {
  std::set<std::string> out;
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(image, "x.o"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return out;
  }
  for (const auto &sym : (*obj)->symbols()) {
    auto name = sym.getName();
    if (name)
      out.insert(name->str());
    else
      llvm::consumeError(name.takeError());
  }
  return out;
}

class ElfSymbolNames : public ::testing::TestWithParam<const char *> {};

TEST_P(ElfSymbolNames, RenamesEverySymbolOfTheNameAndNothingElse) {
  std::string image = compiledObject(GetParam());
  ASSERT_FALSE(image.empty()) << GetParam() << " could not compile the input";
  llvm::StringMap<std::string> renames;
  renames["shared_state"] = "rtAi_shared_state";
  renames["_Z3inlv"] = "rtAi__Z3inlv"; // also keys a COMDAT group
  auto out = renameElfSymbols(image, renames);
  ASSERT_TRUE(out);
  std::set<std::string> names = symbolNames(*out);
  EXPECT_TRUE(names.count("rtAi_shared_state"));
  EXPECT_TRUE(names.count("rtAi__Z3inlv"));
  EXPECT_FALSE(names.count("shared_state"));
  EXPECT_FALSE(names.count("_Z3inlv"));
  EXPECT_TRUE(names.count("_Z6helperi"));
  EXPECT_TRUE(names.count(".text._Z3inlv") || names.count("_Z6helperi"));
  // Nothing to rename: the same bytes.
  auto same = renameElfSymbols(image, {});
  ASSERT_TRUE(same);
  EXPECT_EQ(*same, image);
}

TEST_P(ElfSymbolNames, CorruptHeadersAreRefusedOrStillRead) {
  std::string image = compiledObject(GetParam());
  ASSERT_FALSE(image.empty());
  llvm::StringMap<std::string> renames;
  renames["shared_state"] = "rtAi_shared_state";
  // Every byte of the ELF header and of the section header table, set to
  // a few hostile values.
  linkd::testing::forEachHeaderCorruption(image, [&](const std::string &bad) {
    auto out = renameElfSymbols(bad, renames);
    if (out)
      (void)symbolNames(*out); // readable or rejected by LLVM; no crash
  });
  // Truncated at every length.
  for (size_t len = 0; len < image.size(); len += 7)
    (void)renameElfSymbols(llvm::StringRef(image.data(), len), renames);
}

INSTANTIATE_TEST_SUITE_P(SharedAndOwnStringTables, ElfSymbolNames,
                         ::testing::Values("clang-19", "g++"));

} // namespace
} // namespace linkd::rewrite
