// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// LinkCache::store's "changed during the link" rule on the file clock: an
// input stamped in the tick the link began may have been rewritten after
// LLD read it, or written by the compiler a moment before the link. Only
// the bytes hashed before the link tell them apart.
#include "cache_fixtures.h"

#include "cache/access_log.h"
#include "cache/file_time.h"
#include "cache/link_cache.h"
#include "cache/link_key.h"
#include "cache/link_output.h"
#include "cache/stat_cache.h"
#include "store/local_store.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace linkd::unit {
namespace {

class LinkCacheStore : public ::testing::Test {
protected:
  void SetUp() override {
    std::string err;
    store = LocalStore::open({dir.path + "/store", 1ull << 30, 1}, &err);
    ASSERT_TRUE(store) << err;
    stats = StatCache::open("", &err);
    ASSERT_TRUE(stats) << err;
    cache = std::make_unique<LinkCache>(*store, *stats);
    input = dir.path + "/in.o";
  }

  // A link that read `input` and wrote nothing (an `-o /dev/null` probe).
  LinkAnalysis probe() const {
    LinkAnalysis link;
    link.resultMayBeEmpty = true;
    link.paths = PathMapper({{NameRole::Input, "1", "in.o", input, ""}});
    return link;
  }
  LinkCache::StoreOutcome storeAt(const LinkAnalysis &link, int64_t startNs) {
    AccessLog log;
    log.read.insert(input);
    return cache->store(link, log, {}, LinkOutput(), 1, 100, startNs);
  }
  int64_t changedNs() const {
    struct stat st{};
    EXPECT_EQ(::stat(input.c_str(), &st), 0);
    return std::max(nanos(st.st_mtim), nanos(st.st_ctim));
  }
  Digest digestOf(const std::string &path) {
    std::optional<FileState> f = stats->lookup(path);
    EXPECT_TRUE(f && f->exists);
    return f ? f->digest : Digest();
  }

  TempDir dir;
  std::unique_ptr<LocalStore> store;
  std::unique_ptr<StatCache> stats;
  std::unique_ptr<LinkCache> cache;
  std::string input;
};

TEST_F(LinkCacheStore, AnInputStampedInTheLinksTickNeedsItsBytesFromBefore) {
  writeFile(input, "the bytes LLD read");
  const int64_t tick = changedNs(); // the link began in the file's tick
  LinkAnalysis link = probe();
  LinkCache::StoreOutcome r = storeAt(link, tick);
  EXPECT_FALSE(r.stored);
  EXPECT_EQ(r.notStoredReason, "input changed during the link: " + input);

  // Rewritten after LLD read it: the bytes hashed before differ.
  writeFile(dir.path + "/before", "what it held before the link");
  link.digestsBeforeLink[input] = digestOf(dir.path + "/before");
  r = storeAt(link, tick);
  EXPECT_FALSE(r.stored);
  EXPECT_EQ(r.notStoredReason, "input changed during the link: " + input);

  // Written just before the link, hashed before it: the same bytes now.
  link.digestsBeforeLink[input] = digestOf(input);
  r = storeAt(link, tick);
  EXPECT_TRUE(r.stored) << r.notStoredReason;
  // Stamped after the link began: kept only with the same bytes too.
  r = storeAt(link, tick - 1);
  EXPECT_TRUE(r.stored) << r.notStoredReason;
  link.digestsBeforeLink.clear();
  EXPECT_FALSE(storeAt(link, tick - 1).stored);
  // Stamped in an earlier tick: unchanged since before the link.
  r = storeAt(link, tick + 1);
  EXPECT_TRUE(r.stored) << r.notStoredReason;
}

TEST_F(LinkCacheStore, AWholeSecondTimeIsOneAFileSystemRoundedDown) {
  // A time of whole seconds (FAT, some network file systems) may stand for
  // any instant of the next two seconds.
  const int64_t second = 1'700'000'000'000'000'000;
  EXPECT_TRUE(mayHaveChangedSince(second, second + 1'500'000'000));
  EXPECT_FALSE(mayHaveChangedSince(second, second + 2'000'000'001));
  EXPECT_FALSE(mayHaveChangedSince(second + 1, second + 2));
  EXPECT_TRUE(mayHaveChangedSince(second + 2, second + 2));
}

TEST_F(LinkCacheStore,
       OnlyInputsChangedInTheCurrentTickAreHashedBeforeTheLink) {
  // Written and looked at in one tick of the file clock (a compiler's
  // object, then the link): hashed before the link. Retried until both
  // fall in one tick. (A file whose times were read gets a fine-grained
  // time at its next change: at or after the tick's coarse time too.)
  LinkAnalysis link = probe();
  bool sameTick = false;
  for (int i = 0; i < 200 && !sameTick; ++i) {
    link.digestsBeforeLink.clear();
    writeFile(input, "object " + std::to_string(i));
    cache->hashRecentInputs(link);
    sameTick = mayHaveChangedSince(changedNs(), fileClockNowNs());
  }
  ASSERT_TRUE(sameTick);
  ASSERT_EQ(link.digestsBeforeLink.count(input), 1U);
  EXPECT_EQ(link.digestsBeforeLink[input], digestOf(input));

  // Written ticks ago: left to the store's time rule, not read.
  link.digestsBeforeLink.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  cache->hashRecentInputs(link);
  EXPECT_TRUE(link.digestsBeforeLink.empty());
}

TEST_F(LinkCacheStore, WhatTheLastLinkOfTheKeyReadIsHashedToo) {
  // A link keyed as given (a COFF or Mach-O link names no inputs), or a
  // library found by search: the last stored link of the key says what it
  // reads.
  LinkAnalysis link;
  link.resultMayBeEmpty = true;
  writeFile(input, "version 1");
  LinkCache::StoreOutcome r = storeAt(link, changedNs() + 1);
  ASSERT_TRUE(r.stored) << r.notStoredReason;
  bool sameTick = false;
  for (int i = 0; i < 200 && !sameTick; ++i) {
    link.digestsBeforeLink.clear();
    writeFile(input, "version " + std::to_string(i + 2));
    cache->hashRecentInputs(link);
    sameTick = mayHaveChangedSince(changedNs(), fileClockNowNs());
  }
  ASSERT_TRUE(sameTick);
  ASSERT_EQ(link.digestsBeforeLink.count(input), 1U);
  EXPECT_EQ(link.digestsBeforeLink[input], digestOf(input));
  // So its result is stored, though the file's time is the link's tick.
  r = storeAt(link, changedNs());
  EXPECT_TRUE(r.stored) << r.notStoredReason;
}

} // namespace
} // namespace linkd::unit
