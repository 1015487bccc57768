// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The identity of a relocatable object without its STT_FILE names
// (lib/cache/object_identity.h), on objects clang-19 and gcc compile here:
// the same source under two names is one identity, a change anywhere else
// is another, and no corruption of the bytes it reads is a crash or an
// out-of-bounds read (ASan runs this in the sanitizer build).
#include "cache/object_identity.h"

#include "elf_corruptions.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace linkd {
namespace {

// `source` compiled by `compiler` from a file called `name`.
std::string compiled(const std::string &compiler, const std::string &name,
                     const std::string &source, const std::string &flags = "") {
  char dir[] = "/tmp/linkd-identity.XXXXXX";
  if (!mkdtemp(dir))
    return {};
  std::string d = dir;
  std::ofstream(d + "/" + name) << source;
  std::string cmd = "cd " + d + " && " + compiler + " " + flags + " -c " +
                    name + " -o o.o 2>/dev/null";
  std::string out;
  if (std::system(cmd.c_str()) == 0) {
    std::ifstream in(d + "/o.o", std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    out = s.str();
  }
  std::system(("rm -rf " + d).c_str());
  return out;
}

const char *kProbe = "typedef int x;\n";
const char *kCode = "static int counter;\nint shared;\n"
                    "int f(int v) { return v + shared + counter++; }\n";

class ObjectIdentity : public ::testing::TestWithParam<const char *> {};

TEST_P(ObjectIdentity, TheSourceFileNameIsLeftOutAndNothingElse) {
  for (const char *source : {kProbe, kCode}) {
    std::string a = compiled(GetParam(), "conf123-45-1.c", source);
    std::string b = compiled(GetParam(), "conf9-6789012-1.c", source);
    ASSERT_FALSE(a.empty() || b.empty()) << GetParam() << " did not compile";
    ASSERT_NE(a, b); // the names differ in the bytes, and in their length
    auto ia = identityWithoutFileSymbols(a), ib = identityWithoutFileSymbols(b);
    ASSERT_TRUE(ia && ib);
    EXPECT_EQ(ia->digest, ib->digest);
    EXPECT_EQ(ia->fileSymbols, std::vector<std::string>{"conf123-45-1.c"});
    EXPECT_EQ(ib->fileSymbols, std::vector<std::string>{"conf9-6789012-1.c"});
    EXPECT_EQ(ia->bytes, sha256(a));
  }
  // Another symbol name, another constant, another option: another identity.
  auto id = [&](const std::string &source, const std::string &flags = "") {
    auto i =
        identityWithoutFileSymbols(compiled(GetParam(), "a.c", source, flags));
    return i ? i->digest.hex() : std::string("none");
  };
  std::string same = id(kCode);
  EXPECT_NE(same, "none");
  EXPECT_NE(same, id("static int counter;\nint shared2;\n"
                     "int f(int v) { return v + shared2 + counter++; }\n"));
  EXPECT_NE(same, id("static int counter;\nint shared;\n"
                     "int f(int v) { return v + shared + counter++ + 1; }\n"));
  EXPECT_NE(same, id(kCode, "-fPIC"));
  // With debug information the name is in DWARF too: not the same object.
  auto ga =
      identityWithoutFileSymbols(compiled(GetParam(), "a.c", kCode, "-g"));
  auto gb =
      identityWithoutFileSymbols(compiled(GetParam(), "b.c", kCode, "-g"));
  ASSERT_TRUE(ga && gb);
  EXPECT_NE(ga->digest, gb->digest);
}

TEST_P(ObjectIdentity, CorruptBytesAreRefusedOrIdentifiedNeverReadOutside) {
  std::string image = compiled(GetParam(), "c.c", kCode);
  ASSERT_FALSE(image.empty());
  testing::forEachHeaderCorruption(image, [](const std::string &bad) {
    (void)identityWithoutFileSymbols(bad);
  });
  for (size_t n = 0; n < image.size(); n += 7)
    (void)identityWithoutFileSymbols(std::string_view(image).substr(0, n));
  EXPECT_FALSE(identityWithoutFileSymbols(""));
  EXPECT_FALSE(identityWithoutFileSymbols("!<arch>\n"));
  EXPECT_TRUE(identityWithoutFileSymbols(image));
}

INSTANTIATE_TEST_SUITE_P(Compilers, ObjectIdentity,
                         ::testing::Values("clang-19", "gcc"),
                         [](const auto &info) {
                           return std::string(info.param) == "gcc"
                                      ? std::string("Gcc")
                                      : std::string("Clang");
                         });

} // namespace
} // namespace linkd
