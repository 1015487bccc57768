// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Units of the cache that need no daemon: access-log reduction, key
// material, path mapping, response-file tokenizing, sizes, and the store's
// verification of what it reads back.
#include "cache/access_log.h"
#include "cache/cache_stats.h"
#include "cache/input_handles.h"
#include "cache/archive_key.h"
#include "cache/link_key.h"
#include "cache/name_check.h"
#include "cache/stat_cache.h"
#include "config/config.h"
#include "digest/sha256_thread.h"
#include "link/response_files.h"
#include "store/local_store.h"
#include "store/remote_backend.h"
#include "store/remote_tiers.h"
#include "store/temp_journal.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

namespace {

using namespace linkd;

std::string rec(char kind, const std::string &p, const std::string &p2 = "") {
  std::string s(1, kind);
  s += p;
  s += '\0';
  if (!p2.empty()) {
    s += p2;
    s += '\0';
  }
  return s;
}

class TempDir {
public:
  TempDir() {
    char tmpl[] = "/tmp/linkd-unit-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

void writeFile(const std::string &path, const std::string &content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

TEST(AccessLog, RenamedTempFileIsTheOutputAndNeverAnInput) {
  std::string r = rec('R', "/w/a.o") + rec('M', "/w/libx.so") +
                  rec('S', "/w/out") + rec('N', "/w/out", "/w/out.old") +
                  rec('U', "/w/out.old") + rec('W', "/w/out.tmp123") +
                  rec('N', "/w/out.tmp123", "/w/out") + rec('W', "/w/out.map");
  AccessLog log = parseAccessLog(r);
  EXPECT_EQ(log.read, std::set<std::string>({"/w/a.o"}));
  EXPECT_EQ(log.missing, std::set<std::string>({"/w/libx.so"}));
  EXPECT_TRUE(log.existing.empty()); // /w/out was touched by the link
  EXPECT_EQ(log.outputs, std::set<std::string>({"/w/out", "/w/out.map"}));
  EXPECT_TRUE(log.uncacheable.empty());
}

TEST(TempJournal, OnlyLldsOwnTemporaryNamesAreTakenForLitter) {
  // FileOutputBuffer's `<out>.tmp%%%%%%%`: seven lowercase hex digits.
  EXPECT_TRUE(isLldTemporary("/w/a.out.tmp5afd4ba"));
  EXPECT_TRUE(isLldTemporary("/w/small.20139.out.tmp696abef"));
  // A user's own files that merely look alike are left alone.
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmpfoobar"));
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmp5AFD4BA"));
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmp5afd4ba0"));
  EXPECT_FALSE(isLldTemporary("/w/a.out.tmp123"));
  EXPECT_FALSE(isLldTemporary("/w/.tmp5afd4ba"));
  EXPECT_FALSE(isLldTemporary("a.out.tmp5afd4ba")); // relative
  EXPECT_FALSE(isLldTemporary(""));
}

TEST(AccessLog, KernelPseudoFilesAreNotInputs) {
  AccessLog log = parseAccessLog(rec('R', "/proc/cpuinfo") +
                                 rec('S', "/sys/devices/system/cpu") +
                                 rec('M', "/dev/nope") + rec('R', "/w/a.o"));
  EXPECT_EQ(log.read, std::set<std::string>({"/w/a.o"}));
  EXPECT_TRUE(log.existing.empty());
  EXPECT_TRUE(log.missing.empty());
  EXPECT_TRUE(log.uncacheable.empty());
}

TEST(AccessLog, TheNullDeviceIsNoOutputAndDevShmHoldsFiles) {
  AccessLog log = parseAccessLog(rec('W', "/dev/null") + rec('R', "/w/a.o") +
                                 rec('R', "/dev/shm/jit/k.o") +
                                 rec('M', "/dev/shm/jit/libm.so"));
  EXPECT_TRUE(log.outputs.empty());
  EXPECT_EQ(log.read, std::set<std::string>({"/dev/shm/jit/k.o", "/w/a.o"}));
  EXPECT_EQ(log.missing, std::set<std::string>({"/dev/shm/jit/libm.so"}));
  EXPECT_TRUE(log.uncacheable.empty());
}

TEST(AccessLog, ProcessesDirectoriesAndBadRecordsAreUncacheable) {
  EXPECT_FALSE(parseAccessLog(rec('X', "/bin/sh")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('L', "/w")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('D', "/w/d")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('C', "/w")).uncacheable.empty());
  EXPECT_FALSE(parseAccessLog(rec('E', "")).uncacheable.empty());
  EXPECT_FALSE(
      parseAccessLog(std::string("Rno-terminator")).uncacheable.empty());
  // A path that was missing and then read appeared during the link.
  EXPECT_FALSE(
      parseAccessLog(rec('M', "/w/x") + rec('R', "/w/x")).uncacheable.empty());
}

TEST(ResponseFiles, OneSpellingForOneFile) {
  EXPECT_EQ(withoutDotComponents("/w/./a.rsp"), "/w/a.rsp");
  EXPECT_EQ(withoutDotComponents("/w//x/./././a"), "/w/x/a");
  EXPECT_EQ(withoutDotComponents("/w/x/.."), "/w/x/..");
  EXPECT_EQ(withoutDotComponents("./a.o"), "a.o");
  EXPECT_EQ(withoutDotComponents("/"), "/");
  EXPECT_EQ(withoutDotComponents("/."), "/");
  EXPECT_EQ(withoutDotComponents("."), ".");
}

TEST(ResponseFiles, GnuTokenizer) {
  EXPECT_EQ(tokenizeGnu("a  b\tc\n"),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(tokenizeGnu("'a b' \"c \\\" d\" e\\ f"),
            (std::vector<std::string>{"a b", "c \" d", "e f"}));
}

TEST(ResponseFiles, ExpandedRecursivelyRelativeToCwd) {
  TempDir t;
  writeFile(t.path + "/outer.rsp", "-o out @inner.rsp");
  writeFile(t.path + "/inner.rsp", "--gc-sections a.o");
  ExpandedArgs e =
      expandResponseFiles({"ld.lld", "@outer.rsp", "b.o", "@absent"}, t.path);
  EXPECT_EQ(e.args, (std::vector<std::string>{"-o", "out", "--gc-sections",
                                              "a.o", "b.o", "@absent"}));
  ASSERT_EQ(e.files.size(), 2u);
  EXPECT_EQ(e.files[0].path, t.path + "/outer.rsp");
}

TEST(ResponseFiles, SpecialFilesAndHugeOnesAreLeftUnread) {
  TempDir t;
  ASSERT_EQ(mkfifo((t.path + "/fifo").c_str(), 0600), 0);
  ExpandedArgs fifo = expandResponseFiles({"ld", "@fifo", "@/dev/zero"}, t.path);
  EXPECT_EQ(fifo.args, (std::vector<std::string>{"@fifo", "@/dev/zero"}));
  EXPECT_EQ(fifo.unread, "response file " + t.path + "/fifo is not a regular file");
  ASSERT_EQ(truncate((t.path + "/big").c_str(), 0), -1); // absent
  writeFile(t.path + "/big", "");
  ASSERT_EQ(truncate((t.path + "/big").c_str(), kMaxResponseFileBytes + 1), 0);
  ExpandedArgs big = expandResponseFiles({"ld", "@big"}, t.path);
  EXPECT_EQ(big.unread, "response files larger than 64 MiB");
}

LinkInvocation elfLink(std::vector<std::string> args) {
  LinkInvocation inv;
  inv.flavor = Flavor::Elf;
  inv.argv = {"ld.linkd"};
  inv.argv.insert(inv.argv.end(), args.begin(), args.end());
  inv.cwd = "/src/proj/build";
  return inv;
}

// Found by tests/fuzz/request_fuzzer: the daemon refuses an empty argv,
// but the analysis must not depend on it.
TEST(RequestAnalysis, AnEmptyArgvIsNotACrash) {
  std::string err;
  auto stats = StatCache::open("", &err);
  ASSERT_TRUE(stats) << err;
  KeyContext ctx{"v", "lld", "", {}};
  for (Flavor f : {Flavor::Ar, Flavor::Ranlib}) {
    LinkInvocation inv;
    inv.flavor = f;
    inv.cwd = "/";
    // No operation, no archive: nothing to store.
    EXPECT_FALSE(analyzeArchiveRequest(inv, ctx, *stats).uncacheable.empty())
        << flavorName(f);
  }
  LinkInvocation lib;
  lib.flavor = Flavor::Lib;
  lib.cwd = "/";
  LinkAnalysis libOnce = analyzeArchiveRequest(lib, ctx, *stats);
  EXPECT_EQ(libOnce.key, analyzeArchiveRequest(lib, ctx, *stats).key);
  LinkInvocation elf;
  elf.flavor = Flavor::Elf;
  elf.cwd = "/";
  LinkAnalysis empty = analyzeLink(elf, ctx);
  EXPECT_EQ(empty.key, analyzeLink(elf, ctx).key);
  EXPECT_NE(empty.key, analyzeLink(elfLink({"a.o"}), ctx).key);
  EXPECT_TRUE(empty.primaryOutput.empty());
}

TEST(LinkKey, OutputsToTheNullDeviceAreKeyedApartAndMayBeEmpty) {
  KeyContext ctx{"v", "lld", "", {}};
  LinkAnalysis real = analyzeLink(elfLink({"a.o", "-o", "x"}), ctx);
  LinkAnalysis probe = analyzeLink(elfLink({"a.o", "-o", "/dev/null"}), ctx);
  EXPECT_TRUE(probe.uncacheable.empty());
  // A probe's empty result never answers a real link, nor a real one a probe.
  EXPECT_NE(real.key, probe.key);
  EXPECT_FALSE(real.resultMayBeEmpty);
  EXPECT_FALSE(real.onlyNullOutputs);
  EXPECT_TRUE(probe.resultMayBeEmpty);
  EXPECT_TRUE(probe.onlyNullOutputs);
  // A map beside it is a real output: stored, and failures are not.
  LinkAnalysis mapped = analyzeLink(
      elfLink({"a.o", "-o", "/dev/null", "-Map", "/tmp/m.map"}), ctx);
  EXPECT_TRUE(mapped.resultMayBeEmpty);
  EXPECT_FALSE(mapped.onlyNullOutputs);
  EXPECT_NE(
      probe.key,
      analyzeLink(elfLink({"a.o", "-o", "x", "-Map", "/dev/null"}), ctx).key);
  // Other devices, and the null device by another name, stay uncacheable:
  // their readers see LLD's bytes, and a hit could not put them back.
  EXPECT_FALSE(analyzeLink(elfLink({"a.o", "-o", "/dev/zero"}), ctx)
                   .uncacheable.empty());
  EXPECT_FALSE(analyzeLink(elfLink({"a.o", "-o", "/dev/../dev/null"}), ctx)
                   .uncacheable.empty());
}

TEST(LinkKey, ArgumentsEnvironmentAndUmaskChangeTheKey) {
  KeyContext ctx{"v", "lld", "", {}};
  Digest base = analyzeLink(elfLink({"a.o", "-o", "x"}), ctx).key;
  EXPECT_EQ(base, analyzeLink(elfLink({"a.o", "-o", "x"}), ctx).key);
  // Names are held by role, literal values as given.
  EXPECT_EQ(base, analyzeLink(elfLink({"b.o", "-o", "y"}), ctx).key);
  EXPECT_NE(base, analyzeLink(elfLink({"a.o", "-o", "x", "-e", "f"}), ctx).key);
  EXPECT_NE(base, analyzeLink(elfLink({"a.o", "a.o", "-o", "x"}), ctx).key);
  LinkInvocation env = elfLink({"a.o", "-o", "x"});
  env.env["LLD_VERSION"] = "custom";
  EXPECT_NE(base, analyzeLink(env, ctx).key);
  LinkInvocation mask = elfLink({"a.o", "-o", "x"});
  mask.umask = 077;
  EXPECT_NE(base, analyzeLink(mask, ctx).key);
  LinkInvocation term = elfLink({"a.o", "-o", "x"});
  term.env["TERM"] = "xterm"; // colour is keyed by stderrIsColorTty instead
  EXPECT_EQ(base, analyzeLink(term, ctx).key);
  KeyContext other{"v", "lld2", "", {}};
  EXPECT_NE(base, analyzeLink(elfLink({"a.o", "-o", "x"}), other).key);
}

// HOME changes a Mach-O link's outputs only through `-oso_prefix ~`
// (expanded from it); elsewhere it must not split keys between users.
TEST(LinkKey, HomeIsKeyedOnlyWhereOsoPrefixExpandsIt) {
  KeyContext ctx{"v", "lld", "", {}};
  auto macho = [](std::vector<std::string> args, const std::string &home) {
    LinkInvocation inv = elfLink(std::move(args));
    inv.flavor = Flavor::MachO;
    inv.env["HOME"] = home;
    return inv;
  };
  std::vector<std::string> tilde = {"t.o", "-oso_prefix", "~", "-o", "x"};
  std::vector<std::string> under = {"t.o", "-oso_prefix", "~/src", "-o", "x"};
  std::vector<std::string> plain = {"t.o", "-oso_prefix", "/src", "-o", "x"};
  EXPECT_NE(analyzeLink(macho(tilde, "/home/a"), ctx).key,
            analyzeLink(macho(tilde, "/home/b"), ctx).key);
  EXPECT_NE(analyzeLink(macho(under, "/home/a"), ctx).key,
            analyzeLink(macho(under, "/home/b"), ctx).key);
  EXPECT_EQ(analyzeLink(macho(plain, "/home/a"), ctx).key,
            analyzeLink(macho(plain, "/home/b"), ctx).key);
  // FORCE_LLD_DIAGNOSTICS_CRASH: a hit must not skip the crash.
  LinkInvocation forced = elfLink({"a.o", "-o", "x"});
  forced.env["FORCE_LLD_DIAGNOSTICS_CRASH"] = "1";
  EXPECT_NE(analyzeLink(forced, ctx).key,
            analyzeLink(elfLink({"a.o", "-o", "x"}), ctx).key);
}

TEST(LinkKey, ResponseFilesAreKeyedByContentNotName) {
  TempDir t;
  writeFile(t.path + "/ccA.rsp", "a.o -soname x");
  writeFile(t.path + "/ccB.rsp", "a.o -soname x");
  KeyContext ctx{"v", "lld", "", {}};
  LinkInvocation a = elfLink({"@ccA.rsp"}), b = elfLink({"@ccB.rsp"});
  a.cwd = b.cwd = t.path;
  LinkAnalysis la = analyzeLink(a, ctx);
  EXPECT_EQ(la.key, analyzeLink(b, ctx).key);
  EXPECT_TRUE(la.responseFiles.count(t.path + "/ccA.rsp"));
  writeFile(t.path + "/ccB.rsp", "a.o -soname y");
  EXPECT_NE(la.key, analyzeLink(b, ctx).key);
}

TEST(LinkKey, TempNamesAndIgnoredGccPluginOptionsDoNotSplitKeys) {
  KeyContext ctx{"v", "lld", "", {}};
  auto gcc = [](const std::string &tmp, const std::string &cwd) {
    LinkInvocation inv = elfLink(
        {"-plugin", "/usr/libexec/gcc/x86_64-linux-gnu/12/liblto_plugin.so",
         "-plugin-opt=/usr/libexec/gcc/x86_64-linux-gnu/12/lto-wrapper",
         "-plugin-opt=-fresolution=/tmp/" + tmp + ".res",
         "-plugin-opt=-pass-through=-lgcc", "-o", "conftest",
         "-L/usr/lib/gcc/x86_64-linux-gnu/12", "/tmp/" + tmp + ".o", "-lc",
         "-rpath-link", "/tmp/" + tmp});
    inv.cwd = cwd;
    return inv;
  };
  LinkAnalysis a = analyzeLink(gcc("ccAAAAAA", "/b1"), ctx);
  EXPECT_EQ(a.key, analyzeLink(gcc("ccBBBBBB", "/b2"), ctx).key);
  EXPECT_EQ(a.ignoredOptions.size(), 7u); // with the values of -plugin, -rpath-link
  // Roles: the object is name 2 (after -o and -L), its absolute form "2".
  EXPECT_EQ(a.paths.toStored("/tmp/ccAAAAAA.o"), PathMapper::token("2"));
  EXPECT_EQ(a.paths.toStored("/b1/conftest"), PathMapper::token("0a"));
  EXPECT_EQ(a.paths.toStored("/usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a"),
            PathMapper::token("1") + "/libgcc.a");
  EXPECT_EQ(a.paths.toStored("/b1/sub/x"), PathMapper::token("C") + "/sub/x");
  LinkAnalysis b = analyzeLink(gcc("ccBBBBBB", "/b2"), ctx);
  EXPECT_EQ(b.paths.toLocal(a.paths.toStored("/tmp/ccAAAAAA.o")),
            "/tmp/ccBBBBBB.o");
  // A plugin option LLD does not ignore stays.
  LinkInvocation other = gcc("ccAAAAAA", "/b1");
  other.argv.push_back("-plugin-opt=mcpu=znver3");
  EXPECT_NE(a.key, analyzeLink(other, ctx).key);
}

TEST(LinkKey, OptionsMatchingInputNamesKeepEveryName) {
  KeyContext ctx{"v", "lld", "", {}};
  LinkAnalysis ex =
      analyzeLink(elfLink({"a.o", "libx.a", "--exclude-libs=libx.a"}), ctx);
  EXPECT_FALSE(ex.namesMatter.empty());
  EXPECT_FALSE(ex.paths.active());
  EXPECT_NE(ex.key,
            analyzeLink(elfLink({"b.o", "libx.a", "--exclude-libs=libx.a"}),
                        ctx).key);
  EXPECT_TRUE(
      analyzeLink(elfLink({"a.o", "--exclude-libs", "ALL"}), ctx).namesMatter
          .empty());
  EXPECT_FALSE(
      analyzeLink(elfLink({"-b", "binary", "data.bin"}), ctx).namesMatter
          .empty());
}

TEST(LinkKey, BaseDirMakesCheckoutsShareKeysForElfOnly) {
  KeyContext one{"v", "lld", "/home/a/src", {}};
  KeyContext two{"v", "lld", "/home/b/src", {}};
  LinkInvocation a = elfLink({"/home/a/src/x.o", "-o", "out"});
  a.cwd = "/home/a/src/build";
  LinkInvocation b = elfLink({"/home/b/src/x.o", "-o", "out"});
  b.cwd = "/home/b/src/build";
  EXPECT_EQ(analyzeLink(a, one).key, analyzeLink(b, two).key);
  a.flavor = b.flavor = Flavor::MachO; // embeds absolute paths
  EXPECT_NE(analyzeLink(a, one).key, analyzeLink(b, two).key);
}

// ccache's base dir: one base dir above many checkouts, paths under it
// keyed relative to the working directory (issue 26).
TEST(LinkKey, CommonParentBaseDirKeysPathsRelativeToTheWorkingDirectory) {
  KeyContext ctx{"v", "lld", "/ws", {}};
  auto in = [](const std::string &co, const std::string &sub) {
    LinkInvocation inv =
        elfLink({"-L/ws/" + co + "/lib", "x.o", "-lf", "-rpath",
                 "/ws/" + co + "/lib", "-o", "/ws/" + co + "/bin/prog"});
    inv.cwd = "/ws/" + co + sub;
    return inv;
  };
  LinkAnalysis a = analyzeLink(in("A", "/build"), ctx);
  EXPECT_TRUE(a.paths.relativeToCwd());
  EXPECT_EQ(a.key, analyzeLink(in("B", "/build"), ctx).key);
  EXPECT_EQ(a.key, analyzeLink(in("deep/er", "/build"), ctx).key);
  // -rpath ../lib seen from another depth is another path.
  EXPECT_NE(a.key, analyzeLink(in("A", "/build/sub"), ctx).key);
  // Files under the base dir but outside the working directory are stored
  // relative to it; a path outside the base dir as it is.
  EXPECT_EQ(a.paths.toStored("/ws/A/include/x.ld"),
            PathMapper::token("C") + "/../include/x.ld");
  EXPECT_EQ(a.paths.toStored("/ws/shared/y.o"),
            PathMapper::token("C") + "/../../shared/y.o");
  EXPECT_EQ(a.paths.toStored("/usr/lib/crt1.o"), "/usr/lib/crt1.o");
  LinkAnalysis b = analyzeLink(in("B", "/build"), ctx);
  EXPECT_EQ(b.paths.toLocal(a.paths.toStored("/ws/A/include/x.ld")),
            "/ws/B/include/x.ld");
  // A diagnostic naming such a path cannot be replayed as LLD prints it:
  // it is required, not replaced.
  std::set<std::string> embedded;
  EXPECT_EQ(
      a.paths.toStoredText("warning: /ws/A/include/x.ld: odd\n", &embedded),
      "warning: /ws/A/include/x.ld: odd\n");
  EXPECT_TRUE(embedded.count("B"));
  // A path outside the base dir splits the key.
  LinkInvocation other = in("A", "/build");
  other.argv.push_back("-rpath=/opt/A");
  LinkInvocation otherB = in("B", "/build");
  otherB.argv.push_back("-rpath=/opt/B");
  EXPECT_NE(analyzeLink(other, ctx).key, analyzeLink(otherB, ctx).key);
  // A working directory outside the base dir keeps the prefix token.
  LinkInvocation outside = in("A", "/build");
  outside.cwd = "/elsewhere";
  EXPECT_FALSE(analyzeLink(outside, ctx).paths.relativeToCwd());
}

TEST(LinkKey, RelativePathsAreLexical) {
  EXPECT_EQ(relativePath("/a/b", "/a/b"), "");
  EXPECT_EQ(relativePath("/a/b", "/a/b/c/d"), "c/d");
  EXPECT_EQ(relativePath("/a/b/c", "/a/x"), "../../x");
  EXPECT_EQ(relativePath("/a/b", "/a/./b//c"), "c");
  EXPECT_EQ(relativePath("/a/b", "/a/b/../c"), "../c");
  EXPECT_EQ(
      storedPrefixes("-Wl,-rpath,/ws/A/lib:/usr/lib", "/ws/A/build", "/ws/"),
      "-Wl,-rpath," + PathMapper::token("C") + "/../lib:/usr/lib");
  EXPECT_EQ(storedPrefixes("/wsx/a /ws", "/ws/A", "/ws"),
            "/wsx/a " + PathMapper::token("C") + "/..");
}

// LLVM's current_path takes PWD only when it names the working directory:
// a stale PWD (`make -C lib` leaves the top directory in it) and a PWD
// spelled as getcwd spells the directory key the same as none.
TEST(LinkKey, PwdIsKeyedOnlyWhereItNamesTheWorkingDirectory) {
  TempDir t;
  ASSERT_EQ(::mkdir((t.path + "/lib").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((t.path + "/lib").c_str(), (t.path + "/via").c_str()), 0);
  KeyContext ctx{"v", "lld", "", {}};
  auto with = [&](const char *pwd) {
    LinkInvocation inv = elfLink({"a.o", "-o", "x"});
    inv.cwd = t.path + "/lib";
    if (pwd)
      inv.env["PWD"] = pwd;
    return analyzeLink(inv, ctx).key;
  };
  Digest none = with(nullptr);
  EXPECT_EQ(none, with(t.path.c_str()));            // stale
  EXPECT_EQ(none, with((t.path + "/lib").c_str())); // the cwd
  EXPECT_EQ(none, with("relative"));                // not absolute
  EXPECT_NE(none,
            with((t.path + "/via").c_str())); // names it, spelled otherwise
  for (Flavor f : {Flavor::Coff, Flavor::MachO}) {
    LinkInvocation a = elfLink({"a.o", "-o", "x"});
    a.flavor = f;
    a.cwd = t.path + "/lib";
    LinkInvocation b = a;
    a.env["PWD"] = t.path;
    EXPECT_EQ(analyzeLink(a, ctx).key, analyzeLink(b, ctx).key);
  }
}

TEST(ArchiveKeyBaseDir, CheckoutsUnderOneBaseDirShareKeys) {
  TempDir t;
  std::string err;
  auto stats = StatCache::open("", &err);
  for (const char *co : {"A", "B"})
    ASSERT_EQ(::mkdir((t.path + "/" + co).c_str(), 0755), 0);
  KeyContext ctx{"v", "lld", t.path, {}};
  auto ar = [&](const std::string &co, const std::string &pwd) {
    LinkInvocation inv;
    inv.flavor = Flavor::Ar;
    inv.argv = {"ar.linkd", "rcs", "lib.a", "x.o", t.path + "/" + co + "/y.o"};
    inv.cwd = t.path + "/" + co;
    inv.env["PWD"] = pwd;
    return analyzeArchiveRequest(inv, ctx, *stats);
  };
  LinkAnalysis a = ar("A", t.path + "/A");
  EXPECT_EQ(a.key, ar("B", t.path).key); // B's PWD is stale
  EXPECT_EQ(a.paths.toStored(t.path + "/A/lib.a"),
            PathMapper::token("C") + "/lib.a");
  // A member outside the working directory: relative to it under the base
  // dir, as given without one.
  KeyContext none{"v", "lld", "", {}};
  LinkInvocation inv;
  inv.flavor = Flavor::Ar;
  inv.argv = {"ar.linkd", "rcs", "lib.a", t.path + "/A/y.o"};
  inv.cwd = t.path + "/A/sub";
  LinkInvocation invB = inv;
  invB.argv[3] = t.path + "/B/y.o";
  invB.cwd = t.path + "/B/sub";
  EXPECT_EQ(analyzeArchiveRequest(inv, ctx, *stats).key,
            analyzeArchiveRequest(invB, ctx, *stats).key);
  EXPECT_NE(analyzeArchiveRequest(inv, none, *stats).key,
            analyzeArchiveRequest(invB, none, *stats).key);
}

TEST(LinkKey, UncacheableReasons) {
  KeyContext ctx{"v", "lld", "", {}};
  auto reasons = [&](std::vector<std::string> args) {
    return analyzeLink(elfLink(args), ctx).uncacheable;
  };
  EXPECT_TRUE(reasons({"a.o", "-o", "x", "--build-id=sha1"}).empty());
  EXPECT_FALSE(reasons({"a.o", "--build-id=uuid"}).empty());
  EXPECT_FALSE(reasons({"a.o", "--reproduce=r.tar"}).empty());
  EXPECT_FALSE(reasons({"a.o", "--reproduce", "r.tar"}).empty());
  EXPECT_FALSE(reasons({"a.o", "--time-trace"}).empty());
  EXPECT_FALSE(reasons({"a.o", "-o", "-"}).empty());
  EXPECT_FALSE(reasons({"a.o", "--shuffle-sections=*=0"}).empty());
  EXPECT_TRUE(reasons({"a.o", "--shuffle-sections=*=7"}).empty());
  EXPECT_FALSE(reasons({"-m", "i386pep", "a.o"}).empty()); // MinGW timestamp
  EXPECT_TRUE(
      reasons({"-m", "i386pep", "--no-insert-timestamp", "a.o"}).empty());

  LinkInvocation coff;
  coff.flavor = Flavor::Coff;
  coff.argv = {"lld-link", "a.obj", "/out:a.exe"};
  coff.cwd = "/w";
  EXPECT_FALSE(analyzeLink(coff, ctx).uncacheable.empty());
  coff.argv.push_back("/Brepro");
  EXPECT_TRUE(analyzeLink(coff, ctx).uncacheable.empty());
  coff.argv.pop_back();
  coff.env["SOURCE_DATE_EPOCH"] = "1";
  EXPECT_TRUE(analyzeLink(coff, ctx).uncacheable.empty());
  coff.env.clear();
  KeyContext sloppy{"v", "lld", "", {"coff_timestamp"}};
  EXPECT_TRUE(analyzeLink(coff, sloppy).uncacheable.empty());
}

TEST(PathMapper, WholeNamesInPathsAndDiagnostics) {
  PathMapper m({{NameRole::Input, "0", "a.o", "/w/a.o", ""},
                {NameRole::SearchDir, "1", "/home/a/src/", "/home/a/src/", ""},
                {NameRole::Cwd, "C", "/w", "/w", ""}});
  EXPECT_EQ(m.toStored("/home/a/src/x.o"), PathMapper::token("1") + "/x.o");
  EXPECT_EQ(m.toStored("/home/a/srcfoo/x.o"), "/home/a/srcfoo/x.o");
  EXPECT_EQ(m.toStored("/w/a.o"), PathMapper::token("0a"));
  EXPECT_EQ(m.toLocal(PathMapper::token("1") + "/x.o"), "/home/a/src/x.o");
  std::set<std::string> embedded;
  std::string text = "ld.lld: warning: a.o: x\nld.lld: error: /w/a.o(.text)\n";
  std::string stored = m.toStoredText(text, &embedded);
  EXPECT_EQ(stored, "ld.lld: warning: " + PathMapper::token("0") +
                        ": x\nld.lld: error: " + PathMapper::token("0a") +
                        "(.text)\n");
  EXPECT_TRUE(embedded.empty());
  EXPECT_EQ(m.toLocal(stored), text);
  // Inside a longer word: left as it is, and the name is required.
  EXPECT_EQ(m.toStoredText("cannot open data.o", &embedded),
            "cannot open data.o");
  EXPECT_EQ(embedded, std::set<std::string>{"0"});
  EXPECT_FALSE(PathMapper({{NameRole::Cwd, "C", "/", "/", ""}}).active());
}

TEST(PatternScan, FindsEveryPatternAcrossPrefixes) {
  PatternScan scan({"/tmp/ccA.o", "/tmp/cc", "/usr/lib/x", "c", "zz"});
  std::vector<bool> found(5);
  const char data[] = "\x7f" "ELF...../tmp/ccB.o\0/usr/lib/x86\0";
  scan.scan(std::string_view(data, sizeof(data) - 1), found);
  EXPECT_EQ(found, (std::vector<bool>{false, true, true, true, false}));
}

// The store hands the output over in pieces: a name split at any point
// between two pieces (or spread over three) is found; one split between two
// outputs is not there.
TEST(OutputScan, FindsANameAcrossPiecesNotAcrossOutputs) {
  const std::string name = "/tmp/cc1234.o";
  PathMapper m({{NameRole::Input, "0", name, name, ""}});
  AccessLog log;
  log.existing.insert(name); // a file of the link: only the scan requires it
  std::string data = std::string(40, 'x') + name + std::string(40, 'y');
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    OutputScan scan(m);
    auto sink = scan.startOutput();
    ASSERT_TRUE(sink);
    sink(std::string_view(data).substr(0, cut));
    sink(std::string_view(data).substr(cut, 3));
    sink(std::string_view(data).substr(std::min(data.size(), cut + 3)));
    NameCheck nc = checkNames(m, log, scan, "", "");
    EXPECT_EQ(nc.exact, (std::map<std::string, bool>{{"0", true}}))
        << "cut at " << cut;
    EXPECT_EQ(nc.scannedBytes, data.size());
  }
  OutputScan scan(m);
  scan.startOutput()(data.substr(0, 45));
  scan.startOutput()(data.substr(45));
  EXPECT_TRUE(checkNames(m, log, scan, "", "").exact.empty());
  // Nothing left out: nothing to search, no sink.
  EXPECT_FALSE(OutputScan(PathMapper()).startOutput());
}

// The store's sink sees every byte stored, in order: a small (compressed)
// blob, a large (raw, copied) one, and a large one whose digest is known.
TEST(LocalStore, SinkSeesEveryByteStored) {
  TempDir t;
  std::string err;
  StoreConfig cfg{t.path, 1 << 30, 1};
  cfg.compressLimit = 1000;
  auto store = LocalStore::open(cfg, &err);
  ASSERT_TRUE(store) << err;
  for (size_t size : {size_t(999), size_t(3 << 20) + 17}) {
    std::string content(size, '\0');
    for (size_t i = 0; i < size; ++i)
      content[i] = static_cast<char>(i * 7 + i / 251);
    std::string path = t.path + "/f" + std::to_string(size);
    std::ofstream(path, std::ios::binary) << content;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    for (bool known : {false, true}) {
      std::string seen;
      size_t pieces = 0;
      Digest d;
      ASSERT_TRUE(store->putBlobFromFile(
          fd, size, &d, known ? std::optional(sha256(content)) : std::nullopt,
          [&](std::string_view p) {
            seen.append(p);
            ++pieces;
          }));
      EXPECT_EQ(d, sha256(content));
      EXPECT_TRUE(seen == content) << size << (known ? " known" : "");
      EXPECT_GE(pieces, size > (1 << 20) ? 2u : 1u);
    }
    ::close(fd);
  }
}

TEST(Config, Sizes) {
  EXPECT_EQ(parseSize("10G"), 10ull << 30);
  EXPECT_EQ(parseSize("512M"), 512ull << 20);
  EXPECT_EQ(parseSize("1KiB"), std::nullopt);
  EXPECT_EQ(parseSize("1kb"), 1024u);
  EXPECT_EQ(parseSize("123"), 123u);
  EXPECT_EQ(parseSize("x"), std::nullopt);
}

TEST(LocalStore, CorruptBlobIsAMissAndIsRemoved) {
  TempDir t;
  std::string err;
  auto store = LocalStore::open({t.path, 1 << 30, 1}, &err);
  ASSERT_TRUE(store) << err;
  Digest d;
  ASSERT_TRUE(store->putBlob("hello linker", &d));
  std::string out;
  EXPECT_EQ(store->getBlob(d, out), Lookup::Hit);
  EXPECT_EQ(out, "hello linker");
  // Overwrite the blob file with a valid zstd frame of other content.
  std::string hex = d.hex();
  std::string path = t.path + "/blobs/" + hex.substr(0, 2) + "/" + hex;
  Digest other;
  ASSERT_TRUE(store->putBlob("goodbye linker", &other));
  std::string oh = other.hex();
  std::filesystem::copy_file(t.path + "/blobs/" + oh.substr(0, 2) + "/" + oh,
                             path,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(store->getBlob(d, out), Lookup::Corrupt);
  EXPECT_EQ(store->corruptCount(), 1u);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(store->getBlob(d, out), Lookup::Miss);
}

TEST(LocalStore, MaterializeWritesVerifiedContentOrNothing) {
  TempDir t;
  std::string err;
  auto store = LocalStore::open({t.path + "/s", 1ull << 30, 1}, &err);
  ASSERT_TRUE(store) << err;
  // Small, and larger than the 4 MiB streaming chunk (several chunks).
  std::string small = "tiny output";
  std::string big(11 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>((i * 2654435761u) >> 24);
  for (const std::string *content : {&small, &big}) {
    Digest d;
    ASSERT_TRUE(store->putBlob(*content, &d));
    std::string out = t.path + "/out";
    ASSERT_EQ(store->materializeBlob(d, out, 0751, &err), Lookup::Hit) << err;
    std::ifstream in(out, std::ios::binary);
    std::string got((std::istreambuf_iterator<char>(in)), {});
    EXPECT_TRUE(got == *content);
    EXPECT_EQ(std::filesystem::status(out).permissions(),
              static_cast<std::filesystem::perms>(0751));
    std::filesystem::remove(out);
  }
  // A blob file holding other (valid) content: detected, nothing written.
  Digest a, b;
  ASSERT_TRUE(store->putBlob("content a", &a));
  ASSERT_TRUE(store->putBlob("content b", &b));
  auto blobFile = [&](const Digest &d) {
    return t.path + "/s/blobs/" + d.hex().substr(0, 2) + "/" + d.hex();
  };
  std::filesystem::copy_file(blobFile(b), blobFile(a),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(store->materializeBlob(a, t.path + "/bad", 0644, &err),
            Lookup::Corrupt);
  EXPECT_FALSE(std::filesystem::exists(t.path + "/bad"));
  EXPECT_EQ(store->materializeBlob(a, t.path + "/bad", 0644, &err),
            Lookup::Miss);
  // Unwritable destination: an error, not a corrupt entry.
  EXPECT_EQ(store->materializeBlob(b, t.path + "/no/such/dir/x", 0644, &err),
            Lookup::Error);
  EXPECT_EQ(store->corruptCount(), 1u);
}

TEST(LocalStore, LargeBlobsAreStoredRawAndVerifiedToo) {
  TempDir t;
  std::string err;
  StoreConfig cfg{t.path + "/s", 1ull << 30, 1};
  cfg.compressLimit = 1024;
  auto store = LocalStore::open(cfg, &err);
  ASSERT_TRUE(store) << err;
  std::string content(5 << 20, '\0');
  for (size_t i = 0; i < content.size(); ++i)
    content[i] = static_cast<char>((i * 40503u) >> 7);
  writeFile(t.path + "/in", content);
  int fd = ::open((t.path + "/in").c_str(), O_RDONLY);
  Digest d;
  ASSERT_TRUE(store->putBlobFromFile(fd, content.size(), &d));
  ::close(fd);
  EXPECT_EQ(d, sha256(content));
  std::string blob =
      t.path + "/s/blobs/" + d.hex().substr(0, 2) + "/" + d.hex();
  EXPECT_EQ(std::filesystem::file_size(blob), content.size() + 8); // raw
  ASSERT_EQ(store->materializeBlob(d, t.path + "/out", 0755, &err), Lookup::Hit)
      << err;
  std::ifstream in(t.path + "/out", std::ios::binary);
  EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(in)), {}) == content);
  std::string small;
  EXPECT_EQ(store->getBlob(d, small), Lookup::Hit);
  // Flip one byte in the middle of the raw blob: detected on the next read.
  {
    std::fstream io(blob, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(1 << 20);
    io.put('\x01');
  }
  EXPECT_EQ(store->materializeBlob(d, t.path + "/out2", 0755, &err),
            Lookup::Corrupt);
  EXPECT_FALSE(std::filesystem::exists(t.path + "/out2"));
}

TEST(LocalStore, LargeBlobsWithAKnownDigestAreFiledUnderItAndStillVerified) {
  // A farm output arrives hashed: the store files it under that digest
  // without reading it again. A digest that does not match the content
  // (a file changed behind the caller's back) is caught by the next read.
  TempDir t;
  std::string err;
  StoreConfig cfg{t.path + "/s", 1ull << 30, 1};
  cfg.compressLimit = 1024;
  auto store = LocalStore::open(cfg, &err);
  ASSERT_TRUE(store) << err;
  std::string content(3 << 20, 'x');
  writeFile(t.path + "/in", content);
  int fd = ::open((t.path + "/in").c_str(), O_RDONLY);
  Digest d;
  ASSERT_TRUE(store->putBlobFromFile(fd, content.size(), &d, sha256(content)));
  EXPECT_EQ(d, sha256(content));
  EXPECT_EQ(store->materializeBlob(d, t.path + "/out", 0644, &err), Lookup::Hit)
      << err;
  Digest wrong = sha256("something else");
  ASSERT_TRUE(store->putBlobFromFile(fd, content.size(), &d, wrong));
  ::close(fd);
  EXPECT_EQ(d, wrong);
  EXPECT_EQ(store->materializeBlob(wrong, t.path + "/out2", 0644, &err),
            Lookup::Corrupt);
  EXPECT_FALSE(std::filesystem::exists(t.path + "/out2"));
}

TEST(Sha256Thread, DigestOfEverythingHandedOverInOrder) {
  // Owned chunks and views, more than its queue holds at once (it blocks
  // the producer rather than growing).
  std::string whole;
  std::vector<std::string> views;
  views.reserve(40); // the views must stay where they are
  Sha256Thread h;
  for (int i = 0; i < 40; ++i) {
    std::string chunk((1 << 20) + i, static_cast<char>('a' + i % 26));
    whole += chunk;
    if (i % 3 == 0) {
      views.push_back(chunk);
      h.updateView(views.back());
    } else {
      h.update(std::move(chunk));
    }
  }
  EXPECT_EQ(h.finish(), sha256(whole));
  Sha256Thread empty;
  EXPECT_EQ(empty.finish(), sha256(""));
}

TEST(LocalStore, ActionsAreVerifiedAndEvictionKeepsTheCap) {
  TempDir t;
  std::string err;
  auto store = LocalStore::open({t.path, 64 * 1024, 1}, &err);
  ASSERT_TRUE(store) << err;
  Digest key = sha256("k");
  ASSERT_TRUE(store->putAction("ns", key, "value"));
  std::string v;
  EXPECT_EQ(store->getAction("ns", key, v), Lookup::Hit);
  EXPECT_EQ(v, "value");
  EXPECT_EQ(store->getAction("other", key, v), Lookup::Miss);
  for (int i = 0; i < 40; ++i) {
    std::string blob(8192, static_cast<char>('a' + i % 26));
    blob += std::to_string(i) + std::string(4096, static_cast<char>(i));
    // Random-ish content so zstd cannot shrink it to nothing.
    for (size_t j = 0; j < blob.size(); ++j)
      blob[j] = static_cast<char>(blob[j] ^ ((j * 2654435761u + i) >> 13));
    ASSERT_TRUE(store->putBlob(blob));
  }
  EXPECT_GT(store->usage().bytes, 64u * 1024);
  EXPECT_GT(store->maintain(), 0u);
  EXPECT_LE(store->usage().bytes, 64u * 1024);
}

TEST(StatCache, RehashesOnlyWhenTheIdentityChanges) {
  TempDir t;
  std::string err;
  auto cache = StatCache::open(t.path + "/sc.sqlite", &err, /*racy=*/0);
  ASSERT_TRUE(cache) << err;
  std::string f = t.path + "/in.o";
  writeFile(f, "one");
  auto a = cache->lookup(f);
  ASSERT_TRUE(a && a->exists);
  EXPECT_EQ(a->digest, sha256("one"));
  uint64_t hashed = cache->hashedFiles();
  EXPECT_EQ(cache->lookup(f)->digest, a->digest);
  EXPECT_EQ(cache->hashedFiles(), hashed); // answered from the cache
  writeFile(f, "two");
  EXPECT_EQ(cache->lookup(f)->digest, sha256("two"));
  auto missing = cache->lookup(t.path + "/nope");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->exists);
}

TEST(StatCache, RecentlyChangedFilesAreNotRemembered) {
  TempDir t;
  std::string err;
  auto cache = StatCache::open("", &err); // default 2 s racy window
  ASSERT_TRUE(cache) << err;
  std::string f = t.path + "/in.o";
  writeFile(f, "one");
  cache->lookup(f);
  cache->lookup(f);
  EXPECT_EQ(cache->hashedFiles(), 2u); // just written: hashed every time
}

// Sets a directory's mtime an hour back, so that any later change of its
// entries gives it a visibly different mtime (timestamps are coarse).
void ageDirectory(const std::string &dir) {
  struct timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= 3600;
  times[1] = times[0];
  ASSERT_EQ(utimensat(AT_FDCWD, dir.c_str(), times, 0), 0);
}

struct Held {
  InputHandles &h;
  std::string dir;
  // The file as the held descriptor sees it, or nullopt (check by path).
  std::optional<struct stat> stat(const char *name) {
    struct stat dirSt, st;
    if (::stat(dir.c_str(), &dirSt) != 0)
      return std::nullopt;
    h.refresh();
    auto lock = h.readLock();
    auto *d = h.find(dir, dirSt);
    const Digest *digest = nullptr;
    st.st_nlink = 0; // left alone when the watch answers
    if (!d || !h.stat(d, name, &st, &digest))
      return std::nullopt;
    known = digest ? std::optional<Digest>(*digest) : std::nullopt;
    quiet = st.st_nlink == 0;
    return st;
  }
  std::optional<Digest> known = {}; // from the last stat()
  bool quiet = false; // the last stat() was answered by the watch alone
  void hold(const char *name, Digest digest = {}) {
    int dirFd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat dirSt, st;
    ASSERT_EQ(fstat(dirFd, &dirSt), 0);
    ASSERT_EQ(fstatat(dirFd, name, &st, 0), 0);
    h.hold(dir, dirSt, dirFd, name, st, digest);
    close(dirFd);
  }
};

TEST(InputHandles, UnchangedDirectoryServesFstatsOfHeldFiles) {
  TempDir t;
  InputHandles h(16, /*racyNanos=*/0, /*watchFiles=*/false);
  Held held{h, t.path};
  writeFile(t.path + "/a.o", "one");
  ageDirectory(t.path);
  held.hold("a.o");
  ASSERT_EQ(h.heldCount(), 1u);
  auto st = held.stat("a.o");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->st_size, 3);
  writeFile(t.path + "/a.o", "longer"); // in place: same inode, seen
  st = held.stat("a.o");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->st_size, 6);
  EXPECT_FALSE(held.stat("b.o")) << "never held";
}

TEST(InputHandles, DigestServesOnlyWhileTheIdentityHolds) {
  TempDir t;
  InputHandles h(16, 0, /*watchFiles=*/false);
  Held held{h, t.path};
  writeFile(t.path + "/a.o", "one");
  ageDirectory(t.path);
  held.hold("a.o", sha256("one"));
  ASSERT_TRUE(held.stat("a.o"));
  ASSERT_TRUE(held.known);
  EXPECT_EQ(*held.known, sha256("one"));
  writeFile(t.path + "/a.o", "two"); // same size; new mtime and ctime
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_FALSE(held.known) << "identity changed: check through the stat cache";
  // A file written within the racy window of its holding: held (its
  // directory is old), but its digest is not trusted for later checks.
  InputHandles racy(16, /*racyNanos=*/1'000'000'000, false);
  Held r{racy, t.path};
  ASSERT_EQ(usleep(1'100'000), 0); // the directory's times age past 1 s
  writeFile(t.path + "/a.o", "six"); // in place: only the file changes
  r.hold("a.o", sha256("six"));
  ASSERT_TRUE(r.stat("a.o"));
  EXPECT_FALSE(r.known);
}

TEST(InputHandles, RenamingOverAHeldFileInvalidatesItsDirectory) {
  TempDir t;
  InputHandles h(16, 0, /*watchFiles=*/false);
  Held held{h, t.path};
  writeFile(t.path + "/a.o", "one");
  ageDirectory(t.path);
  held.hold("a.o");
  ASSERT_TRUE(held.stat("a.o"));
  writeFile(t.path + "/a.o.tmp", "two");
  ASSERT_EQ(rename((t.path + "/a.o.tmp").c_str(), (t.path + "/a.o").c_str()),
            0);
  EXPECT_FALSE(held.stat("a.o")) << "the name now binds another inode";
}

TEST(InputHandles, RacyDirectoriesSymlinksAndTheCapAreNotHeld) {
  TempDir t;
  {
    InputHandles h(16, /*racyNanos=*/int64_t(3600) * 1000000000);
    Held held{h, t.path};
    writeFile(t.path + "/a.o", "one");
    held.hold("a.o"); // the directory changed just now
    EXPECT_EQ(h.heldCount(), 0u);
  }
  InputHandles h(1, 0, false);
  Held held{h, t.path};
  writeFile(t.path + "/b.o", "two");
  ASSERT_EQ(symlink("a.o", (t.path + "/l.o").c_str()), 0);
  ageDirectory(t.path);
  held.hold("l.o");
  EXPECT_EQ(h.heldCount(), 0u) << "a symlink's target is elsewhere";
  held.hold("a.o");
  held.hold("b.o");
  EXPECT_EQ(h.heldCount(), 1u) << "capped";
  EXPECT_TRUE(held.stat("a.o"));
  EXPECT_FALSE(held.stat("b.o"));
}

TEST(InputHandles, SweepLetsGoOfDeletedFiles) {
  TempDir t;
  std::string sub = t.path + "/sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  InputHandles h(16, 0, /*watchFiles=*/false);
  Held held{h, sub};
  writeFile(sub + "/a.o", "one");
  writeFile(sub + "/b.o", "two");
  ageDirectory(sub);
  held.hold("a.o");
  held.hold("b.o");
  ASSERT_EQ(h.heldCount(), 2u);
  ASSERT_EQ(unlink((sub + "/a.o").c_str()), 0);
  h.sweep();
  EXPECT_EQ(h.heldCount(), 1u);
}

// With watching on (the default), a held file nothing touched is answered
// without a system call; every kind of change brings back the fstat, which
// decides as before.
TEST(InputHandles, WatchedFilesAnswerWithoutSystemCallsUntilTouched) {
  TempDir t;
  InputHandles h(16, 0);
  Held held{h, t.path};
  writeFile(t.path + "/a.o", "one");
  ageDirectory(t.path);
  held.hold("a.o", sha256("one"));
  EXPECT_EQ(h.watchedCount(), 1u) << "ext4/tmpfs/xfs/btrfs expected here";
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_TRUE(held.quiet);
  ASSERT_TRUE(held.known);
  EXPECT_EQ(*held.known, sha256("one"));
  // Opened for writing and closed, nothing written: one fstat, then quiet.
  close(open((t.path + "/a.o").c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_FALSE(held.quiet);
  EXPECT_TRUE(held.known) << "same identity: same digest";
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_TRUE(held.quiet) << "re-armed by the fstat";
  // Written in place with the same size.
  int fd = open((t.path + "/a.o").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_EQ(pwrite(fd, "two", 3, 0), 3);
  close(fd);
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_FALSE(held.quiet);
  EXPECT_FALSE(held.known) << "identity changed: check through the stat cache";
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_FALSE(held.known) << "stays unknown until held again";
}

TEST(InputHandles, WatchSeesEveryKindOfChange) {
  TempDir t;
  std::string other = t.path + "/other";
  ASSERT_EQ(mkdir(other.c_str(), 0755), 0);
  struct Change {
    const char *what;
    std::function<void(const std::string &)> apply;
  };
  std::vector<Change> changes = {
      {"truncate", [](const std::string &p) { ASSERT_EQ(truncate(p.c_str(), 1), 0); }},
      {"chmod", [](const std::string &p) { ASSERT_EQ(chmod(p.c_str(), 0600), 0); }},
      {"utimensat", [](const std::string &p) {
         ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), nullptr, 0), 0);
       }},
      {"fallocate", [](const std::string &p) {
         int fd = open(p.c_str(), O_WRONLY | O_CLOEXEC);
         ASSERT_EQ(fallocate(fd, 0, 0, 8192), 0);
         close(fd);
       }},
      {"copy_file_range into it", [&](const std::string &p) {
         std::string src = other + "/src";
         writeFile(src, "0123456789");
         int in = open(src.c_str(), O_RDONLY | O_CLOEXEC);
         int out = open(p.c_str(), O_WRONLY | O_CLOEXEC);
         loff_t off = 0;
         ASSERT_EQ(copy_file_range(in, nullptr, out, &off, 3, 0), 3);
         close(in);
         close(out);
       }},
  };
  for (const Change &c : changes) {
    SCOPED_TRACE(c.what);
    InputHandles h(16, 0);
    Held held{h, t.path};
    std::string p = t.path + "/a.o";
    unlink(p.c_str());
    writeFile(p, "one");
    ageDirectory(t.path);
    held.hold("a.o", sha256("one"));
    ASSERT_TRUE(held.stat("a.o"));
    ASSERT_TRUE(held.quiet);
    c.apply(p);
    auto st = held.stat("a.o");
    ASSERT_TRUE(st);
    EXPECT_FALSE(held.quiet);
  }
}

TEST(InputHandles, WritesThroughAnotherNameOfTheInodeAreSeen) {
  // The watch is on the inode, not on a directory: a write through a hard
  // link elsewhere (which no directory of the input changes) is seen, even
  // after the link itself was (link count: one fstat, same content).
  TempDir t;
  std::string other = t.path + "/other";
  ASSERT_EQ(mkdir(other.c_str(), 0755), 0);
  writeFile(t.path + "/a.o", "one");
  ASSERT_EQ(link((t.path + "/a.o").c_str(), (other + "/alias.o").c_str()), 0);
  ageDirectory(t.path);
  ASSERT_EQ(usleep(20'000), 0);
  InputHandles h(16, 0);
  Held held{h, t.path};
  held.hold("a.o", sha256("one"));
  ASSERT_TRUE(held.stat("a.o"));
  ASSERT_TRUE(held.quiet);
  int fd = open((other + "/alias.o").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_EQ(pwrite(fd, "two", 3, 0), 3);
  close(fd);
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_FALSE(held.quiet);
  EXPECT_FALSE(held.known);
}

TEST(InputHandles, WatchingOffAlwaysFstats) {
  TempDir t;
  InputHandles h(16, 0, /*watchFiles=*/false);
  Held held{h, t.path};
  writeFile(t.path + "/a.o", "one");
  ageDirectory(t.path);
  held.hold("a.o", sha256("one"));
  EXPECT_EQ(h.watchedCount(), 0u);
  ASSERT_TRUE(held.stat("a.o"));
  EXPECT_FALSE(held.quiet);
  EXPECT_TRUE(held.known);
}

TEST(InputHandles, ReleasingEveryHolderRemovesTheWatch) {
  TempDir t;
  std::string sub = t.path + "/sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  writeFile(sub + "/a.o", "one");
  ASSERT_EQ(link((sub + "/a.o").c_str(), (sub + "/b.o").c_str()), 0);
  ageDirectory(sub);
  InputHandles h(16, 0);
  Held held{h, sub};
  held.hold("a.o", sha256("one"));
  held.hold("b.o", sha256("one"));
  EXPECT_EQ(h.heldCount(), 2u);
  EXPECT_EQ(h.watchedCount(), 1u) << "one inode, one watch";
  ASSERT_EQ(unlink((sub + "/a.o").c_str()), 0);
  ASSERT_EQ(unlink((sub + "/b.o").c_str()), 0);
  h.refresh();
  h.sweep();
  EXPECT_EQ(h.heldCount(), 0u);
  EXPECT_EQ(h.watchedCount(), 0u);
}

TEST(RemoteUrl, ParsesEveryTierForm) {
  std::string err;
  auto r = parseRemoteUrl("redis://ci:s%40cret@cache.internal:6380/"
                          "3?prefix=proj:&ttl=86400&mode=ro",
                          &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->host, "cache.internal");
  EXPECT_EQ(r->port, 6380);
  EXPECT_EQ(r->db, 3);
  EXPECT_EQ(r->user, "ci");
  EXPECT_EQ(r->password, "s@cret");
  EXPECT_EQ(r->keyPrefix, "proj:");
  EXPECT_EQ(r->ttlSeconds, 86400u);
  EXPECT_EQ(r->mode, TierMode::ReadOnly);
  EXPECT_EQ(r->displayName(), "redis://cache.internal:6380/3"); // no secret

  auto u = parseRemoteUrl("redis+unix:///run/redis.sock?db=2", &err);
  ASSERT_TRUE(u) << err;
  EXPECT_EQ(u->path, "/run/redis.sock");
  EXPECT_EQ(u->db, 2);

  auto h =
      parseRemoteUrl("https://u:p@cache:8443/linkd/?mode=write-only", &err);
  ASSERT_TRUE(h) << err;
  EXPECT_EQ(h->scheme, "https");
  EXPECT_EQ(h->port, 8443);
  EXPECT_EQ(h->path, "/linkd");
  EXPECT_EQ(h->mode, TierMode::WriteOnly);
  EXPECT_EQ(h->user, "u");

  EXPECT_FALSE(parseRemoteUrl("ftp://x", &err));
  EXPECT_FALSE(parseRemoteUrl("redis://h?mode=sometimes", &err));
  EXPECT_FALSE(parseRemoteUrl("http://h?colour=blue", &err));
  EXPECT_FALSE(parseRemoteUrl("no-scheme", &err));
}

TEST(RemoteTiers, ActionEnvelopeSignatures) {
  std::string err;
  RemoteOptions keyed;
  keyed.hmacKey = "k1";
  RemoteOptions other;
  other.hmacKey = "k2";
  auto a = RemoteTiers::create(keyed, &err);
  auto b = RemoteTiers::create(other, &err);
  auto plain = RemoteTiers::create(RemoteOptions{}, &err);
  ASSERT_TRUE(a && b && plain);
  Digest key = sha256("action"), key2 = sha256("other action");
  std::string signedEntry = a->wrapAction(key, "manifest");
  EXPECT_EQ(a->unwrapAction(key, signedEntry), "manifest");
  EXPECT_EQ(b->unwrapAction(key, signedEntry), std::nullopt);  // other key
  EXPECT_EQ(a->unwrapAction(key2, signedEntry), std::nullopt); // replayed
  EXPECT_EQ(plain->unwrapAction(key, signedEntry),
            "manifest"); // unkeyed reader
  EXPECT_EQ(plain->unwrapAction(key2, signedEntry), std::nullopt);
  std::string unsignedEntry = plain->wrapAction(key, "manifest");
  EXPECT_EQ(a->unwrapAction(key, unsignedEntry), std::nullopt);
  // Issue 42: an unsigned entry answers only the key it was written for.
  EXPECT_EQ(plain->unwrapAction(key, unsignedEntry), "manifest");
  EXPECT_EQ(plain->unwrapAction(key2, unsignedEntry), std::nullopt);
  // An entry of the first format (no key inside) binds to nothing a
  // keyless reader can check; a keyed one checks its signature.
  std::string v1 = "LKA1" + std::string(1, '\0') + "manifest";
  EXPECT_EQ(plain->unwrapAction(key, v1), std::nullopt);
  std::string v1Signed = a->wrapAction(key, "manifest");
  v1Signed.replace(0, 4, "LKA1");
  v1Signed.erase(5 + 32, 32); // the key inside
  EXPECT_EQ(a->unwrapAction(key, v1Signed), "manifest");
  EXPECT_EQ(a->unwrapAction(key2, v1Signed), std::nullopt);
  EXPECT_EQ(plain->unwrapAction(key, v1Signed), std::nullopt);
  std::string tampered = signedEntry;
  tampered.back() ^= 1;
  EXPECT_EQ(a->unwrapAction(key, tampered), std::nullopt);
  EXPECT_EQ(a->unwrapAction(key, "garbage"), std::nullopt);
}

} // namespace

namespace {

// Archive requests: what the key holds and what is not cached.
class ArchiveKey : public ::testing::Test {
protected:
  void SetUp() override {
    std::string err;
    stats = StatCache::open("", &err, /*racy=*/0);
    ASSERT_TRUE(stats) << err;
  }
  LinkAnalysis analyze(Flavor f, std::vector<std::string> argv,
                       std::optional<std::string> stdinData = std::nullopt) {
    LinkInvocation inv;
    inv.flavor = f;
    inv.argv = std::move(argv);
    inv.cwd = dir.path;
    inv.stdinData = std::move(stdinData);
    KeyContext ctx{"v", "llvm", "", {}};
    return analyzeArchiveRequest(inv, ctx, *stats);
  }
  TempDir dir;
  std::unique_ptr<StatCache> stats;
};

TEST_F(ArchiveKey, TheUpdatedArchiveIsKeyedByContent) {
  auto absent = analyze(Flavor::Ar, {"ar", "rcs", "lib.a", "a.o"});
  EXPECT_TRUE(absent.uncacheable.empty());
  EXPECT_EQ(absent.replacedInputs, std::set<std::string>{dir.path + "/lib.a"});
  EXPECT_TRUE(absent.resultMayBeEmpty);
  writeFile(dir.path + "/lib.a", "one");
  auto one = analyze(Flavor::Ar, {"ar", "rcs", "lib.a", "a.o"});
  writeFile(dir.path + "/lib.a", "two");
  auto two = analyze(Flavor::Ar, {"ar", "rcs", "lib.a", "a.o"});
  EXPECT_NE(absent.key, one.key);
  EXPECT_NE(one.key, two.key);
  writeFile(dir.path + "/lib.a", "one");
  EXPECT_EQ(analyze(Flavor::Ar, {"ar", "rcs", "lib.a", "a.o"}).key, one.key);
  // The program name is printed in diagnostics: part of the key.
  EXPECT_NE(analyze(Flavor::Ar, {"llvm-ar", "rcs", "lib.a", "a.o"}).key,
            one.key);
  // ranlib keys each archive it is given.
  auto ranlib = analyze(Flavor::Ranlib, {"ranlib", "lib.a", "other.a"});
  EXPECT_EQ(ranlib.replacedInputs.size(), 2u);
}

TEST_F(ArchiveKey, ResponseFilesAndScriptsByContent) {
  writeFile(dir.path + "/r.rsp", "rcs lib.a a.o");
  auto a = analyze(Flavor::Ar, {"ar", "@r.rsp"});
  EXPECT_EQ(a.replacedInputs, std::set<std::string>{dir.path + "/lib.a"});
  writeFile(dir.path + "/r.rsp", "rcs lib.a b.o");
  EXPECT_NE(analyze(Flavor::Ar, {"ar", "@r.rsp"}).key, a.key);
  // llvm-ranlib reads no response files: "@r.rsp" is an archive.
  auto r = analyze(Flavor::Ranlib, {"ranlib", "@r.rsp"});
  EXPECT_EQ(r.replacedInputs, std::set<std::string>{dir.path + "/@r.rsp"});
  auto s1 = analyze(Flavor::Ar, {"ar", "-M"}, "create x.a\naddmod a.o\nsave\n");
  auto s2 = analyze(Flavor::Ar, {"ar", "-M"}, "create x.a\naddmod b.o\nsave\n");
  EXPECT_TRUE(s1.uncacheable.empty());
  EXPECT_TRUE(s1.replacedInputs.empty());
  EXPECT_NE(s1.key, s2.key);
}

TEST_F(ArchiveKey, WhatIsNotCached) {
  for (auto argv :
       std::vector<std::vector<std::string>>{{"ar", "t", "lib.a"},
                                             {"ar", "xv", "lib.a"},
                                             {"ar", "p", "lib.a", "a.o"},
                                             {"ar", "rcsU", "lib.a", "a.o"},
                                             {"ar", "--help"},
                                             {"ar", "z", "lib.a"}})
    EXPECT_FALSE(analyze(Flavor::Ar, argv).uncacheable.empty()) << argv[1];
  // `u` compares with the archive's members: only without an archive is it
  // the same operation as without `u` (automake's `rm -f lib.a; ar cru`).
  EXPECT_TRUE(
      analyze(Flavor::Ar, {"ar", "cru", "absent.a", "a.o"}).uncacheable.empty());
  writeFile(dir.path + "/present.a", "!<arch>\n");
  EXPECT_FALSE(
      analyze(Flavor::Ar, {"ar", "cru", "present.a", "a.o"}).uncacheable.empty());
  EXPECT_FALSE(
      analyze(Flavor::Ranlib, {"ranlib", "-U", "lib.a"}).uncacheable.empty());
  EXPECT_FALSE(
      analyze(Flavor::Lib, {"lib", "/LIST", "x.lib"}).uncacheable.empty());
  auto lib = analyze(Flavor::Lib, {"lib", "/out:x.lib", "a.obj"});
  EXPECT_TRUE(lib.uncacheable.empty());
  EXPECT_TRUE(lib.replacedInputs.empty()); // written, not read
  // ... unless the output is also an input (lib.exe adds to it).
  auto add = analyze(Flavor::Lib, {"lib", "/out:x.lib", "x.lib", "b.obj"});
  EXPECT_EQ(add.replacedInputs, std::set<std::string>{dir.path + "/x.lib"});
}

TEST(AccessLog, ReadThenReplacedIsNoInput) {
  // llvm-ar r: reads lib.a, writes a temp file, renames it over lib.a.
  std::string r = rec('R', "/w/lib.a") + rec('R', "/w/a.o") +
                  rec('W', "/w/lib.a.temp-archive-1.a") +
                  rec('N', "/w/lib.a.temp-archive-1.a", "/w/lib.a");
  AccessLog log = parseAccessLog(r);
  EXPECT_EQ(log.read, std::set<std::string>{"/w/a.o"});
  EXPECT_EQ(log.overwritten, std::set<std::string>{"/w/lib.a"});
  EXPECT_EQ(log.outputs, std::set<std::string>{"/w/lib.a"});
}

TEST(CacheStatsText, NotStoredReasonsByKindAndOnlySectionsInUse) {
  CacheStats stats("/nonexistent/stats");
  StoreUsage usage;
  std::map<std::string, uint64_t> extra = {{"remote_skipped_breaker_open", 0},
                                           {"farm_offloaded", 0}};
  std::string quiet = stats.text(usage, 1 << 30, extra);
  for (const char *absent : {"not stored", "archive requests", "remote tiers",
                             "farm", "errors", "rewritten inputs"})
    EXPECT_EQ(quiet.find(absent), std::string::npos) << absent << "\n" << quiet;
  stats.countNotStored("input changed during the link: /w/a.o");
  stats.countNotStored("input changed during the link: /w/b.o");
  stats.countNotStored("cannot write to the store");
  std::string text = stats.text(usage, 1 << 30, extra);
  EXPECT_NE(text.find("  not stored         3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    input changed during the link: 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    cannot write to the store: 1\n"), std::string::npos)
      << text;
  std::string all = stats.text(usage, 1 << 30, extra, /*all=*/true);
  for (const char *present : {"archive requests", "remote tiers\n",
                              "  skipped breaker open", "farm\n", "  offloaded"})
    EXPECT_NE(all.find(present), std::string::npos) << present << "\n" << all;
  // The JSON keeps its shape: the same counters, no reasons added.
  EXPECT_EQ(stats.json(usage, 1 << 30).find("input changed"), std::string::npos);
}

TEST(ConfigSettings, EveryKeyListedWithItsSource) {
  Config c;
  EXPECT_EQ(listSettings(c).size(), 30u);
  auto s = settingFromVariable("LINKD_MAX_SIZE", "3072M");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->key, "max_size");
  EXPECT_EQ(s->value, "3G");
  EXPECT_EQ(s->source, "LINKD_MAX_SIZE");
  EXPECT_FALSE(settingFromVariable("LINKD_MAX_SIZE", "10X").has_value());
  EXPECT_FALSE(settingFromVariable("LINKD_NOPE", "1").has_value());
  auto format = settingFromVariable("LINKD_LOG_FORMAT", "json");
  ASSERT_TRUE(format.has_value());
  EXPECT_EQ(format->key, "log_format");
  EXPECT_EQ(format->value, "json");
  EXPECT_FALSE(settingFromVariable("LINKD_LOG_FORMAT", "xml").has_value());
}

} // namespace
