// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The local store, remote tier URLs and envelopes, the digest thread,
// settings and the stats text.
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
  auto store = LocalStore::open({t.path, uint64_t{64} * 1024, 1}, &err);
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
  // An unsigned entry answers only the key it was written for.
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
  for (const char *present :
       {"archive requests", "remote tiers\n", "  skipped breaker open",
        "farm\n", "  offloaded"})
    EXPECT_NE(all.find(present), std::string::npos) << present << "\n" << all;
  // The JSON keeps its shape: the same counters, no reasons added.
  EXPECT_EQ(stats.json(usage, 1 << 30).find("input changed"),
            std::string::npos);
}

TEST(ConfigSettings, EveryKeyListedWithItsSource) {
  Config c;
  EXPECT_EQ(listSettings(c).size(), 41u);
  auto verify = settingFromVariable("LINKD_INCREMENTAL_VERIFY", "1");
  ASSERT_TRUE(verify.has_value());
  EXPECT_EQ(verify->key, "incremental_verify");
  EXPECT_EQ(verify->value, "true");
  // incremental_slack: none, P%, B or P%+B, as written back.
  for (auto [given, shown] : {std::pair{"25%+64", "25%+64"},
                              {"none", "none"},
                              {"0", "none"},
                              {"10%", "10%"},
                              {"128", "128"},
                              {"0%+64", "64"}}) {
    auto slack = settingFromVariable("LINKD_INCREMENTAL_SLACK", given);
    ASSERT_TRUE(slack.has_value()) << given;
    EXPECT_EQ(slack->key, "incremental_slack");
    EXPECT_EQ(slack->value, shown) << given;
  }
  for (const char *bad :
       {"%", "25%+", "25%64", "2000%", "-5%", "25%+2000000", "lots"})
    EXPECT_FALSE(settingFromVariable("LINKD_INCREMENTAL_SLACK", bad)) << bad;
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
