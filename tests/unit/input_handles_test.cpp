// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// How a lookup sees its inputs: the stat cache and the held and watched
// descriptors of input directories.
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

TEST(StatCache, RehashesOnlyWhenTheIdentityChanges) {
  TempDir t;
  std::string err;
  auto cache = StatCache::open(t.path + "/sc.sqlite", &err, /*racyNanos=*/0);
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
  ASSERT_EQ(usleep(1'100'000), 0);   // the directory's times age past 1 s
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
      {"truncate",
       [](const std::string &p) { ASSERT_EQ(truncate(p.c_str(), 1), 0); }},
      {"chmod",
       [](const std::string &p) { ASSERT_EQ(chmod(p.c_str(), 0600), 0); }},
      {"utimensat",
       [](const std::string &p) {
         ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), nullptr, 0), 0);
       }},
      {"fallocate",
       [](const std::string &p) {
         int fd = open(p.c_str(), O_WRONLY | O_CLOEXEC);
         ASSERT_EQ(fallocate(fd, 0, 0, 8192), 0);
         close(fd);
       }},
      {"copy_file_range into it",
       [&](const std::string &p) {
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

} // namespace
