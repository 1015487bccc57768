// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A real build through the archivers: googletest (Debian's /usr/src/googletest,
// with its samples) configured with CMake and Ninja, once with stock tools
// (llvm-ar-19, llvm-ranlib-19, ld.lld) and once with CMAKE_AR=ar.linkd,
// CMAKE_RANLIB=ranlib.linkd and the linker at ld.linkd, unchanged otherwise.
// Both build in the same directory (moved aside in between), so the objects
// are identical and the archives must be too; the samples must pass. Then
// the archives are made again: every archive request is a cache hit.
//
// Its own executable: a whole build takes longer than the other end-to-end
// tests' deadline (tests/e2e/CMakeLists.txt).
#include "harness.h"

#include <unistd.h>

#include <filesystem>

namespace linkd::e2e {
namespace {

const Tool kCmake{"/usr/bin/cmake", "cmake"};
const Tool kNinja{"/usr/bin/ninja", "ninja-build"};
const Tool kLlvmAr{"/usr/bin/llvm-ar-19", "llvm-19"};
const std::string kSource = "/usr/src/googletest";
const std::vector<std::string> kArchives = {
    "lib/libgtest.a", "lib/libgtest_main.a", "lib/libgmock.a",
    "lib/libgmock_main.a"};

constexpr auto kBuildTimeout = std::chrono::minutes(15);

class ArchiverBuild : public E2eTest {
protected:
  RunResult configureAndBuild(const std::string &ar, const std::string &ranlib,
                              const std::string &linkerFlag) {
    return run(
        "cmake -S " + kSource +
            " -B gt -G Ninja "
            "-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "
            "-DCMAKE_AR=" +
            ar + " -DCMAKE_RANLIB=" + ranlib +
            " -DCMAKE_EXE_LINKER_FLAGS=" + linkerFlag +
            " -Dgtest_build_samples=ON >configure.log 2>&1 && "
            "ninja -C gt -j2 >build.log 2>&1",
        kBuildTimeout);
  }
};

TEST_F(ArchiverBuild, GoogletestBuildsWithTheArchiversLikeStock) {
  ASSERT_TRUE(haveTool(kCmake));
  ASSERT_TRUE(haveTool(kNinja));
  ASSERT_TRUE(haveTool(kLlvmAr));
  ASSERT_TRUE(haveFile(kSource + "/CMakeLists.txt", "googletest"));

  RunResult stock = configureAndBuild(kLlvmAr.path, "/usr/bin/llvm-ranlib-19",
                                      "-fuse-ld=lld");
  ASSERT_TRUE(exitedZero(stock)) << readFile("build.log");
  ASSERT_TRUE(exitedZero(run("mv gt gt.stock")));

  auto before = cacheStats();
  std::string bin = binDir();
  RunResult ours = configureAndBuild(bin + "/ar.linkd", bin + "/ranlib.linkd",
                                     "--ld-path=" + bin + "/ld.linkd");
  ASSERT_TRUE(exitedZero(ours)) << readFile("build.log");
  auto built = cacheStats();
  // qc and ranlib for each of the four libraries, all new; and the
  // samples' links.
  EXPECT_EQ(built["archive_requests"] - before["archive_requests"], 8);
  EXPECT_EQ(built["archive_misses"] - before["archive_misses"], 8);
  EXPECT_GE(built["requests"] - before["requests"], 10);
  for (const std::string &a : kArchives)
    EXPECT_TRUE(sameBytes("gt.stock/" + a, "gt/" + a));

  RunResult samples = run("cd gt/googletest && for t in sample*_unittest; do "
                          "./$t >/dev/null || { echo $t failed; exit 1; }; "
                          "echo $t; done",
                          kBuildTimeout);
  ASSERT_TRUE(exitedZero(samples));
  EXPECT_NE(samples.out.find("sample10_unittest"), std::string::npos)
      << samples.out;

  // The archives again, as after a clean of the library targets: hits.
  // (The eight archives were stored after their answers, long before the
  // build ended; the samples' links are stored too.)
  waitForStored(before["results_stored"] + 8);
  auto stored = cacheStats();
  ASSERT_TRUE(exitedZero(
      run("rm gt/lib/*.a && ninja -C gt -j2 >rebuild.log", kBuildTimeout)))
      << readFile("rebuild.log");
  auto rebuilt = cacheStats();
  EXPECT_EQ(rebuilt["archive_hits"] - stored["archive_hits"], 8);
  EXPECT_EQ(rebuilt["archive_misses"] - stored["archive_misses"], 0);
  for (const std::string &a : kArchives)
    EXPECT_TRUE(sameBytes("gt.stock/" + a, "gt/" + a));
  EXPECT_TRUE(exitedZero(run("gt/googletest/sample1_unittest >/dev/null")));
}

} // namespace
} // namespace linkd::e2e
