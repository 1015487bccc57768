// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Action keys of links and archive requests, the names a key leaves out,
// and the search of outputs for them.
#include "cache_fixtures.h"

#include "cache/access_log.h"
#include "cache/archive_key.h"
#include "cache/cache_stats.h"
#include "cache/input_handles.h"
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
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>

namespace {

using namespace linkd;
using namespace linkd::unit;

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
  EXPECT_EQ(a.ignoredOptions.size(),
            7u); // with the values of -plugin, -rpath-link
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
  EXPECT_NE(
      ex.key,
      analyzeLink(elfLink({"b.o", "libx.a", "--exclude-libs=libx.a"}), ctx)
          .key);
  EXPECT_TRUE(analyzeLink(elfLink({"a.o", "--exclude-libs", "ALL"}), ctx)
                  .namesMatter.empty());
  EXPECT_FALSE(analyzeLink(elfLink({"-b", "binary", "data.bin"}), ctx)
                   .namesMatter.empty());
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
// keyed relative to the working directory.
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
    return analyzeLink(elfLink(std::move(args)), ctx).uncacheable;
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
  const char data[] = "\x7f"
                      "ELF...../tmp/ccB.o\0/usr/lib/x86\0";
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

// Archive requests: what the key holds and what is not cached.
class ArchiveKey : public ::testing::Test {
protected:
  void SetUp() override {
    std::string err;
    stats = StatCache::open("", &err, /*racyNanos=*/0);
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
  EXPECT_TRUE(analyze(Flavor::Ar, {"ar", "cru", "absent.a", "a.o"})
                  .uncacheable.empty());
  writeFile(dir.path + "/present.a", "!<arch>\n");
  EXPECT_FALSE(analyze(Flavor::Ar, {"ar", "cru", "present.a", "a.o"})
                   .uncacheable.empty());
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

} // namespace
