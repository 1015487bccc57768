// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Keys by content, not by name, end to end with the real drivers:
// gcc with its linker plugin options and temp names, clang's one-step
// compile-and-link, a JIT-style kernel link under fresh temp names, and
// checkouts with base dirs that must never get each other's bytes when the
// bytes embed the checkout (CMake's build rpath, -soname, DT_NEEDED by path,
// -Map, --dependency-file), with diagnostics replayed under the current
// names. Every output is compared with stock LLD's; hits come from
// `linkd stats --json`.
#include "harness.h"

#include <filesystem>

namespace linkd::e2e {
namespace {

class ContentKeyTest : public E2eTest {
protected:
  long long stat(const std::string &key) { return cacheStats()[key]; }


  // A directory whose `ld` and `ld.lld` are stock LLD (gcc -B).
  std::string stockGccDir() {
    EXPECT_TRUE(exitedZero(run("mkdir -p stockgcc && ln -sf " +
                               tools::ldLld.path + " stockgcc/ld && ln -sf " +
                               tools::ldLld.path + " stockgcc/ld.lld")));
    return path("stockgcc") + "/";
  }

  // Runs `cmd` ({ld} = stock), keeps `out` as out.stock, runs it with
  // {ld} = `linkd` and compares. Returns whether the daemon counted a hit.
  bool linkAndCompare(const std::string &cmd, const std::string &out,
                      const std::string &linkd, const std::string &stock,
                      const std::string &env = "") {
    RunResult s = run(env + replaceAll(cmd, "{ld}", stock));
    EXPECT_TRUE(exitedZero(s));
    EXPECT_TRUE(exitedZero(run("mv " + out + " " + out + ".stock")));
    long long hits = stat("hits");
    RunResult o = run(env + replaceAll(cmd, "{ld}", linkd));
    EXPECT_TRUE(exitedZero(o));
    EXPECT_EQ(o.err, s.err) << cmd;
    EXPECT_TRUE(sameBytes(out + ".stock", out)) << cmd;
    bool hit = stat("hits") > hits;
    if (!hit)
      waitForSettledResults(stat("misses"));
    return hit;
  }
};

TEST_F(ContentKeyTest, GccWithItsLinkerPluginHitsForAProgramAndASharedLibrary) {
  ASSERT_TRUE(haveTool(tools::gcc));
  writeFile("t.c", "int f(void);\nint main(void) { return f() - 7; }\n");
  writeFile("f.c", "int f(void) { return 7; }\n");
  ASSERT_TRUE(exitedZero(run("gcc -O2 -fPIC -c t.c f.c")));
  std::string stock = stockGccDir(), ours = binDir() + "/gcc/";
  // Each run passes a fresh -plugin-opt=-fresolution=/tmp/ccXXXXXX.res.
  int hits = 0;
  for (int round = 0; round < 3; ++round) {
    hits += linkAndCompare("gcc -B{ld} -shared f.o -o libf.so", "libf.so",
                           ours, stock);
    hits += linkAndCompare("gcc -B{ld} t.o -L. -lf -o t", "t", ours, stock);
    EXPECT_EQ(run("LD_LIBRARY_PATH=. ./t").exitCode, 0);
  }
  EXPECT_GE(hits, 4);
  EXPECT_GE(stat("hits"), 4);
}

TEST_F(ContentKeyTest, GccCompileAndLinkInOneStepHits) {
  ASSERT_TRUE(haveTool(tools::gcc));
  writeFile("c.c", "int main(void) { return 3; }\n");
  std::string stock = stockGccDir(), ours = binDir() + "/gcc/";
  int hits = 0;
  for (int round = 0; round < 3; ++round) // /tmp/ccXXXXXX.o each time
    hits += linkAndCompare("gcc -B{ld} c.c -o c", "c", ours, stock);
  EXPECT_GE(hits, 2);
}

TEST_F(ContentKeyTest, ClangCompileAndLinkInOneStepHits) {
  writeFile("c.c", "int main(void) { return 3; }\n");
  int hits = 0;
  for (int round = 0; round < 3; ++round) // /tmp/c-XXXXXX.o each time
    hits += linkAndCompare("clang-19 c.c -o c --ld-path={ld}", "c",
                           binPath("ld.linkd"), tools::ldLld.path);
  EXPECT_GE(hits, 2);
  EXPECT_EQ(run("./c").exitCode, 3);
}

TEST_F(ContentKeyTest, MingwCompileAndLinkInOneStepHits) {
  // clang's MinGW driver compiles to /tmp/hello-XXXXXX.o each time; with a
  // fixed timestamp the PE image does not depend on that name (two misses
  // before the key took such inputs by content).
  ASSERT_TRUE(haveTool(tools::wine));
  writeFile("hello.c", "#include <stdio.h>\nint main(void) { "
                       "puts(\"hello from pe\"); return 0; }\n");
  const std::string env = "SOURCE_DATE_EPOCH=1700000000 ";
  int hits = 0;
  for (int round = 0; round < 3; ++round)
    hits += linkAndCompare("clang-19 --target=x86_64-w64-mingw32 "
                           "--ld-path={ld} hello.c -o hello.exe",
                           "hello.exe", binPath("ld.linkd"), tools::ldLld.path,
                           env);
  EXPECT_GE(hits, 2);
  RunResult r = run(wine("./hello.exe"), 180s);
  EXPECT_NE(r.out.find("hello from pe"), std::string::npos) << describe(r);
}

TEST_F(ContentKeyTest, MingwDllHitsOnlyUnderItsOwnName) {
  // A DLL carries its own name (export directory, import library): a DLL of
  // another name from the same object must be linked, never replayed.
  writeFile("f.c", "__declspec(dllexport) int f(void) { return 42; }\n");
  const std::string env = "SOURCE_DATE_EPOCH=1700000000 ";
  const std::string cc = "clang-19 --target=x86_64-w64-mingw32 --ld-path={ld} "
                         "-shared f.c ";
  ASSERT_TRUE(exitedZero(run("mkdir -p a b")));
  long long hits0 = stat("hits");
  EXPECT_FALSE(linkAndCompare(cc + "-o a/foo.dll -Wl,--out-implib,a/libfoo.a",
                              "a/foo.dll", binPath("ld.linkd"),
                              tools::ldLld.path, env));
  // Same object, another DLL name: a miss, with stock's bytes.
  EXPECT_FALSE(linkAndCompare(cc + "-o b/bar.dll -Wl,--out-implib,b/libbar.a",
                              "b/bar.dll", binPath("ld.linkd"),
                              tools::ldLld.path, env));
  // Another temp object, the same names: a hit, import library included
  // (compared with the one stock LLD writes for the same command).
  EXPECT_TRUE(linkAndCompare(cc + "-o a/foo.dll -Wl,--out-implib,a/libfoo.a",
                             "a/foo.dll", binPath("ld.linkd"),
                             tools::ldLld.path, env));
  ASSERT_TRUE(exitedZero(run("mv a/libfoo.a a/libfoo.hit && " + env +
                             replaceAll(cc, "{ld}", tools::ldLld.path) +
                             "-o a/foo.dll -Wl,--out-implib,a/libfoo.a")));
  EXPECT_TRUE(sameBytes("a/libfoo.hit", "a/libfoo.a"));
  EXPECT_EQ(stat("hits") - hits0, 1);
}

TEST_F(ContentKeyTest, LibtoolSharedLibrariesGoThroughLinkdByCompilerPath) {
  // libtool drops flags it does not know from shared-library links: -B in
  // the link flags leaves libx.so to GNU ld, silently.
  // COMPILER_PATH, the documented way, reaches it; a rebuild hits.
  ASSERT_TRUE(haveTool(tools::gcc));
  ASSERT_TRUE(haveTool(tools::libtool));
  writeFile("x.c", "int lt_f(void) { return 5; }\n");
  writeFile("m.c", "int lt_f(void);\nint main(void) { return lt_f() - 5; }\n");
  ASSERT_TRUE(exitedZero(run("libtool --tag=CC --mode=compile gcc -O2 -c x.c "
                             "&& libtool --tag=CC --mode=compile gcc -O2 -c "
                             "m.c")));
  auto linkedByLld = [&] {
    return run(tools::readelf.path + " -p .comment .libs/libx.so.0.0.0")
               .out.find(" LLD ") != std::string::npos;
  };
  const std::string linkLib =
      "libtool --tag=CC --mode=link gcc -O2 -o libx.la x.lo -rpath "
      "/usr/local/lib";
  long long requests = stat("requests");
  ASSERT_TRUE(exitedZero(run(linkLib + " -B" + binDir() + "/gcc/")));
  EXPECT_FALSE(linkedByLld()); // the flag went nowhere
  EXPECT_EQ(stat("requests"), requests);
  const std::string env = "COMPILER_PATH=" + binDir() + "/gcc ";
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(exitedZero(run("rm -rf .libs/libx.* libx.la prog .libs/prog "
                               "&& " +
                               env + linkLib + " && " + env +
                               "libtool --tag=CC --mode=link gcc -O2 -o prog "
                               "m.lo libx.la")));
    EXPECT_TRUE(linkedByLld());
    EXPECT_EQ(run("./prog").exitCode, 0);
    if (round == 0)
      waitForSettledResults(stat("misses"));
  }
  EXPECT_GE(stat("requests") - requests, 4);
  EXPECT_EQ(stat("hits"), 2); // the library and the program, rebuilt
}

TEST_F(ContentKeyTest, AmdgpuKernelUnderThreeTempNamesHits) {
  writeFile("k.c", "__attribute__((amdgpu_kernel)) void k(int *p) { *p = 42; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 --target=amdgcn-amd-amdhsa "
                             "-mcpu=gfx90a -nogpulib -O2 -c k.c -o k.o")));
  // Triton, IREE and XLA spell it `ld.lld -flavor gnu -shared in -o out`.
  int hits = 0;
  for (const char *tmp : {"tmpa8x2", "tmpq01z", "tmp7kk3"}) {
    std::string in = std::string("jit/") + tmp + ".o";
    std::string out = std::string("jit/") + tmp + "-out.hsaco";
    ASSERT_TRUE(exitedZero(run("mkdir -p jit && cp k.o " + in)));
    hits += linkAndCompare("{ld} -flavor gnu -shared " + path(in) + " -o " +
                               path(out),
                           out, binPath("ld.linkd"), tools::ldLld.path);
  }
  EXPECT_GE(hits, 2);
}

// Two checkouts A and B of one tree, each with LINKD_BASE_DIR set to itself,
// through the test's one daemon: every output of B is stock's output in B.
class CheckoutTest : public ContentKeyTest {
protected:
  std::string env(const std::string &co) {
    return "cd " + path(co) + " && export LINKD_BASE_DIR=" + path(co) + "; ";
  }
  // Links `cmd` in A, then in B; returns whether B's link was a hit.
  bool inBoth(const std::string &setup, const std::string &cmd,
              const std::vector<std::string> &outs) {
    for (const char *co : {"A", "B"}) {
      EXPECT_TRUE(exitedZero(run("mkdir -p " + std::string(co))));
      EXPECT_TRUE(exitedZero(run(env(co) + setup)));
    }
    bool hitB = false;
    for (const char *co : {"A", "B"}) {
      std::string c(co);
      RunResult s = run(env(c) + replaceAll(cmd, "{ld}", tools::ldLld.path));
      EXPECT_TRUE(exitedZero(s));
      for (const std::string &o : outs)
        EXPECT_TRUE(exitedZero(run(env(c) + "mv " + o + " " + o + ".stock")));
      long long hits = stat("hits");
      RunResult r = run(env(c) + replaceAll(cmd, "{ld}", binPath("ld.linkd")));
      EXPECT_TRUE(exitedZero(r));
      EXPECT_EQ(r.err, s.err) << c << ": " << cmd;
      for (const std::string &o : outs)
        EXPECT_TRUE(sameBytes(c + "/" + o + ".stock", c + "/" + o))
            << c << ": " << cmd;
      if (c == "A")
        waitForSettledResults(stat("misses"));
      else
        hitB = stat("hits") > hits;
    }
    return hitB;
  }
  static constexpr const char *kLib =
      "mkdir -p lib && printf 'int f(void) { return 5; }\\n' > f.c && "
      "printf 'int f(void);\\nint main(void) { return f(); }\\n' > main.c && "
      "clang-19 -O2 -fPIC -c f.c main.c && ";
};

TEST_F(CheckoutTest, CheckoutsShareWhatDoesNotEmbedThem) {
  EXPECT_TRUE(inBoth(std::string(kLib) + "true",
                     "{ld} main.o f.o -e main -o prog", {"prog"}));
  EXPECT_TRUE(inBoth("true", "{ld} $PWD/main.o $PWD/f.o -e main -o $PWD/p2",
                     {"p2"}));
}

TEST_F(CheckoutTest, AbsoluteBuildRpathIsNeverTakenFromTheOtherCheckout) {
  // A second checkout must not get the first one's RUNPATH.
  EXPECT_FALSE(inBoth(std::string(kLib) +
                          "clang-19 -shared f.o -o lib/libf.so",
                      "clang-19 main.o -Llib -lf -Wl,-rpath,$PWD/lib -o main "
                      "--ld-path={ld}",
                      {"main"}));
  std::string ra = run("llvm-readelf-19 -d A/main").out;
  EXPECT_NE(ra.find(path("A/lib")), std::string::npos) << ra;
  EXPECT_NE(run("llvm-readelf-19 -d B/main").out.find(path("B/lib")),
            std::string::npos);
}

TEST_F(CheckoutTest, SonameUnderTheCheckoutIsNotShared) {
  EXPECT_FALSE(inBoth(std::string(kLib) + "true",
                      "{ld} -shared f.o -soname $PWD/lib/libf.so -o libf.so",
                      {"libf.so"}));
}

TEST_F(CheckoutTest, SharedLibraryByAbsolutePathWithoutSonameIsNotShared) {
  // DT_NEEDED is the path as given.
  EXPECT_FALSE(inBoth(std::string(kLib) + "clang-19 -shared f.o -o lib/libf.so",
                      "{ld} main.o $PWD/lib/libf.so -e main -o main",
                      {"main"}));
}

TEST_F(CheckoutTest, MapAndDependencyFilesNamingTheCheckoutAreNotShared) {
  EXPECT_FALSE(inBoth(std::string(kLib) + "true",
                      "{ld} $PWD/main.o $PWD/f.o -e main -o prog -Map=prog.map",
                      {"prog", "prog.map"}));
  EXPECT_FALSE(inBoth("true",
                      "{ld} $PWD/main.o $PWD/f.o -e main -o prog2 "
                      "--dependency-file=prog2.d",
                      {"prog2", "prog2.d"}));
}

TEST_F(CheckoutTest, HitsAreCountedPerCheckoutThroughOneDaemon) {
  long long before = stat("hits");
  EXPECT_TRUE(inBoth(std::string(kLib) + "true",
                     "clang-19 $PWD/main.o $PWD/f.o -o prog --ld-path={ld}",
                     {"prog"}));
  EXPECT_EQ(stat("hits") - before, 1); // B's link; A's was the miss
  EXPECT_EQ(run("B/prog").exitCode, 5);
}

TEST_F(ContentKeyTest, WarningNamingAnInputIsReplayedWithTheCurrentName) {
  // --warn-backrefs names both archives: a hit under other names replays
  // the warning with this link's names, as stock LLD prints it.
  writeFile("main.c", "void b(void);\nint main(void) { b(); return 0; }\n");
  writeFile("a.c", "void a(void) {}\n");
  writeFile("b.c", "void a(void);\nvoid b(void) { a(); }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c main.c a.c b.c")));
  int hits = 0;
  for (const char *d : {"tmpx1", "tmpy2", "tmpz3"}) {
    std::string dir(d);
    ASSERT_TRUE(exitedZero(run("mkdir -p " + dir + " && llvm-ar-19 rcs " +
                               dir + "/liba.a a.o && llvm-ar-19 rcs " + dir +
                               "/libb.a b.o")));
    std::string cmd = "{ld} --warn-backrefs main.o " + dir + "/liba.a " + dir +
                      "/libb.a -e main -o prog";
    hits += linkAndCompare(cmd, "prog", binPath("ld.linkd"), tools::ldLld.path);
    RunResult again = run(replaceAll(cmd, "{ld}", binPath("ld.linkd")));
    EXPECT_NE(again.err.find(dir + "/libb.a(b.o)"), std::string::npos)
        << again.err;
  }
  EXPECT_GE(hits, 2);
}

TEST_F(ContentKeyTest, CMakeProjectInASecondCheckoutGetsItsOwnRpath) {
  ASSERT_TRUE(exitedZero(run("which cmake ninja")));
  auto writeTree = [&](const std::string &co) {
    writeFile(co + "/CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.16)\nproject(p C)\n"
              "add_library(f SHARED f.c)\nadd_executable(main main.c)\n"
              "target_link_libraries(main f)\n");
    writeFile(co + "/f.c", "int f(void) { return 9; }\n");
    writeFile(co + "/main.c", "int f(void);\nint main(void) { return f(); }\n");
  };
  // tools/ld points at stock LLD for the reference build, then at ld.linkd.
  auto useLinker = [&](const std::string &linker) {
    EXPECT_TRUE(exitedZero(run("mkdir -p tools && ln -sfn " + linker +
                               " tools/ld")));
  };
  auto inCheckout = [&](const std::string &co) {
    return "cd " + path(co) + " && export LINKD_BASE_DIR=" + path(co) + "; ";
  };
  auto configureAndBuild = [&](const std::string &co) {
    std::string flags = "--ld-path=" + path("tools/ld");
    EXPECT_TRUE(exitedZero(run(
        inCheckout(co) +
        "CC=clang-19 cmake -S . -B build -G Ninja "
        "-DCMAKE_C_FLAGS=-ffile-prefix-map=" + path(co) + "=. "
        "-DCMAKE_EXE_LINKER_FLAGS=" + flags +
        " -DCMAKE_SHARED_LINKER_FLAGS=" + flags + " >/dev/null && "
        "ninja -C build >/dev/null")));
  };
  for (const char *co : {"A", "B"})
    writeTree(co);
  useLinker(binPath("ld.linkd"));
  configureAndBuild("A");
  waitForSettledResults(stat("misses"));
  useLinker(tools::ldLld.path);
  configureAndBuild("B");
  ASSERT_TRUE(exitedZero(run("cp B/build/main B/main.stock && "
                             "cp B/build/libf.so B/libf.so.stock")));
  useLinker(binPath("ld.linkd"));
  long long hits = stat("hits"), misses = stat("misses");
  ASSERT_TRUE(exitedZero(run(inCheckout("B") +
                             "rm build/main build/libf.so && "
                             "ninja -C build >/dev/null")));
  EXPECT_TRUE(sameBytes("B/main.stock", "B/build/main"));
  EXPECT_TRUE(sameBytes("B/libf.so.stock", "B/build/libf.so"));
  EXPECT_EQ(run("B/build/main").exitCode, 9);
  // libf.so does not embed the checkout (a hit); main's RUNPATH does.
  EXPECT_EQ(stat("hits") - hits, 1);
  EXPECT_EQ(stat("misses") - misses, 1);
  EXPECT_NE(run("llvm-readelf-19 -d B/build/main").out.find(path("B/build")),
            std::string::npos);
}

TEST_F(ContentKeyTest, CargoCleanAndBuildAgainHitsEveryLink) {
  // rustc names a temp directory (rustcXXXXXX/symbols.o, -L .../raw-dylibs)
  // in every link and deletes it, and the *.rcgu.o, as soon as the linker
  // returns. One dependency (Debian's librust-cfg-if-dev as a directory
  // source, offline) and a build script: two links per build.
  std::string cargo = std::string(std::getenv("HOME") ? std::getenv("HOME")
                                                      : "/root") +
                      "/.cargo/bin/cargo";
  if (!std::filesystem::exists(cargo))
    cargo = "/usr/bin/cargo";
  ASSERT_TRUE(std::filesystem::exists(cargo)) << "install rustup or cargo";
  ASSERT_TRUE(haveFile("/usr/share/cargo/registry/cfg-if-1.0.0/Cargo.toml",
                       "librust-cfg-if-dev"));
  writeFile("Cargo.toml", "[package]\nname = \"hello\"\nversion = \"0.1.0\"\n"
                          "edition = \"2021\"\nbuild = \"build.rs\"\n\n"
                          "[dependencies]\ncfg-if = \"1\"\n");
  writeFile("build.rs",
            "fn main() { println!(\"cargo:rustc-env=FROM_BUILD=42\"); }\n");
  writeFile("src/main.rs",
            "cfg_if::cfg_if! { if #[cfg(unix)] { fn os() -> &'static str "
            "{ \"unix\" } } else { fn os() -> &'static str { \"other\" } } }\n"
            "fn main() { println!(\"{} {}\", os(), env!(\"FROM_BUILD\")); }\n");
  // The same flags for stock and linkd (RUSTFLAGS change crate hashes):
  // tools/ld points at one or the other.
  writeFile(".cargo/config.toml",
            "[source.crates-io]\nreplace-with = \"debian\"\n"
            "[source.debian]\ndirectory = \"/usr/share/cargo/registry\"\n"
            "[target.x86_64-unknown-linux-gnu]\nlinker = \"clang-19\"\n"
            "rustflags = [\"-C\", \"link-arg=--ld-path=" + path("tools/ld") +
            "\"]\n");
  std::string build = "rm -rf target && " + cargo + " build --offline -q";
  std::string outputs = "target/debug/hello target/debug/build/*/build-script-build";
  ASSERT_TRUE(exitedZero(run("mkdir -p tools stock && ln -sfn " +
                             tools::ldLld.path + " tools/ld && " + build +
                             " && cp " + outputs + " stock/")));
  ASSERT_TRUE(exitedZero(run("ln -sfn " + binPath("ld.linkd") + " tools/ld")));
  for (int round = 0; round < 2; ++round) {
    long long hits = stat("hits"), misses = stat("misses");
    ASSERT_TRUE(exitedZero(run(build)));
    EXPECT_TRUE(sameBytes("stock/hello", "target/debug/hello"));
    EXPECT_TRUE(exitedZero(run("cmp stock/build-script-build "
                               "target/debug/build/*/build-script-build")));
    EXPECT_EQ(run("target/debug/hello").out, "unix 42\n");
    if (round == 0) {
      EXPECT_EQ(stat("misses") - misses, 2);
      waitForSettledResults(2);
      EXPECT_EQ(stat("results_stored"), 2); // inputs gone, still stored
    } else {
      EXPECT_EQ(stat("hits") - hits, 2); // every link of the second build
      EXPECT_EQ(stat("misses") - misses, 0);
    }
  }
}

TEST_F(ContentKeyTest, AMissSaysWhatDiffersFromTheLastKeyForTheOutput) {
  writeFile("a.c", "int main(void) { return 0; }\nint other(void) { return 1; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c a.c")));
  std::string ld = "export LINKD_LOG=debug; " + binPath("ld.linkd");
  ASSERT_TRUE(exitedZero(run(ld + " a.o -e main -o prog")));
  waitForSettledResults(1);
  ASSERT_TRUE(exitedZero(run(ld + " a.o -e other -o prog")));
  EXPECT_EQ(stat("miss_explained_argv"), 1);
  EXPECT_EQ(stat("miss_explained_new_output"), 1);
  EXPECT_FALSE(logLines("argv[2]: 'main' -> 'other'").empty());
  waitForSettledResults(2);
  ASSERT_TRUE(exitedZero(run("export LLD_VERSION=x; " + ld +
                             " a.o -e other -o prog")));
  EXPECT_EQ(stat("miss_explained_env"), 1);
  EXPECT_FALSE(logLines("env LLD_VERSION: (unset) -> 'x'").empty());
}

TEST_F(ContentKeyTest, MissesOfEveryKindOfRequestSayWhatDiffered) {
  // Links keyed on their arguments as given (COFF), MinGW links and
  // archive requests explain a miss against the last request of the same
  // kind for the same output, and ranlib is never
  // compared with the `ar` that made the archive.
  writeFile("a.c", "int fa(void) { return 1; }\n");
  writeFile("m.c", "int main(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(
      run("clang-19 --target=x86_64-pc-windows-msvc -c a.c -o a.obj && "
          "clang-19 --target=x86_64-pc-windows-msvc -c m.c -o m.obj && "
          "clang-19 -c a.c")));
  long long misses = 0;
  auto step = [&](const std::string &cmd) {
    ASSERT_TRUE(exitedZero(run(cmd))) << cmd;
    waitForSettledResults(++misses);
  };
  const std::string coff = binPath("lld-link.linkd") +
                           " /nodefaultlib /entry:main /brepro m.obj "
                           "/out:m.exe";
  step(coff);
  step(coff + " /opt:noref");
  EXPECT_FALSE(logLines("argv[5]: (none) -> '/opt:noref' (an option)").empty());
  const std::string mingw =
      "SOURCE_DATE_EPOCH=1 clang-19 --target=x86_64-w64-mingw32 --ld-path=" +
      binPath("ld.linkd") + " m.c -o m2.exe";
  step(mingw);
  step(mingw + " -Wl,--stack,2000000");
  EXPECT_FALSE(logLines("-> '--stack' (an option)").empty());
  const std::string lib = binPath("lib.linkd") + " /out:x.lib a.obj";
  step(lib);
  step(lib + " m.obj");
  EXPECT_FALSE(logLines("argv[2]: (none) -> 'm.obj' (an argument)").empty());
  step(binPath("ar.linkd") + " rcs y.a a.o");
  step(binPath("ranlib.linkd") + " y.a");
  RunResult last = run("grep 'flavor=ranlib' " + stateDir + "/linkd.log");
  EXPECT_NE(last.out.find("no key stored before for this output"),
            std::string::npos)
      << last.out;
}

TEST_F(ContentKeyTest, AMissForAnInputNameASectionsScriptRequiresSaysSo) {
  // SECTIONS patterns match file names, so such a link requires its input
  // names exactly; its miss under another name says that, not that the
  // stored result "embeds" the name.
  writeFile("k.c", "int main(void) { return 0; }\n");
  writeFile("t.ld", "SECTIONS { .text : { *(.text*) } }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c k.c -o k1.o && cp k1.o k2.o")));
  std::string ld = binPath("ld.linkd") + " -T t.ld -e main ";
  ASSERT_TRUE(exitedZero(run(ld + "k1.o -o prog")));
  waitForSettledResults(1);
  ASSERT_TRUE(exitedZero(run(ld + "k2.o -o prog")));
  EXPECT_EQ(stat("miss_explained_required_name"), 1);
  EXPECT_EQ(stat("miss_explained_embedded_name"), 0);
  EXPECT_FALSE(logLines("stored result requires " + path("k1.o") +
                        " (linker script with SECTIONS: t.ld), this link "
                        "has " +
                        path("k2.o"))
                   .empty());
}

TEST_F(ContentKeyTest, ConfigureProbesWritingDevNullAreAnsweredFromTheCache) {
  // musl's configure (tryldflag): a fresh ./conf$$-$PPID-1.c each run,
  // compiled and linked `-shared -o /dev/null`; the answer is the exit
  // status. The object differs from run to run in its
  // STT_FILE name alone, which such links are keyed without.
  writeFile("probe.sh", R"(set -u
tmpc="./conf$$-$PPID-1.c"
try() {
  echo "typedef int x;" > "$tmpc"
  if $CC -nostdlib -shared "$@" -o /dev/null "$tmpc" >/dev/null 2>&1; then
    echo "$* yes"; else echo "$* no"; fi
}
try
try -Wl,--gc-sections
try -Wl,--frob-this
try -Wl,--hash-style=both
try -L. -lappears
echo "int nope(void); int f(void) { return nope(); }" > "$tmpc"
$CC -nostdlib -shared -Wl,--no-undefined "$tmpc" -o /dev/null 2>&1 |
  sed "s/-[0-9a-f]*[.]o/.o/"
rm -f "$tmpc"
)");
  const std::string stockCc =
      "CC='clang-19 --ld-path=" + tools::ldLld.path + "' ";
  const std::string ourCc =
      "CC='clang-19 --ld-path=" + binPath("ld.linkd") + "' ";
  auto probe = [&](const std::string &cc) {
    RunResult r = run(cc + "sh probe.sh");
    EXPECT_TRUE(exitedZero(r)) << describe(r);
    // The source's name is this run's: the same text for both linkers.
    return replaceAll(r.out, "conf", "CONF");
  };
  auto names = [](std::string text) { // "CONF123-45-1.c" -> "CONF.c"
    for (size_t at = text.find("CONF"); at != std::string::npos;
         at = text.find("CONF", at + 4))
      text.erase(at + 4, text.find('.', at) - (at + 4));
    return text;
  };
  std::string stock = names(probe(stockCc));
  EXPECT_NE(stock.find("--frob-this no"), std::string::npos) << stock;
  EXPECT_NE(stock.find("-Wl,--gc-sections yes"), std::string::npos) << stock;
  EXPECT_NE(stock.find("referenced by CONF.c"), std::string::npos) << stock;
  EXPECT_EQ(names(probe(ourCc)), stock);
  waitForSettledResults(stat("misses"));
  long long hits = stat("hits"), stored = stat("results_stored");
  EXPECT_EQ(stored, 5); // the undefined symbol's diagnostic names conf*.c
  EXPECT_EQ(names(probe(ourCc)), stock);
  EXPECT_EQ(stat("hits") - hits, 5); // a new conf$$ name: every probe hits
  // Its diagnostic names this run's source file: linked, not replayed.
  EXPECT_EQ(stat("results_stored"), stored);
  // A library that appears turns the failed probe's hit into a miss.
  writeFile("a.c", "int a(void) { return 1; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c a.c && ar rc libappears.a a.o")));
  std::string appeared = names(probe(stockCc));
  EXPECT_NE(appeared.find("-lappears yes"), std::string::npos) << appeared;
  EXPECT_EQ(names(probe(ourCc)), appeared);
  // The device is still the device; a real link of the same object is not
  // answered by a probe's empty result.
  RunResult dev = run("stat -c '%F %t,%T' /dev/null");
  EXPECT_EQ(dev.out, "character special file 1,3\n");
  writeFile("conf.c", "typedef int x;\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c conf.c -o conf.o")));
  EXPECT_TRUE(linkBoth({binPath("ld.linkd"), tools::ldLld.path},
                       "{ld} -shared conf.o -o conftest.so", {"conftest.so"}));
}

} // namespace
} // namespace linkd::e2e
