// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link cache end to end: a repeated link is a hit with the stock bytes
// and the same diagnostics; any change to any kind of input is a miss, a
// touch is not; probes are remembered; damaged or half-written store entries
// never produce a wrong output. Counters come from `linkd stats --json`.
#include "harness.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

namespace linkd::e2e {
namespace {

class LinkCacheTest : public E2eTest {
protected:
  // Integer fields of `linkd stats --json`.
  std::map<std::string, long long> stats() { return cacheStats(); }

  // Links with stock LLD and then through ld.linkd with the same command
  // (same output name: ELF shared objects embed it), checks that the bytes
  // and diagnostics agree, and returns the cache's verdict on our link from
  // the change in the counters.
  std::string linkAndClassify(const std::string &command,
                              const std::string &output) {
    RunResult stock = run(replaceAll(command, "{ld}", tools::ldLld.path));
    EXPECT_TRUE(exitedZero(stock));
    std::string stockOut = output + ".stock";
    EXPECT_TRUE(exitedZero(run("mv " + output + " " + stockOut)));
    auto before = stats();
    RunResult ours = run(replaceAll(command, "{ld}", binPath("ld.linkd")));
    EXPECT_TRUE(exitedZero(ours));
    EXPECT_TRUE(sameBytes(stockOut, output));
    EXPECT_EQ(ours.err, stock.err);
    auto after = stats();
    if (after["hits"] > before["hits"])
      return "hit";
    if (after["misses"] > before["misses"]) {
      waitForStored(before["results_stored"] + 1);
      return "miss";
    }
    if (after["uncacheable"] > before["uncacheable"])
      return "uncacheable";
    return "other";
  }

  // COFF links whose outputs record argv[0] (PDBs): run the stock tool and
  // the client through the same path, a symlink `tools/lld-link` that first
  // points at stock lld-link, then at lld-link.linkd.
  RunResult coffLinkAs(const std::string &which, const std::string &args,
                       const std::string &cwd = ".",
                       const std::string &env = "") {
    std::string target =
        which == "stock" ? tools::lldLink.path : binPath("lld-link.linkd");
    EXPECT_TRUE(exitedZero(
        run("mkdir -p tools && ln -sfn " + target + " tools/lld-link")));
    return run("cd " + cwd + " && " + env + " " + path("tools/lld-link") +
               args);
  }
  // A command storing `from`'s bytes into `to` (same size) through a shared
  // writable mapping; `keepMtime`: with the mtime put back afterwards.
  static std::string storeThroughMapping(const std::string &from,
                                         const std::string &to,
                                         bool keepMtime) {
    std::string store = "python3 -c \"import mmap\n"
                        "new = open('" + from + "','rb').read()\n"
                        "f = open('" + to + "','r+b')\n"
                        "assert len(new) == len(f.read())\n"
                        "m = mmap.mmap(f.fileno(), 0)\n"
                        "m[:] = new\n"
                        "m.flush()\n\"";
    return keepMtime ? "touch -r " + to + " ref.time && " + store +
                           " && touch -r ref.time " + to
                     : store;
  }
  void compileProgram() {
    writeFile("main.c", R"(#include <stdio.h>
int lib_value(void);
int ver_value(void);
int main(void) { printf("%d\n", lib_value() + ver_value()); return 0; }
)");
    writeFile("lib.c", "int lib_value(void) { return 40; }\n");
    writeFile("ver.c", "int ver_value(void) { return 2; }\n"
                       "int hidden_value(void) { return 7; }\n");
    writeFile("ver.map", "V1 { global: ver_value; local: *; };\n");
    writeFile("link.lds", "SECTIONS { .note.linkd : { BYTE(1) } } INSERT "
                          "AFTER .text;\n");
    ASSERT_TRUE(exitedZero(
        run("clang-19 -O2 -fPIC -c main.c lib.c ver.c && mkdir -p libs && "
            "llvm-ar-19 rcs libs/liblib.a lib.o && "
            "clang-19 -shared -fuse-ld=lld -Wl,--version-script=ver.map "
            "ver.o -o libs/libver.so")));
  }

  std::string programLink() {
    return "clang-19 --ld-path={ld} main.o -Llibs -llib -lver "
           "-Wl,-rpath,'$ORIGIN/libs' -Wl,-T,link.lds -o prog";
  }
};

TEST_F(LinkCacheTest, SecondLinkIsAHitWithStockBytesAndReplayedWarnings) {
  compileProgram();
  // -z nosuchflag makes LLD warn; the warning must be replayed on a hit.
  std::string cmd = programLink() + " -Wl,-z,nosuchflag";
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "miss");
  RunResult first = run("./prog");
  ASSERT_TRUE(exitedZero(first));
  EXPECT_EQ(first.out, "42\n");
  ASSERT_TRUE(exitedZero(run("rm prog")));
  RunResult hit = run(replaceAll(cmd, "{ld}", binPath("ld.linkd")));
  ASSERT_TRUE(exitedZero(hit));
  EXPECT_NE(hit.err.find("warning: unknown -z value: nosuchflag"),
            std::string::npos)
      << hit.err;
  EXPECT_TRUE(sameBytes("prog.stock", "prog"));
  auto s = stats();
  EXPECT_EQ(s["hits"], 1);
  EXPECT_EQ(s["misses"], 1);
  EXPECT_EQ(s["requests"], 2);
  EXPECT_EQ(exitedZero(run("./prog")), true);
  // The replay keeps the output's mode bits.
  EXPECT_EQ(std::filesystem::status(path("prog")).permissions(),
            std::filesystem::status(path("prog.stock")).permissions());
}

// The store on a full disk (a 4 MiB tmpfs, max_size far
// above it) evicts least recently used entries and stores each new result,
// and says so once. Before, 9 of 18 results could not be stored.
TEST_F(LinkCacheTest, AnArchiveFoundUnderDevShmIsAnInputOfTheLink) {
  // /dev/shm holds ordinary files (a JIT's or a build's scratch); they were
  // once taken for device files, and a changed archive found there by -L
  // gave the old program.
  char dir[] = "/dev/shm/linkd-e2e.XXXXXX";
  if (!mkdtemp(dir))
    GTEST_SKIP() << "no writable /dev/shm here";
  std::string shm = dir;
  atTeardown([shm] { std::filesystem::remove_all(shm); });
  writeFile("m.c", "int v(void);\nint main(void) { return v(); }\n");
  auto archive = [&](int value) {
    writeFile("v.c", "int v(void) { return " + std::to_string(value) + "; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -c v.c m.c && rm -f " + shm +
                               "/libv.a && ar rc " + shm + "/libv.a v.o")));
  };
  const std::string link = "clang-19 --ld-path={ld} m.o -L" + shm + " -lv -o m";
  archive(1);
  ASSERT_TRUE(linkBoth(elfLinkers(), link, {"m"}));
  EXPECT_EQ(run("./m").exitCode, 1);
  archive(2);
  ASSERT_TRUE(linkBoth(elfLinkers(), link, {"m"}));
  EXPECT_EQ(run("./m").exitCode, 2);
  EXPECT_FALSE(logLines("input changed: " + shm + "/libv.a").empty());
}

TEST_F(LinkCacheTest, AFullCacheDiskEvictsAndStoresAndSaysSoOnce) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root (mount)";
  run("mkdir -p small");
  if (!exitedZero(run("mount -t tmpfs -o size=4m linkd-e2e-small small")))
    GTEST_SKIP() << "cannot mount a tmpfs here";
  atTeardown([this] {
    run(binPath("linkd") + " stop");
    run("umount -l " + path("small"));
  });
  // 600 KB of random bytes per output: nothing for zstd to shrink.
  ASSERT_TRUE(exitedZero(
      run("python3 -c \"import os\nb = os.urandom(600000)\n"
          "print('const unsigned char rnd[] = {' + ','.join(map(str, b)) + "
          "'};')\nprint('int main(void) { return rnd[7] & 1; }')\" > rnd.c "
          "&& clang-19 -c rnd.c")));
  run(binPath("linkd") + " stop");
  std::string env = "LINKD_CACHE_DIR=" + path("small/cache") + " ";
  for (int i = 0; i < 18; ++i) {
    std::string out = "out" + std::to_string(i);
    ASSERT_TRUE(
        exitedZero(run(env + binPath("ld.linkd") + " rnd.o -e main --defsym=n" +
                       std::to_string(i) + "=1 -o " + out)))
        << i;
    waitForStored(i + 1);
  }
  auto s = stats();
  EXPECT_EQ(s["results_stored"], 18);
  EXPECT_EQ(s["results_not_stored"], 0);
  EXPECT_EQ(logLines("is full").size(), 1u);
  EXPECT_GE(statReaching("evictions", 1), 1);
  // The newest result is there to hit.
  ASSERT_TRUE(exitedZero(run(env + binPath("ld.linkd") +
                             " rnd.o -e main --defsym=n17=1 -o again")));
  EXPECT_EQ(statReaching("hits", 1), 1);
  EXPECT_TRUE(sameBytes("out17", "again"));
}

TEST_F(LinkCacheTest, StripRightAfterTheLinkNeverBecomesTheCachedOutput) {
  writeFile("main.c", "int main(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -g -c main.c")));
  std::string cmd = "{ld} main.o -e main -o prog";
  ASSERT_TRUE(exitedZero(run(replaceAll(cmd, "{ld}", tools::ldLld.path) +
                             " && mv prog prog.stock")));
  // strip writes a new file and renames it over the output, at once.
  ASSERT_TRUE(exitedZero(run(replaceAll(cmd, "{ld}", binPath("ld.linkd")) +
                             " && llvm-strip-19 prog")));
  waitForStored(1);
  ASSERT_TRUE(exitedZero(run("rm prog")));
  ASSERT_TRUE(exitedZero(run(replaceAll(cmd, "{ld}", binPath("ld.linkd")))));
  EXPECT_EQ(stats()["hits"], 1);
  EXPECT_TRUE(sameBytes("prog.stock", "prog")); // unstripped, as LLD wrote it
}

TEST_F(LinkCacheTest, ThinLtoLinksHit) {
  writeFile("a.c", "int f(int);\nint main(void) { return f(3) - 6; }\n");
  writeFile("b.c", "int f(int x) { return x * 2; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -flto=thin -O2 -c a.c b.c")));
  std::string cmd = "clang-19 -flto=thin --ld-path={ld} a.o b.o -o p";
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  EXPECT_TRUE(exitedZero(run("./p")));
}

// A ThinLTO cache directory: the link that creates it is uncacheable (it
// made a directory); one that finds it, writes new cache files and leaves
// them to the next links is stored, and its hit names the -o output in the
// log, not a cache file.
TEST_F(LinkCacheTest, ThinLtoCacheDirLinksHitAndLogTheirOutput) {
  writeFile("a.c", "int f(int);\nint main(void) { return f(3) - 6; }\n");
  writeFile("b.c", "int f(int x) { return x * 2; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -flto=thin -O2 -c a.c b.c")));
  auto link = [&](const std::string &ld, const std::string &dir,
                  const std::string &out) {
    return run("clang-19 -flto=thin --ld-path=" + ld +
               " -Wl,--thinlto-cache-dir=" + dir + " a.o b.o -o " + out);
  };
  ASSERT_TRUE(exitedZero(link(tools::ldLld.path, "stockcache", "p.stock")));
  ASSERT_TRUE(exitedZero(link(binPath("ld.linkd"), "cache", "p")));
  EXPECT_EQ(stats()["uncacheable"], 1);
  // New cache files again (the directory's timestamp file stays: no prune).
  ASSERT_TRUE(exitedZero(run("rm cache/llvmcache-*")));
  ASSERT_TRUE(exitedZero(link(binPath("ld.linkd"), "cache", "p")));
  EXPECT_EQ(stats()["misses"], 1);
  waitForStored(1);
  // The stored result holds the cache files it wrote: the hit puts them
  // back (so the first of its outputs is a cache file).
  ASSERT_TRUE(exitedZero(run("rm cache/llvmcache-*")));
  ASSERT_TRUE(exitedZero(link(binPath("ld.linkd"), "cache", "p")));
  EXPECT_EQ(stats()["hits"], 1);
  EXPECT_TRUE(exitedZero(run("ls cache/llvmcache-* >/dev/null")));
  EXPECT_TRUE(sameBytes("p.stock", "p"));
  EXPECT_EQ(run("./p").exitCode, 0);
  std::vector<std::string> hit = logLines("cache=hit");
  ASSERT_EQ(hit.size(), 1u);
  EXPECT_NE(hit[0].find(" output=" + path("p") + " "), std::string::npos)
      << hit[0];
  EXPECT_EQ(hit[0].find("llvmcache"), std::string::npos) << hit[0];
}

// Inputs of a directory unchanged for two seconds are checked through held
// descriptors (input_handles.h); a file replaced by rename or rewritten in
// place must still be a miss, even with its old size and mtime.
TEST_F(LinkCacheTest, HeldInputsStillSeeReplacedAndRewrittenFiles) {
  writeFile("a.c", "int b(void);\nint main(void) { return b() - 3; }\n");
  writeFile("b.c", "int b(void) { return 3; }\n");
  writeFile("b4.c", "int b(void) { return 4; }\n");
  writeFile("b5.c", "int b(void) { return 5; }\n");
  ASSERT_TRUE(exitedZero(run("mkdir objs && clang-19 -O2 -c a.c b.c b4.c "
                             "b5.c && mv a.o b.o objs/ && sleep 2.2")));
  std::string cmd = "clang-19 --ld-path={ld} objs/a.o objs/b.o -o p";
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit"); // holds objs/a.o, objs/b.o
  EXPECT_GE(statReaching("held_inputs", 2), 2);
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit"); // through them
  EXPECT_EQ(run("./p").exitCode, 0);

  // Same size, same mtime, another inode under the old name; the old inode
  // lives on under another name, so only the directory can tell.
  ASSERT_TRUE(exitedZero(run("ln objs/b.o keep.o && touch -r objs/b.o b4.o "
                             "&& mv b4.o objs/b.o")));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(run("./p").exitCode, 1);

  ASSERT_TRUE(exitedZero(run("sleep 2.2")));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  // Rewritten in place, mtime put back: only the ctime tells.
  ASSERT_TRUE(exitedZero(run("touch -r objs/b.o ref && cat b5.o > objs/b.o "
                             "&& touch -r ref objs/b.o")));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(run("./p").exitCode, 2);
}

// Held inputs on local file systems are watched (input_watch.h): a hit then
// costs no system call per unchanged file. A write through another name of
// an input's inode changes no directory the link reads from and keeps the
// file's name; the watch on the inode must still turn the next link into a
// miss (and fails this test if lookups stop reading the queued events).
TEST_F(LinkCacheTest, WatchedInputsSeeWritesThroughAnotherName) {
  writeFile("a.c", "int b(void);\nint main(void) { return b() - 3; }\n");
  writeFile("b.c", "int b(void) { return 3; }\n");
  writeFile("b4.c", "int b(void) { return 4; }\n");
  writeFile("b5.c", "int b(void) { return 5; }\n");
  ASSERT_TRUE(exitedZero(run("mkdir objs elsewhere && clang-19 -O2 -c a.c "
                             "b.c b4.c b5.c && mv a.o b.o objs/ && "
                             "ln objs/b.o elsewhere/alias.o && sleep 2.2")));
  std::string cmd = "clang-19 --ld-path={ld} objs/a.o objs/b.o -o p";
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit"); // holds and watches them
  EXPECT_GE(statReaching("watched_inputs", 2), 2);
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit"); // answered by the watch
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  ASSERT_TRUE(exitedZero(run("test $(stat -c %s objs/b.o) = "
                             "$(stat -c %s b4.o)")))
      << "b.o and b4.o should have one size (same-size rewrite)";
  ASSERT_TRUE(exitedZero(run("touch -r objs/b.o ref && "
                             "dd if=b4.o of=elsewhere/alias.o conv=notrunc "
                             "status=none && touch -r ref elsewhere/alias.o")));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(run("./p").exitCode, 1);
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  // Stores through a shared mapping raise no event of their own; the
  // writer's last reference going away (munmap, exit) raises IN_CLOSE_WRITE.
  ASSERT_TRUE(exitedZero(run("sleep 2.2")));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit"); // held again, watched
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  ASSERT_TRUE(
      exitedZero(run(storeThroughMapping("b5.o", "objs/b.o", false))));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(run("./p").exitCode, 2);
}

// `watch_inputs = false`: no watches, every held input is checked by fstat
// (which also sees stores through a shared mapping, the one change inotify
// does not report).
TEST_F(LinkCacheTest, WatchInputsOffChecksEveryFileByStat) {
  writeFile("linkd.conf", "watch_inputs = false\n");
  writeFile("a.c", "int b(void);\nint main(void) { return b() - 3; }\n");
  writeFile("b.c", "int b(void) { return 3; }\n");
  writeFile("b4.c", "int b(void) { return 4; }\n");
  ASSERT_TRUE(exitedZero(run("mkdir objs && clang-19 -O2 -c a.c b.c b4.c && "
                             "mv a.o b.o objs/ && sleep 2.2")));
  std::string cmd = "clang-19 --ld-path={ld} objs/a.o objs/b.o -o p";
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  EXPECT_GE(statReaching("held_inputs", 2), 2);
  EXPECT_EQ(stats()["watched_inputs"], 0);
  ASSERT_TRUE(exitedZero(run(storeThroughMapping("b4.o", "objs/b.o", true))));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(run("./p").exitCode, 1);
}

TEST_F(LinkCacheTest, FailedLinksAreNotStoredAndKeepTheirStatus) {
  writeFile("u.c", "int missing(void); int main(void) { return missing(); }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c u.c")));
  for (int i = 0; i < 2; ++i) {
    RunResult r = run(binPath("ld.linkd") + " u.o -o u");
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("undefined symbol: missing"), std::string::npos);
  }
  auto s = stats();
  EXPECT_EQ(s["hits"], 0);
  EXPECT_EQ(s["results_stored"], 0);
}

TEST_F(LinkCacheTest, EveryKindOfInputChangeIsAMissAndATouchIsNot) {
  compileProgram();
  std::string cmd = programLink();
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "miss");
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "hit");

  // touch: same content, new mtime/ctime -> still a hit.
  ASSERT_TRUE(
      exitedZero(run("touch -d '2001-07-01 10:00:00' main.o libs/liblib.a "
                     "libs/libver.so link.lds")));
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "hit");

  // Object.
  writeFile("main.c", R"(#include <stdio.h>
int lib_value(void);
int ver_value(void);
int main(void) { printf("%d!\n", lib_value() + ver_value()); return 0; }
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c main.c")));
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "miss");
  EXPECT_EQ(run("./prog").out, "42!\n");

  // Archive member (the archive found through -l).
  writeFile("lib.c", "int lib_value(void) { return 41; }\n");
  ASSERT_TRUE(exitedZero(run(
      "clang-19 -O2 -fPIC -c lib.c && llvm-ar-19 rcs libs/liblib.a lib.o")));
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "miss");
  EXPECT_EQ(run("./prog").out, "43!\n");

  // Linker script.
  writeFile("link.lds", "SECTIONS { .note.linkd : { BYTE(2) } } INSERT "
                        "AFTER .text;\n");
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "miss");

  // Shared library found through -l, rebuilt with another version script.
  writeFile("ver.map", "V2 { global: ver_value; hidden_value; local: *; };\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -shared -fuse-ld=lld "
                             "-Wl,--version-script=ver.map ver.o "
                             "-o libs/libver.so")));
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "miss");
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "hit");
}

TEST_F(LinkCacheTest, VersionScriptOfTheLinkItselfIsAnInput) {
  writeFile("ver.c", "int a(void) { return 1; }\nint b(void) { return 2; }\n");
  writeFile("v.map", "V1 { global: a; local: *; };\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -fPIC -c ver.c")));
  std::string cmd = "{ld} -shared --version-script=v.map ver.o -o libv.so";
  EXPECT_EQ(linkAndClassify(cmd, "libv.so"), "miss");
  EXPECT_EQ(linkAndClassify(cmd, "libv.so"), "hit");
  writeFile("v.map", "V1 { global: a; b; local: *; };\n");
  EXPECT_EQ(linkAndClassify(cmd, "libv.so"), "miss");
}

TEST_F(LinkCacheTest, LibraryAppearingInAnEarlierSearchDirectoryIsAMiss) {
  writeFile("main.c", "int f(void); int main(void) { return f(); }\n");
  writeFile("f1.c", "int f(void) { return 1; }\n");
  writeFile("f2.c", "int f(void) { return 2; }\n");
  ASSERT_TRUE(
      exitedZero(run("clang-19 -c main.c f1.c f2.c && mkdir -p first second && "
                     "llvm-ar-19 rcs second/libf.a f1.o")));
  std::string cmd = "clang-19 --ld-path={ld} main.o -Lfirst -Lsecond -lf -o p";
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(run("./p").exitCode, 1);
  EXPECT_EQ(linkAndClassify(cmd, "p"), "hit");
  // The earlier -L directory now has a libf.a: LLD would pick it.
  ASSERT_TRUE(exitedZero(run("llvm-ar-19 rcs first/libf.a f2.o")));
  EXPECT_EQ(linkAndClassify(cmd, "p"), "miss");
  EXPECT_EQ(run("./p").exitCode, 2);
}

TEST_F(LinkCacheTest, ResponseFilesWithFreshNamesStillHit) {
  writeFile("main.c", "int main(void) { return 3; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c main.c")));
  writeFile("a.rsp", "main.o -o out --gc-sections\n");
  auto before = stats();
  ASSERT_TRUE(exitedZero(run(binPath("ld.linkd") + " @a.rsp -e main")));
  waitForStored(before["results_stored"] + 1);
  ASSERT_TRUE(exitedZero(run("mv a.rsp b.rsp && rm out")));
  ASSERT_TRUE(exitedZero(run(binPath("ld.linkd") + " @b.rsp -e main")));
  EXPECT_EQ(stats()["hits"], before["hits"] + 1);
  ASSERT_TRUE(exitedZero(
      run(tools::ldLld.path + " main.o -o out.stock --gc-sections -e main")));
  EXPECT_TRUE(sameBytes("out.stock", "out"));
}

TEST_F(LinkCacheTest, UncacheableLinksRunAndAreCountedByReason) {
  writeFile("main.c", "int main(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c main.c")));
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(exitedZero(
        run(binPath("ld.linkd") + " main.o -e main --build-id=uuid -o u")));
  ASSERT_TRUE(exitedZero(
      run(binPath("ld.linkd") + " main.o -e main --linkd-no-cache -o n")));
  ASSERT_TRUE(exitedZero(
      run("LINKD_NOCACHE=1 " + binPath("ld.linkd") + " main.o -e main -o n2")));
  auto s = stats();
  EXPECT_EQ(s["uncacheable"], 2);
  EXPECT_EQ(s["cache_disabled"], 2);
  EXPECT_EQ(s["hits"], 0);
  RunResult j = run(binPath("linkd") + " stats --json");
  EXPECT_NE(j.out.find("\"--build-id=uuid\": 2"), std::string::npos) << j.out;
  // The client keeps --linkd-* options away from LLD, and rejects typos.
  RunResult typo =
      run(binPath("ld.linkd") + " main.o -e main --linkd-no-cahce -o t");
  EXPECT_NE(typo.exitCode, 0);
  EXPECT_NE(typo.err.find("unknown linkd option --linkd-no-cahce"),
            std::string::npos);
}

TEST_F(LinkCacheTest, CorruptBlobIsAMissWithCorrectOutputAndIsCounted) {
  compileProgram();
  std::string cmd = programLink();
  EXPECT_EQ(linkAndClassify(cmd, "prog"), "miss");
  // Damage every blob of the store (flip bytes in the middle of each file).
  RunResult blobs = run("find cache/blobs -type f");
  ASSERT_TRUE(exitedZero(blobs));
  ASSERT_FALSE(blobs.out.empty());
  std::istringstream files(blobs.out);
  for (std::string f; std::getline(files, f);) {
    std::fstream io(path(f), std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(0, std::ios::end);
    auto size = static_cast<long long>(io.tellg());
    io.seekp(size / 2);
    io.put('\x5a').put('\xa5').put('\x00');
  }
  ASSERT_TRUE(exitedZero(run("rm prog")));
  // Not a hit: the link runs, the output is stock's.
  std::string verdict = linkAndClassify(cmd, "prog");
  EXPECT_NE(verdict, "hit");
  EXPECT_EQ(run("./prog").out, "42\n");
  // `linkd stop` flushes the counters; corruption shows in them.
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " stop")));
  auto s = stats();
  EXPECT_GE(s["corrupt_entries"] + s["corrupt_hits"], 1);
}

TEST_F(LinkCacheTest, SixteenConcurrentIdenticalLinksAreAllCorrect) {
  compileProgram();
  // Identical arguments, so one output name: each link in its own directory
  // (the working directory is part of the key, so these are 16 keys racing
  // to store, then 16 more links of one key racing to hit).
  std::vector<std::string> cmds;
  for (int i = 0; i < 16; ++i)
    cmds.push_back("mkdir -p c" + std::to_string(i) + " && cd c" +
                   std::to_string(i) +
                   " && clang-19 --ld-path=" + binPath("ld.linkd") +
                   " ../main.o -L../libs -llib -lver -T ../link.lds -o prog");
  ASSERT_TRUE(exitedZero(run("mkdir -p ref && cd ref && clang-19 "
                             "-fuse-ld=lld ../main.o -L../libs -llib -lver "
                             "-T ../link.lds -o prog")));
  for (int round = 0; round < 2; ++round) {
    auto bgs = startTogether(cmds);
    for (auto &bg : bgs)
      EXPECT_TRUE(exitedZero(wait(bg)));
    for (int i = 0; i < 16; ++i)
      EXPECT_TRUE(sameBytes("ref/prog", "c" + std::to_string(i) + "/prog"));
  }
  std::vector<std::string> same(16,
                                "clang-19 --ld-path=" + binPath("ld.linkd") +
                                    " main.o -Llibs -llib -lver "
                                    "-T link.lds -o prog");
  auto bgs = startTogether(same);
  for (auto &bg : bgs)
    EXPECT_TRUE(exitedZero(wait(bg)));
  EXPECT_TRUE(sameBytes("ref/prog", "prog"));
}

TEST_F(LinkCacheTest, CoffLibEnvironmentIsPartOfTheKey) {
  writeFile("main.c",
            "int f(void);\nint mainCRTStartup(void) { return f(); }\n");
  writeFile("f1.c", "int f(void) { return 1; }\n");
  writeFile("f2.c", "int f(void) { return 2; }\n");
  ASSERT_TRUE(exitedZero(run(
      "for f in main f1 f2; do clang-19 --target=x86_64-pc-windows-msvc "
      "-c $f.c -o $f.obj || exit 1; done && mkdir -p d1 d2 && "
      "llvm-lib-19 /out:d1/f.lib f1.obj && llvm-lib-19 /out:d2/f.lib f2.obj")));
  // f.lib is found through the LIB environment variable.
  std::string args = " /Brepro /nodefaultlib /subsystem:console main.obj "
                     "f.lib /out:a.exe";
  auto link = [&](const char *lib) {
    std::string env = std::string("LIB=") + path(lib);
    EXPECT_TRUE(exitedZero(coffLinkAs("stock", args, ".", env)));
    std::string expected = readFile("a.exe");
    EXPECT_TRUE(exitedZero(coffLinkAs("linkd", args, ".", env)));
    EXPECT_EQ(readFile("a.exe"), expected);
    return expected;
  };
  std::string one = link("d1");
  auto s1 = stats();
  std::string two = link("d2");
  auto s2 = stats();
  EXPECT_NE(one, two);
  EXPECT_EQ(s2["hits"], s1["hits"]); // the LIB change was a miss
  EXPECT_EQ(link("d1"), one);
  EXPECT_EQ(stats()["hits"], s2["hits"] + 1); // and LIB=d1 again a hit
}

TEST_F(LinkCacheTest, EmbeddedOutputPathsNeverGiveAFalseHit) {
  // /debug records the absolute PDB path and the working directory: the
  // same relative command in another directory must give that directory's
  // bytes, never the other's.
  writeFile("main.c", "int mainCRTStartup(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(run(
      "clang-19 --target=x86_64-pc-windows-msvc -g -c main.c -o main.obj && "
      "mkdir -p x y && cp main.obj x/ && cp main.obj y/")));
  std::string args = " /Brepro /debug /nodefaultlib /subsystem:console "
                     "main.obj /out:a.exe";
  for (const char *d : {"x", "y", "x", "y"}) {
    std::string dir(d);
    ASSERT_TRUE(exitedZero(coffLinkAs("stock", args, dir)));
    ASSERT_TRUE(exitedZero(run("cd " + dir +
                               " && mv a.exe stock.exe && "
                               "mv a.pdb stock.pdb")));
    ASSERT_TRUE(exitedZero(coffLinkAs("linkd", args, dir)));
    EXPECT_TRUE(sameBytes(dir + "/stock.exe", dir + "/a.exe"));
    EXPECT_TRUE(sameBytes(dir + "/stock.pdb", dir + "/a.pdb"));
  }
  EXPECT_NE(readFile("x/a.exe"), readFile("y/a.exe"));
  EXPECT_EQ(stats()["hits"], 2); // the repeats in x and y
}

TEST_F(LinkCacheTest, EvictionKeepsTheStoreUnderItsCap) {
  writeFile("linkd.conf", "max_size = 256K\n");
  // 64 KiB of random bytes per program: nothing zstd can shrink.
  writeFile("gen.sh", R"(i=$1
bytes=$(od -An -tu1 -v -N 65536 /dev/urandom | tr -s ' \n' ',,' | sed 's/^,//; s/,$//')
printf 'static const unsigned char pad[] = {%s};\nint main(void) { return pad[%s]; }\n' "$bytes" $i > m$i.c
)");
  for (int i = 1; i <= 12; ++i) {
    std::string n = std::to_string(i);
    ASSERT_TRUE(exitedZero(run("sh gen.sh " + n + " && clang-19 -c m" + n +
                               ".c && " + binPath("ld.linkd") + " m" + n +
                               ".o -e main -o p" + n)));
  }
  // The maintenance thread runs every second.
  long long bytes = 0;
  for (int i = 0; i < 100; ++i) {
    auto s = stats();
    bytes = s["store_bytes"];
    if (s["evictions"] > 0 && bytes <= 256 * 1024)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto s = stats();
  EXPECT_GT(s["evictions"], 0);
  EXPECT_LE(bytes, 256 * 1024);
  EXPECT_EQ(s["store_max_bytes"], 256 * 1024);
  // Links go on and stay correct.
  ASSERT_TRUE(exitedZero(run("rm p12 && " + binPath("ld.linkd") +
                             " m12.o -e main -o p12 && " + tools::ldLld.path +
                             " m12.o -e main -o p12.stock")));
  EXPECT_TRUE(sameBytes("p12.stock", "p12"));
}

TEST_F(LinkCacheTest, KilledDaemonLeavesAConsistentStore) {
  compileProgram();
  std::string cmd = programLink();
  // Kill the daemon repeatedly right after links, while it stores.
  for (int round = 0; round < 4; ++round) {
    writeFile("lib.c", "int lib_value(void) { return " +
                           std::to_string(40 + round) + "; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fPIC -c lib.c && "
                               "llvm-ar-19 rcs libs/liblib.a lib.o")));
    ASSERT_TRUE(exitedZero(run(replaceAll(cmd, "{ld}", binPath("ld.linkd")))));
    auto st = daemonStatus();
    ASSERT_TRUE(st);
    kill(static_cast<pid_t>(st->pid), SIGKILL);
    ASSERT_TRUE(waitUntilGone(static_cast<pid_t>(st->pid), 10s));
  }
  // Every later link is correct, hit or miss.
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(exitedZero(run("rm -f prog")));
    std::string verdict = linkAndClassify(cmd, "prog");
    EXPECT_TRUE(verdict == "hit" || verdict == "miss") << verdict;
    EXPECT_EQ(run("./prog").out, "45\n"); // lib 43 + ver 2
  }
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " cache trim")));
  RunResult again = run(replaceAll(cmd, "{ld}", binPath("ld.linkd")));
  ASSERT_TRUE(exitedZero(again));
  EXPECT_EQ(run("./prog").out, "45\n");
}

TEST_F(LinkCacheTest, AllOutputsAreReplayedMapAndDependencyFiles) {
  writeFile("main.c", "int main(void) { return 0; }\n");
  ASSERT_TRUE(exitedZero(run("clang-19 -c main.c")));
  std::string cmd = "{ld} main.o -e main -o prog -Map=prog.map "
                    "--dependency-file=prog.d --why-extract=prog.why";
  auto linkOurs = [&] {
    return run(replaceAll(cmd, "{ld}", binPath("ld.linkd")));
  };
  ASSERT_TRUE(exitedZero(run(replaceAll(cmd, "{ld}", tools::ldLld.path))));
  ASSERT_TRUE(exitedZero(run("for f in prog prog.map prog.d prog.why; do "
                             "mv $f $f.stock; done")));
  ASSERT_TRUE(exitedZero(linkOurs()));
  waitForStored(1);
  ASSERT_TRUE(exitedZero(run("rm prog prog.map prog.d prog.why")));
  ASSERT_TRUE(exitedZero(linkOurs()));
  EXPECT_EQ(stats()["hits"], 1);
  for (const char *f : {"prog", "prog.map", "prog.d", "prog.why"})
    EXPECT_TRUE(sameBytes(std::string(f) + ".stock", f)) << f;
}

TEST_F(LinkCacheTest, BaseDirSharesHitsBetweenCheckoutsAtDifferentPaths) {
  // Two checkouts of one tree at different absolute paths, each linked by a
  // daemon whose base_dir is its checkout, one shared cache directory.
  writeFile("src.c", "int helper(void) { return 5; }\n"
                     "int main(void) { return helper(); }\n");
  for (const char *co : {"co1", "co2"})
    ASSERT_TRUE(exitedZero(run(std::string("mkdir -p ") + co +
                               "/build && cp src.c " + co + "/ && cd " + co +
                               "/build && clang-19 -c ../src.c -o src.o")));
  auto daemonEnv = [&](const std::string &co) {
    return "export LINKD_SOCKET=" + path(co + "/run/linkd.sock") +
           " LINKD_BASE_DIR=" + path(co) +
           " LINKD_CACHE_DIR=" + path("shared-cache") + "; ";
  };
  atTeardown([this, daemonEnv] {
    for (const char *co : {"co1", "co2"})
      run(daemonEnv(co) + binPath("linkd") + " stop");
  });
  auto linkIn = [&](const std::string &co) {
    std::string cmd = "cd " + co + "/build && clang-19 --ld-path={ld} " +
                      path(co) + "/build/src.o -o " + path(co) + "/build/prog";
    EXPECT_TRUE(exitedZero(run(replaceAll(cmd, "{ld}", tools::ldLld.path))));
    EXPECT_TRUE(exitedZero(
        run("mv " + co + "/build/prog " + co + "/build/prog.stock")));
    EXPECT_TRUE(exitedZero(
        run(daemonEnv(co) + replaceAll(cmd, "{ld}", binPath("ld.linkd")))));
    EXPECT_TRUE(sameBytes(co + "/build/prog.stock", co + "/build/prog"));
  };
  linkIn("co1");
  // Let co1's daemon store the result, then link in co2 with its own daemon.
  for (int i = 0; i < 200; ++i) {
    RunResult s = run(daemonEnv("co1") + binPath("linkd") + " stats --json");
    if (s.out.find("\"results_stored\": 1") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  linkIn("co2");
  RunResult s2 = run(daemonEnv("co2") + binPath("linkd") + " stats --json");
  EXPECT_NE(s2.out.find("\"hits\": 1"), std::string::npos) << s2.out;
}

} // namespace
} // namespace linkd::e2e
