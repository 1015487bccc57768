// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The user's directories without the caller's environment
// (config/runtime_paths.h), and where a library link may write
// (client/liblinkd/output_names.h).
#include "client/liblinkd/output_names.h"
#include "config/runtime_paths.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace linkd {
namespace {

// Sets or unsets a variable for one scope.
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(const char *n, const char *value) : name(n) {
    if (const char *v = std::getenv(n))
      old = v;
    if (value)
      setenv(n, value, 1);
    else
      unsetenv(n);
  }
  ~EnvVar() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

TEST(UserDirs, HomeFromThePasswordDatabaseWithoutHome) {
  passwd *pw = getpwuid(getuid());
  ASSERT_NE(pw, nullptr);
  {
    EnvVar home("HOME", nullptr);
    EXPECT_EQ(homeDirectory(), pw->pw_dir);
    EnvVar xdg("XDG_CONFIG_HOME", nullptr);
    EnvVar state("XDG_STATE_HOME", nullptr);
    EnvVar sd("LINKD_STATE_DIR", nullptr);
    EXPECT_EQ(resolveRuntimePaths().stateDir,
              std::string(pw->pw_dir) + "/.local/state/linkd");
  }
  EnvVar home("HOME", "/somewhere/else");
  EXPECT_EQ(homeDirectory(), "/somewhere/else");
}

TEST(UserDirs, RuntimeDirectory) {
  EnvVar sock("LINKD_SOCKET", nullptr);
  {
    EnvVar xdg("XDG_RUNTIME_DIR", "/run/user/4242");
    EXPECT_EQ(userRuntimeDirectory(), "/run/user/4242");
    EXPECT_EQ(resolveRuntimePaths().socketPath,
              "/run/user/4242/linkd/linkd.sock");
  }
  EnvVar xdg("XDG_RUNTIME_DIR", nullptr);
  std::string run = "/run/user/" + std::to_string(getuid());
  struct stat st {};
  bool ours = lstat(run.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
              st.st_uid == getuid() && !(st.st_mode & 077);
  EXPECT_EQ(userRuntimeDirectory(), ours ? run : "");
  EXPECT_EQ(resolveRuntimePaths().socketPath,
            ours ? run + "/linkd/linkd.sock"
                 : "/tmp/linkd-" + std::to_string(getuid()) + "/linkd.sock");
}

std::string outside(std::vector<std::string> argv,
                    Flavor flavor = Flavor::Elf) {
  kernel::Request req;
  req.flavor = flavor;
  req.argv = std::move(argv);
  return kernel::outputOutsideWorkingDirectory(req);
}

TEST(OutputNames, InsideIsFine) {
  EXPECT_EQ(outside({"ld.lld", "-shared", "k.o", "-o", "k.hsaco"}), "");
  EXPECT_EQ(outside({"ld.lld", "-o", "sub/../k", "-Map=m", "k.o"}), "");
  EXPECT_EQ(outside({"ld.lld", "-ok", "--thinlto-index-only", "../in.o"}), "");
  EXPECT_EQ(outside({"lld-link", "/out:k.dll", "/pdb:k.pdb"}, Flavor::Coff),
            "");
}

TEST(OutputNames, EverySpellingOfAnEscape) {
  for (const std::vector<std::string> &argv :
       std::vector<std::vector<std::string>>{
           {"ld.lld", "-o", "/abs/k"},
           {"ld.lld", "-o/abs/k"},
           {"ld.lld", "-o", "../k"},
           {"ld.lld", "-o../k"},
           {"ld.lld", "--output=/abs/k"},
           {"ld.lld", "-output", "a/../../k"},
           {"ld.lld", "-o", "k", "-Map=/m"},
           {"ld.lld", "-o", "k", "--Map", "../m"},
           {"ld.lld", "--dependency-file=../d"},
           {"ld.lld", "--reproduce", "/tmp/r.tar"},
           {"ld.lld", "--why-extract=/w"},
           {"ld.lld", "--lto-obj-path=../o"},
           {"ld.lld", "-plugin-opt=obj-path=/o"},
           {"ld.lld", "--thinlto-index-only=/i"}})
    EXPECT_NE(outside(argv), "") << argv[1] << " " << argv.back();
  for (const char *a : {"/out:../k.dll", "-OUT:/k.dll", "/pdb:/p.pdb",
                        "/implib:../k.lib", "/map:/m"})
    EXPECT_NE(outside({"lld-link", a}, Flavor::Coff), "") << a;
  std::string why = outside({"ld.lld", "-o", "../escape.hsaco"});
  EXPECT_NE(why.find("'../escape.hsaco' (-o)"), std::string::npos) << why;
}

} // namespace
} // namespace linkd
