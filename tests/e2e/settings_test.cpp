// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The daemon's settings as a user meets them: `linkd config` (every value
// and where it came from, the running daemon's or those a daemon would
// start with), config-file mistakes on stderr of everything a user runs
// (`linkd config`, `status`, `serve`, the client that starts the daemon), a
// client whose environment asks for another setting than the running
// daemon's (told once), `linkd stats` on a machine with nothing set up, and
// the CLI's own answers (usage, versions, "did you mean").
#include "harness.h"

#include <sys/stat.h>

#include <filesystem>

namespace linkd::e2e {
namespace {

constexpr std::string_view kConfig = "linkd: config: ";
constexpr std::string_view kWarning = "linkd: warning: ";

class Settings : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure())
      return;
    writeFile("hello.c", R"(#include <stdio.h>
int main(void) { puts("settings"); return 0; }
)");
    ASSERT_TRUE(exitedZero(run("clang-19 -c hello.c")));
    stock = run("clang-19 --ld-path=" + tools::ldLld.path +
                " hello.o -o hello.stock");
    ASSERT_TRUE(exitedZero(stock));
  }

  RunResult link(const std::string &env, const std::string &output) {
    return run(env + " clang-19 --ld-path=" + binPath("ld.linkd") +
               " hello.o -o " + output);
  }

  // The link gave the stock bytes; its stderr, without lines starting with
  // `prefix`, is stock's.
  void expectStockLink(const RunResult &r, const std::string &output,
                       std::string_view prefix) {
    ASSERT_TRUE(exitedZero(r)) << describe(r);
    EXPECT_EQ(withoutLinesStartingWith(r.err, prefix), stock.err)
        << describe(r);
    EXPECT_TRUE(sameBytes("hello.stock", output));
  }

  // The line of `linkd config`'s output for `key`.
  static std::string configLine(const std::string &out,
                                const std::string &key) {
    auto lines = linesStartingWith(out, key + " = ");
    return lines.empty() ? std::string() : lines[0];
  }

  RunResult stock;
};

TEST_F(Settings, ConfigShowsEachValueAndItsSource) {
  writeFile("linkd.conf", "# mine\nmax_size = 3G\n\njobs = 3\n");
  std::string conf = path("linkd.conf");
  RunResult r =
      run("LINKD_BASE_DIR=" + path("src") + " " + binPath("linkd") + " config");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_NE(r.out.find("no daemon serves"), std::string::npos) << r.out;
  EXPECT_NE(configLine(r.out, "max_size").find("3G"), std::string::npos);
  EXPECT_NE(configLine(r.out, "max_size").find("# " + conf + ":2"),
            std::string::npos)
      << r.out;
  EXPECT_NE(configLine(r.out, "jobs").find("# " + conf + ":4"),
            std::string::npos)
      << r.out;
  EXPECT_NE(configLine(r.out, "base_dir").find(path("src")), std::string::npos);
  EXPECT_NE(configLine(r.out, "base_dir").find("# LINKD_BASE_DIR"),
            std::string::npos)
      << r.out;
  EXPECT_NE(configLine(r.out, "log_level").find("info"), std::string::npos);
  EXPECT_NE(configLine(r.out, "log_level").find("# default"), std::string::npos)
      << r.out;
  EXPECT_FALSE(daemonStatus().has_value()) << "linkd config started a daemon";

  // With a daemon: its settings, read when it started, whatever the
  // environment of `linkd config` says.
  expectStockLink(link("LINKD_MAX_SIZE=5G", "hello"), "hello", kWarning);
  r = run(binPath("linkd") + " config");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_NE(r.out.find("settings of the daemon serving"), std::string::npos)
      << r.out;
  EXPECT_NE(configLine(r.out, "max_size").find("5G"), std::string::npos)
      << r.out;
  EXPECT_NE(configLine(r.out, "max_size").find("# LINKD_MAX_SIZE"),
            std::string::npos)
      << r.out;
  EXPECT_NE(configLine(r.out, "jobs").find("# " + conf + ":4"),
            std::string::npos)
      << r.out;
  RunResult status = run(binPath("linkd") + " status");
  ASSERT_TRUE(exitedZero(status));
  EXPECT_NE(status.out.find("max 5G"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("log level      info"), std::string::npos)
      << status.out;
}

// The passwords in remote URLs (Redis, HTTP basic auth)
// are not printed, with or without a daemon; the rest of the URL is.
TEST_F(Settings, ConfigMasksPasswords) {
  std::string remotes =
      "redis://linkd:s3cret-redis@127.0.0.1:1/0?prefix=p:,"
      "http://writer:s3cret-http@127.0.0.1:1/linkd?mode=write-only";
  RunResult r =
      run("LINKD_REMOTE='" + remotes + "' " + binPath("linkd") + " config");
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
  EXPECT_NE(configLine(r.out, "remote")
                .find("redis://linkd:***@127.0.0.1:1/0?prefix=p:,"
                      "http://writer:***@127.0.0.1:1/linkd?mode=write-only"),
            std::string::npos)
      << r.out;
  expectStockLink(link("LINKD_REMOTE='" + remotes + "'", "hello"), "hello",
                  kWarning);
  r = run(binPath("linkd") + " config");
  EXPECT_NE(r.out.find("settings of the daemon serving"), std::string::npos);
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
  EXPECT_EQ(run("grep -rl s3cret " + path("") + "state 2>/dev/null").out, "");
}

// REAPI headers carry API keys: `linkd config` names them, never their
// values; they accumulate from the file and the variable (as Bazel's
// --remote_header does), and the instance name shows as set.
TEST_F(Settings, ConfigMasksRemoteHeaderValues) {
  writeFile("linkd.conf", "remote_header = x-buildbuddy-api-key=s3cret-file\n"
                          "remote_instance_name = ci/main\n");
  RunResult r = run("LINKD_REMOTE_HEADER='authorization: Bearer s3cret-env' " +
                    binPath("linkd") + " config");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << r.out;
  std::string headers = configLine(r.out, "remote_header");
  EXPECT_NE(headers.find("x-buildbuddy-api-key=(set)"), std::string::npos)
      << r.out;
  EXPECT_NE(headers.find("authorization=(set)"), std::string::npos) << r.out;
  EXPECT_NE(configLine(r.out, "remote_instance_name").find("ci/main"),
            std::string::npos)
      << r.out;
  // A value without NAME= is reported, not sent.
  r = run("LINKD_REMOTE_HEADER='just-a-value' " + binPath("linkd") + " config");
  EXPECT_NE(r.err.find("bad value for remote_header"), std::string::npos)
      << r.err;
  // A client whose header differs from the daemon's is told so, in the
  // masked form (its stderr is a build log), and links with stock's bytes.
  writeFile("linkd.conf", "");
  expectStockLink(link("", "hello1"), "hello1", "\x01");
  r = link("LINKD_REMOTE_HEADER='x-api-key=s3cret-client' "
           "LINKD_REMOTE_KEY=s3cret-key",
           "hello2");
  expectStockLink(r, "hello2", kWarning);
  EXPECT_EQ(r.err.find("s3cret"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("LINKD_REMOTE_HEADER=x-api-key=(set) differs"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("LINKD_REMOTE_KEY=(set) differs"), std::string::npos)
      << r.err;
}

TEST_F(Settings, ConfigMistakesReachStderr) {
  writeFile("linkd.conf", "base_dri = /tmp\nmax_size = 10X\n");
  std::string conf = path("linkd.conf");
  const std::string typo = conf + ":1: unknown key 'base_dri' (did you mean "
                                  "base_dir?)";
  const std::string bad = conf + ":2: bad value for max_size: '10X'";
  auto expectBoth = [&](const RunResult &r) {
    auto lines = linesStartingWith(r.err, kConfig);
    ASSERT_EQ(lines.size(), 2u) << describe(r);
    EXPECT_EQ(lines[0], std::string(kConfig) + typo);
    EXPECT_EQ(lines[1], std::string(kConfig) + bad);
  };

  RunResult config = run(binPath("linkd") + " config");
  EXPECT_EQ(config.exitCode, 1) << describe(config);
  expectBoth(config);

  // The client that starts the daemon says so; the link is unaffected.
  RunResult first = link("", "hello1");
  expectStockLink(first, "hello1", kConfig);
  expectBoth(first);
  RunResult second = link("", "hello2");
  expectStockLink(second, "hello2", kConfig);
  EXPECT_TRUE(linesStartingWith(second.err, kConfig).empty()) << second.err;

  RunResult status = run(binPath("linkd") + " status");
  EXPECT_TRUE(exitedZero(status)) << describe(status);
  expectBoth(status);
  config = run(binPath("linkd") + " config");
  EXPECT_EQ(config.exitCode, 1);
  expectBoth(config);

  // `linkd serve` in the foreground, on a socket of its own.
  ASSERT_EQ(mkdir(path("fg").c_str(), 0700), 0);
  RunResult serve = run("LINKD_SOCKET=" + path("fg/linkd.sock") + " " +
                            binPath("linkd") + " serve --idle-timeout 1",
                        30s);
  EXPECT_TRUE(exitedZero(serve)) << describe(serve);
  expectBoth(serve);

  // What a daemon started now would read (none serves this socket).
  RunResult missing =
      run("LINKD_SOCKET=" + path("none/linkd.sock") +
          " LINKD_CONFIG=/nonexistent " + binPath("linkd") + " config");
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_EQ(linesStartingWith(missing.err, kConfig),
            std::vector<std::string>{
                std::string(kConfig) +
                "LINKD_CONFIG: cannot read /nonexistent: No such file or "
                "directory"})
      << describe(missing);
}

TEST_F(Settings, ClientSettingsTheDaemonDoesNotFollowAreToldOnce) {
  expectStockLink(link("", "hello1"), "hello1", "\x01");
  RunResult r = link("LINKD_MAX_SIZE=1G", "hello2");
  expectStockLink(r, "hello2", kWarning);
  auto warnings = linesStartingWith(r.err, kWarning);
  ASSERT_EQ(warnings.size(), 1u) << describe(r);
  EXPECT_EQ(warnings[0].rfind("linkd: warning: LINKD_MAX_SIZE=1G differs from "
                              "the running daemon's max_size (",
                              0),
            0u)
      << r.err;
  EXPECT_NE(warnings[0].find("it takes effect when the daemon starts again "
                             "(linkd stop)"),
            std::string::npos)
      << r.err;
  // Once per setting and value for this daemon.
  r = link("LINKD_MAX_SIZE=1G", "hello3");
  expectStockLink(r, "hello3", "\x01");
  // A value the daemon has is no news.
  r = link("LINKD_IDLE_TIMEOUT=300", "hello4");
  expectStockLink(r, "hello4", "\x01");
  // LINKD_QUIET silences it.
  r = link("LINKD_QUIET=1 LINKD_MAX_SIZE=2G", "hello5");
  expectStockLink(r, "hello5", "\x01");
  // A base dir travels with each request (docs/cache.md): applied, no news.
  r = link("LINKD_BASE_DIR=" + path("."), "hello6");
  expectStockLink(r, "hello6", "\x01");
}

TEST_F(Settings, AClientsLogLevelAppliesToItsOwnLines) {
  // The daemon logs at info: a miss says why only at debug.
  expectStockLink(link("", "hello1"), "hello1", "\x01");
  EXPECT_TRUE(logLines("link id=1 cache miss").empty());
  // Another output name is the same key (docs/cache.md): a miss needs an
  // empty cache.
  ASSERT_TRUE(exitedZero(run(binPath("linkd") + " cache clear")));
  RunResult r = link("LINKD_LOG=debug", "hello2");
  expectStockLink(r, "hello2", "\x01"); // applied, so nothing to warn about
  // The store (and its line) comes after the answer.
  waitForStored(2);
  EXPECT_EQ(logLines(" debug ").size(), logLines("link id=2 ").size() - 1)
      << readFile(stateDir + "/linkd.log");
  EXPECT_EQ(logLines("link id=2 cache miss key=").size(), 1u)
      << readFile(stateDir + "/linkd.log");
  EXPECT_EQ(logLines("link id=2 stored key=").size(), 1u)
      << readFile(stateDir + "/linkd.log");
  // The next request is at the daemon's level again.
  expectStockLink(link("", "hello3"), "hello3", "\x01");
  EXPECT_TRUE(logLines("link id=3 cache miss").empty());
  // And a quieter one hides that request's info line.
  expectStockLink(link("LINKD_LOG=warn", "hello4"), "hello4", "\x01");
  EXPECT_TRUE(logLines("link id=4 ").empty())
      << readFile(stateDir + "/linkd.log");
}

TEST_F(Settings, StatsOnAnUnconfiguredMachine) {
  // A user with nothing set up: no daemon, no cache directory, no config.
  ASSERT_EQ(mkdir(path("home").c_str(), 0700), 0);
  std::string env = "env -u LINKD_CACHE_DIR -u LINKD_CONFIG -u XDG_CACHE_HOME "
                    "-u XDG_CONFIG_HOME HOME=" +
                    path("home") + " ";
  RunResult r = run(env + binPath("linkd") + " stats");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_NE(r.out.find("link requests        0"), std::string::npos) << r.out;
  for (const char *absent : {"remote tiers", "farm", "archive requests",
                             "skipped_breaker_open", "not stored"})
    EXPECT_EQ(r.out.find(absent), std::string::npos) << absent << "\n" << r.out;
  r = run(env + binPath("linkd") + " stats --json");
  ASSERT_TRUE(exitedZero(r)) << describe(r);
  EXPECT_NE(r.out.find("\"requests\": 0"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(path("home")))
      << "linkd stats created files under HOME";
  EXPECT_FALSE(daemonStatus().has_value());

  // With a daemon: only the sections in use; --all shows every one; the
  // JSON keeps every counter either way.
  expectStockLink(link("", "hello"), "hello", "\x01");
  r = run(binPath("linkd") + " stats");
  ASSERT_TRUE(exitedZero(r));
  for (const char *absent : {"remote tiers", "farm", "archive requests"})
    EXPECT_EQ(r.out.find(absent), std::string::npos) << absent << "\n" << r.out;
  r = run(binPath("linkd") + " stats --all");
  ASSERT_TRUE(exitedZero(r));
  for (const char *present :
       {"remote tiers", "farm\n", "archive requests", "skipped breaker open"})
    EXPECT_NE(r.out.find(present), std::string::npos) << present << "\n"
                                                      << r.out;
  auto stats = cacheStats();
  EXPECT_EQ(stats.count("remote_skipped_breaker_open"), 1u);
  EXPECT_EQ(stats.count("archive_requests"), 1u);
}

TEST_F(Settings, CommandLineAnswersItself) {
  RunResult cache = run(binPath("linkd") + " cache");
  EXPECT_TRUE(exitedZero(cache)) << describe(cache);
  EXPECT_NE(cache.out.find("usage: linkd cache clear|trim"), std::string::npos)
      << describe(cache);
  for (const char *flag : {"-V", "--version", "version"}) {
    RunResult v = run(binPath("linkd") + " " + flag);
    EXPECT_TRUE(exitedZero(v)) << describe(v);
    EXPECT_EQ(v.out.rfind("linkd ", 0), 0u) << describe(v);
    EXPECT_NE(v.out.find("LLD 19"), std::string::npos) << describe(v);
  }

  RunResult typo = run("clang-19 --ld-path=" + binPath("ld.linkd") +
                       " -Wl,--linkd-nocache hello.o -o typo");
  EXPECT_EQ(typo.exitCode, 1) << describe(typo);
  EXPECT_NE(typo.err.find("linkd: error: unknown linkd option "
                          "--linkd-nocache; did you mean --linkd-no-cache?"),
            std::string::npos)
      << describe(typo);
  EXPECT_FALSE(exists("typo"));

  RunResult version = run(binPath("ld.linkd") + " --linkd-version");
  EXPECT_TRUE(exitedZero(version)) << describe(version);
  EXPECT_EQ(version.out.rfind("linkd ", 0), 0u) << version.out;
  EXPECT_NE(version.out.find(socketPath), std::string::npos) << version.out;
  RunResult help = run(binPath("ld.linkd") + " --linkd-help");
  EXPECT_TRUE(exitedZero(help));
  EXPECT_NE(help.out.find("--linkd-no-cache"), std::string::npos);
  // Asking is not linking: no daemon was started.
  EXPECT_FALSE(daemonStatus().has_value());
}

} // namespace
} // namespace linkd::e2e
