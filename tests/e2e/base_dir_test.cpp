// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Second checkouts and subdirectory builds, end to end through
// make, gcc -B and ar.linkd: PWD keyed only where it names the working
// directory (a stale PWD under `make -C lib` and a build started in lib/
// hit the same entries), a base dir above several checkouts (ccache's
// meaning: paths under it keyed relative to the working directory) shared
// by links and archives, and a name under the base dir that reaches an
// output still keeps each checkout apart. Every output is compared with a
// stock build (ld.lld-19 through gcc -B, llvm-ar-19) in the same place;
// hits come from `linkd stats --json`.
#include "harness.h"

namespace linkd::e2e {
namespace {

constexpr const char *kLlvmAr = "/usr/bin/llvm-ar-19";

class BaseDirTest : public E2eTest {
protected:
  long long stat(const std::string &key) { return cacheStats()[key]; }

  long long requests() { return stat("misses") + stat("archive_misses"); }

  // gcc -B directories whose `ld` is stock LLD or the linkd client, and the
  // make variables for one or the other.
  void SetUp() override {
    E2eTest::SetUp();
    ASSERT_TRUE(exitedZero(run("mkdir -p stock linkd && ln -sf " +
                               tools::ldLld.path + " stock/ld && ln -sf " +
                               binPath("ld.linkd") + " linkd/ld")));
  }
  std::string makeVars(bool linkd) {
    return linkd ? " LDDIR=" + path("linkd") + "/ AR=" + binPath("ar.linkd")
                 : " LDDIR=" + path("stock") + "/ AR=" + std::string(kLlvmAr);
  }

  // A make project: the top directory builds lib/ with `$(MAKE) -C lib`
  // (PWD stays the top directory), lib/ makes a static and a shared
  // library, the top a program linked against lib/ by a relative -L.
  // `libExtra` goes on lib/'s shared-library link.
  void writeProject(const std::string &co, const std::string &libExtra = "") {
    writeFile(co + "/Makefile", "all: prog\n"
                                "prog: main.o lib\n"
                                "\tgcc -B$(LDDIR) main.o -Llib -lf -o prog\n"
                                "lib:\n\t$(MAKE) -C lib\n"
                                "main.o: main.c\n\tgcc -O2 -c main.c\n"
                                ".PHONY: lib\n");
    writeFile(co + "/main.c", "int f(void);\nint main(void) { return f(); }\n");
    writeFile(co + "/lib/Makefile",
              "all: libf.a libg.so\n"
              "libf.a: f.o\n\t$(AR) rcs libf.a f.o\n"
              "libg.so: f.o\n\tgcc -B$(LDDIR) -shared f.o " +
                  libExtra +
                  " -o libg.so\n"
                  "f.o: f.c\n\tgcc -O2 -fPIC -c f.c\n");
    writeFile(co + "/lib/f.c", "int f(void) { return 7; }\n");
  }
  static constexpr const char *kOutputs[] = {"prog", "lib/libf.a",
                                             "lib/libg.so"};

  // Builds `co` with stock tools, keeps the outputs as *.stock, removes
  // them; the objects stay (the same for both builds).
  void stockBuild(const std::string &co, const std::string &env = "") {
    ASSERT_TRUE(exitedZero(
        run(env + "cd " + path(co) + " && make -s" + makeVars(false))));
    for (const char *o : kOutputs)
      ASSERT_TRUE(exitedZero(
          run("cd " + path(co) + " && mv " + o + " " + o + ".stock")));
  }
  void expectStockBytes(const std::string &co) {
    for (const char *o : kOutputs)
      EXPECT_TRUE(sameBytes(co + "/" + o + ".stock", co + "/" + o))
          << co << "/" << o;
  }
  std::string base(const std::string &dir) {
    return "export LINKD_BASE_DIR=" + path(dir) + "; ";
  }
};

TEST_F(BaseDirTest, SubdirectoryBuildHitsWhatTheTopLevelBuildStored) {
  writeProject("top");
  stockBuild("top");
  // From the top: lib/ is linked with PWD naming the top directory.
  ASSERT_TRUE(exitedZero(run("cd top && make -s" + makeVars(true))));
  expectStockBytes("top");
  waitForSettledResults(requests());
  ASSERT_TRUE(exitedZero(run("rm top/lib/libf.a top/lib/libg.so")));
  long long hits = stat("hits"), arHits = stat("archive_hits");
  // Started in lib/: PWD names it.
  ASSERT_TRUE(exitedZero(run("cd top/lib && make -s" + makeVars(true))));
  EXPECT_EQ(stat("hits") - hits, 1);
  EXPECT_EQ(stat("archive_hits") - arHits, 1);
  EXPECT_TRUE(sameBytes("top/lib/libf.a.stock", "top/lib/libf.a"));
  EXPECT_TRUE(sameBytes("top/lib/libg.so.stock", "top/lib/libg.so"));
  // And `make -C lib` from the top, as the top-level build ran it.
  ASSERT_TRUE(exitedZero(run("rm top/lib/libf.a top/lib/libg.so && cd top && "
                             "make -s -C lib" +
                             makeVars(true))));
  EXPECT_EQ(stat("hits") - hits, 2);
  EXPECT_EQ(stat("archive_hits") - arHits, 2);
}

TEST_F(BaseDirTest, CheckoutsUnderOneBaseDirShareLinksAndArchives) {
  for (const char *co : {"ws/A", "ws/B"})
    writeProject(co);
  stockBuild("ws/A");
  stockBuild("ws/B");
  ASSERT_TRUE(
      exitedZero(run(base("ws") + "cd ws/A && make -s" + makeVars(true))));
  expectStockBytes("ws/A");
  waitForSettledResults(requests());
  long long hits = stat("hits"), misses = stat("misses");
  long long arHits = stat("archive_hits"), arMisses = stat("archive_misses");
  ASSERT_TRUE(
      exitedZero(run(base("ws") + "cd ws/B && make -s" + makeVars(true))));
  expectStockBytes("ws/B");
  EXPECT_EQ(stat("hits") - hits, 2); // prog and libg.so
  EXPECT_EQ(stat("misses") - misses, 0);
  EXPECT_EQ(stat("archive_hits") - arHits, 1);
  EXPECT_EQ(stat("archive_misses") - arMisses, 0);
  EXPECT_EQ(run("ws/B/prog").exitCode, 7);
  for (const char *o : kOutputs)
    EXPECT_NE(run("grep -c " + path("ws/A") + " ws/B/" + o).exitCode, 0) << o;
}

// The key holds -rpath /ws/A/bin as "../bin" from lib/, the same in both
// checkouts: the name check finds the base dir in A's output
// and requires A's working directory, so B links its own.
TEST_F(BaseDirTest, NameUnderTheBaseDirThatReachesTheOutputStillMisses) {
  for (const char *co : {"ws/A", "ws/B"})
    writeProject(co, "-Wl,-rpath,$(abspath ..)/bin");
  stockBuild("ws/A");
  stockBuild("ws/B");
  ASSERT_TRUE(
      exitedZero(run(base("ws") + "cd ws/A && make -s" + makeVars(true))));
  waitForSettledResults(requests());
  long long hits = stat("hits"), misses = stat("misses");
  ASSERT_TRUE(
      exitedZero(run(base("ws") + "cd ws/B && make -s" + makeVars(true))));
  expectStockBytes("ws/B");
  EXPECT_EQ(stat("misses") - misses, 1); // libg.so
  EXPECT_EQ(stat("hits") - hits, 1);     // prog does not embed it
  std::string d = run("llvm-readelf-19 -d ws/B/lib/libg.so").out;
  EXPECT_NE(d.find(path("ws/B/bin")), std::string::npos) << d;
  EXPECT_EQ(d.find(path("ws/A")), std::string::npos) << d;
  EXPECT_EQ(stat("miss_explained_embedded_name"), 1);
}

TEST_F(BaseDirTest, ThinArchiveOfAbsoluteMemberPathsIsNotShared) {
  for (const char *co : {"ws/A", "ws/B"}) {
    writeFile(std::string(co) + "/f.c", "int f(void) { return 1; }\n");
    ASSERT_TRUE(exitedZero(run("cd " + path(co) + " && clang-19 -O2 -c f.c")));
  }
  std::string ar = "rm -f t.a && {ar} rcsT t.a $PWD/f.o";
  for (const char *co : {"ws/A", "ws/B"}) {
    std::string in = base("ws") + "cd " + path(co) + " && ";
    ASSERT_TRUE(exitedZero(
        run(in + replaceAll(ar, "{ar}", kLlvmAr) + " && mv t.a t.a.stock")));
    long long arHits = stat("archive_hits");
    ASSERT_TRUE(
        exitedZero(run(in + replaceAll(ar, "{ar}", binPath("ar.linkd")))));
    EXPECT_TRUE(
        sameBytes(std::string(co) + "/t.a.stock", std::string(co) + "/t.a"));
    EXPECT_EQ(stat("archive_hits"), arHits) << co;
    waitForSettledResults(requests());
  }
  EXPECT_EQ(run("grep -c " + path("ws/A") + " ws/B/t.a").exitCode, 1);
}

TEST_F(BaseDirTest, AMissSaysWhichKeyPartDiffered) {
  writeFile("ws/A/a.c", "int main(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(run("cd ws/A && clang-19 -c a.c && cp -r " +
                             path("ws/A") + " " + path("ws/B") + " && ln -s " +
                             path("ws/A") + " " + path("ws/viaA"))));
  auto link = [&](const std::string &dir, const std::string &extra) {
    EXPECT_TRUE(exitedZero(run("export LINKD_LOG=debug; " + base("ws") + "cd " +
                               path(dir) + " && " + binPath("ld.linkd") +
                               " a.o -e main -o prog " + extra)));
    waitForSettledResults(requests());
  };
  link("ws/A", "-rpath /opt/A");
  link("ws/B", "-rpath /opt/B");
  EXPECT_EQ(stat("miss_explained_outside_base_dir"), 1);
  EXPECT_FALSE(logLines("argv[6]: '/opt/A' -> '/opt/B' (a path outside the "
                        "base dir " +
                        path("ws") + ")")
                   .empty());
  link("ws/B", "-rpath /opt/B -z now");
  EXPECT_EQ(stat("miss_explained_argv"), 1);
  // PWD naming the working directory through a symbolic link: LLVM takes
  // that spelling.
  link("ws/A", "-rpath /opt/A");
  link("ws/viaA", "-rpath /opt/A");
  EXPECT_EQ(stat("miss_explained_pwd"), 1);
  std::string text = run(binPath("linkd") + " stats").out;
  EXPECT_NE(text.find("misses explained"), std::string::npos) << text;
  EXPECT_NE(text.find("a path outside the base dir"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  last: " + path("ws/A/prog") + ": "), std::string::npos)
      << text;
  // An object of other content: named, in the log and in `stats`' last line.
  ASSERT_TRUE(exitedZero(run("cd ws/B && echo 'int x = 1;' >> a.c && "
                             "clang-19 -c a.c")));
  link("ws/B", "-rpath /opt/B -z now");
  EXPECT_EQ(stat("miss_explained_input"), 1);
  EXPECT_FALSE(logLines("input 'a.o' has other content").empty());
  text = run(binPath("linkd") + " stats").out;
  EXPECT_NE(text.find("input 'a.o' has other content"), std::string::npos)
      << text;
}

// CMake, Release and a debug build with -ffile-prefix-map, in two checkouts
// under one base dir: the shared library hits; the program's RUNPATH names
// its build directory, so it does not.
TEST_F(BaseDirTest, CMakeDebugBuildsWithFilePrefixMapShareAcrossCheckouts) {
  ASSERT_TRUE(exitedZero(run("which cmake ninja")));
  for (const char *co : {"ws/A", "ws/B"}) {
    std::string c(co);
    writeFile(c + "/CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.16)\nproject(p C)\n"
              "add_library(f SHARED f.c)\nadd_library(s STATIC f.c)\n"
              "add_executable(main main.c)\ntarget_link_libraries(main f)\n");
    writeFile(c + "/f.c", "int f(void) { return 9; }\n");
    writeFile(c + "/main.c", "int f(void);\nint main(void) { return f(); }\n");
  }
  // Configured first (CMake's own test links are not counted), then built.
  auto configure = [&](const std::string &co, bool linkd) {
    std::string flags = "-B" + path(linkd ? "linkd" : "stock") + "/";
    std::string ar = linkd ? binPath("ar.linkd") : std::string(kLlvmAr);
    std::string ranlib = linkd ? binPath("ranlib.linkd")
                               : std::string("/usr/bin/llvm-ranlib-19");
    return run(base("ws") + "cd " + path(co) +
               " && rm -rf build && CC=gcc cmake -S . -B build -G Ninja "
               "-DCMAKE_BUILD_TYPE=Debug -DCMAKE_AR=" +
               ar + " -DCMAKE_RANLIB=" + ranlib +
               " \"-DCMAKE_C_FLAGS=-ffile-prefix-map=" + path(co) +
               "=.\" "
               "-DCMAKE_EXE_LINKER_FLAGS=" +
               flags + " -DCMAKE_SHARED_LINKER_FLAGS=" + flags + " >/dev/null");
  };
  auto build = [&](const std::string &co, bool linkd) {
    EXPECT_TRUE(exitedZero(configure(co, linkd)));
    return run(base("ws") + "cd " + path(co) + " && ninja -C build >/dev/null");
  };
  const char *outs[] = {"libf.so", "libs.a", "main"};
  ASSERT_TRUE(exitedZero(build("ws/B", false)));
  for (const char *o : outs)
    ASSERT_TRUE(exitedZero(
        run("cp ws/B/build/" + std::string(o) + " ws/B/" + o + ".stock")));
  ASSERT_TRUE(exitedZero(build("ws/A", true)));
  ASSERT_TRUE(exitedZero(configure("ws/B", true)));
  waitForSettledResults(requests());
  long long hits = stat("hits"), misses = stat("misses");
  long long arHits = stat("archive_hits"), arMisses = stat("archive_misses");
  ASSERT_TRUE(
      exitedZero(run(base("ws") + "cd ws/B && ninja -C build >/dev/null")));
  for (const char *o : outs)
    EXPECT_TRUE(sameBytes("ws/B/" + std::string(o) + ".stock",
                          "ws/B/build/" + std::string(o)))
        << o;
  EXPECT_EQ(stat("hits") - hits, 1);           // libf.so
  EXPECT_EQ(stat("misses") - misses, 1);       // main: RUNPATH names ws/B/build
  EXPECT_GE(stat("archive_hits") - arHits, 1); // ar, and ranlib if it runs
  EXPECT_EQ(stat("archive_misses") - arMisses, 0);
  for (const char *o : outs)
    EXPECT_EQ(run("grep -c " + path("ws/A") + " ws/B/build/" + o).exitCode, 1)
        << o;
}

} // namespace
} // namespace linkd::e2e
