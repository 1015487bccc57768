// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Programs linked against Debian's real static archives (zlib, SQLite,
// googletest): many archive members, lazy extraction, COMDAT-heavy C++ from
// another compiler. Each link is compared byte for byte with stock ld.lld
// and the program's own checks are run.
#include "harness.h"

#include <unistd.h>

namespace linkd::e2e {
namespace {

const std::string kMultiarch = "/usr/lib/x86_64-linux-gnu";

class SystemArchives : public E2eTest {};

TEST_F(SystemArchives, ZlibExample) {
  ASSERT_TRUE(haveFile(kMultiarch + "/libz.a", "zlib1g-dev"));
  // Debian ships the example plain or gzipped depending on the release.
  const std::string examples = "/usr/share/doc/zlib1g-dev/examples/";
  std::string fetch;
  if (access((examples + "example.c").c_str(), R_OK) == 0)
    fetch = "cp " + examples + "example.c example.c";
  else if (access((examples + "example.c.gz").c_str(), R_OK) == 0)
    fetch = "gzip -dc " + examples + "example.c.gz > example.c";
  else
    FAIL() << "zlib's example.c is missing from " << examples
           << "; install the Debian package 'zlib1g-dev'";
  ASSERT_TRUE(exitedZero(run(fetch)));
  ASSERT_TRUE(exitedZero(run("clang-19 -O1 -w -c example.c")));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --ld-path={ld} example.o " + kMultiarch +
                           "/libz.a -o example",
                       {"example"}));
  RunResult needed = run(tools::readelf.path + " -d example");
  ASSERT_TRUE(exitedZero(needed));
  EXPECT_EQ(needed.out.find("libz.so"), std::string::npos)
      << "zlib should have come from libz.a\n"
      << needed.out;
  RunResult r = run("./example");
  ASSERT_TRUE(exitedZero(r));
  for (const char *line :
       {"uncompress(): hello, hello!\n", "gzread(): hello, hello!\n",
        "inflate(): hello, hello!\n", "large_inflate(): OK\n",
        "after inflateSync(): hello, hello!\n",
        "inflate with dictionary: hello, hello!\n"})
    EXPECT_NE(r.out.find(line), std::string::npos)
        << "missing line: " << line << "output:\n"
        << r.out;
}

TEST_F(SystemArchives, SqliteQuery) {
  ASSERT_TRUE(haveFile(kMultiarch + "/libsqlite3.a", "libsqlite3-dev"));
  writeFile("query.c", R"sql(#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
static int print_row(void *unused, int n, char **values, char **names) {
  for (int i = 0; i < n; ++i)
    printf("%s%s=%s", i ? " " : "", names[i], values[i] ? values[i] : "NULL");
  printf("\n");
  return 0;
}
int main(void) {
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK)
    return 1;
  const char *sql =
      "CREATE TABLE t(x INTEGER, parity TEXT);"
      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100)"
      "  INSERT INTO t SELECT i, CASE i % 2 WHEN 0 THEN 'even' ELSE 'odd' END FROM c;"
      "SELECT parity, count(*) AS n, sum(x) AS total FROM t GROUP BY parity ORDER BY parity;"
      "SELECT printf('%.3f', avg(x)) AS mean FROM t;";
  if (sqlite3_exec(db, sql, print_row, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "sqlite: %s\n", err);
    return 1;
  }
  printf("major=%.1s\n", sqlite3_libversion());
  sqlite3_close(db);
  return 0;
}
)sql");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -c query.c")));
  // --print-map: a large stdout (the whole archive's layout) must reach the
  // client intact, as it comes from stock ld.lld.
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang-19 --ld-path={ld} query.o -l:libsqlite3.a -lm "
                       "-Wl,--print-map -o query",
                       {"query"}));
  RunResult needed = run(tools::readelf.path + " -d query");
  ASSERT_TRUE(exitedZero(needed));
  EXPECT_EQ(needed.out.find("libsqlite3.so"), std::string::npos) << needed.out;
  RunResult r = run("./query");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "parity=even n=50 total=2550\n"
                   "parity=odd n=50 total=2500\n"
                   "mean=50.500\n"
                   "major=3\n");
}

TEST_F(SystemArchives, GoogletestSamples) {
  const std::string samples = "/usr/src/googletest/googletest/samples";
  ASSERT_TRUE(haveFile(samples + "/sample1_unittest.cc", "googletest"));
  ASSERT_TRUE(haveFile(kMultiarch + "/libgtest.a", "libgtest-dev"));
  ASSERT_TRUE(haveFile(kMultiarch + "/libgtest_main.a", "libgtest-dev"));
  // Samples 1-8 use gtest_main (9 and 10 bring their own main). Two
  // compilers at a time: the machine has two cores.
  RunResult compiled = run(
      "for f in sample1 sample2 sample4 sample1_unittest sample2_unittest "
      "sample3_unittest sample4_unittest sample5_unittest sample6_unittest "
      "sample7_unittest sample8_unittest; do echo " +
          samples + "/$f.cc; done | xargs -P2 -n1 clang++-19 -std=c++17 -O0 -c",
      300s);
  ASSERT_TRUE(exitedZero(compiled));
  ASSERT_TRUE(linkBoth(elfLinkers(),
                       "clang++-19 --ld-path={ld} sample1.o sample2.o "
                       "sample4.o sample1_unittest.o sample2_unittest.o "
                       "sample3_unittest.o sample4_unittest.o "
                       "sample5_unittest.o sample6_unittest.o "
                       "sample7_unittest.o sample8_unittest.o "
                       "-lgtest_main -lgtest -pthread -o samples",
                       {"samples"}));
  RunResult r = run("./samples --gtest_color=no");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_NE(r.out.find("[  PASSED  ] "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
  // Every suite the samples define ran.
  for (const char *suite :
       {"FactorialTest", "MyString", "QueueTestSmpl3", "Counter",
        "IntegerFunctionTest", "OnTheFlyAndPreCalculated/PrimeTableTest2",
        "MeaningfulTestParameters/PrimeTableTest"})
    EXPECT_NE(r.out.find(suite), std::string::npos)
        << "suite " << suite << " did not run\n"
        << r.out;
}

} // namespace
} // namespace linkd::e2e
