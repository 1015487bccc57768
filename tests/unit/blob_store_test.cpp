// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A farm node's blob store against an uploader that lies:
// chunks that overlap what was already written, a digest that does not
// match the bytes, a second upload of a blob already in place. The
// invariant: a stored blob always hashes to its name. And against one that
// stalls (item 4): another tenant never waits for it nor writes its file,
// and a link of the same tenant waits only while it progresses.
#include "daemon/linkd/blobs/blob_store.h"
#include "tests/fuzz/upload_sequence.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace linkd {
namespace {

class BlobStoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/linkd-farm-blobs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root = tmpl;
    store.emplace(root + "/store", 64 << 20);
    ASSERT_EQ(store->open(), "");
  }
  void TearDown() override { std::filesystem::remove_all(root); }
  std::string stored(const Digest &d) {
    std::ifstream in(store->pathOf(d), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string root;
  std::optional<BlobStore> store;
  upload_sequence::Contents contents = upload_sequence::makeContents();
};

// The reproducer of the issue: chunk 1 at offset 0 with bytes [0,235) of a
// libc.so script, chunk 2 at offset 189 with bytes [235,end): the bytes as
// streamed hash to the script's digest, the file would not.
TEST_F(BlobStoreTest, AChunkThatOverlapsWrittenBytesIsRefused) {
  const std::string &script = contents.blobs[0];
  const Digest &d = contents.digests[0];
  ASSERT_GT(script.size(), 235u);
  ASSERT_EQ(store->beginUpload(d, "mallory", 1), 0u);
  ASSERT_TRUE(store->append(d, 1, 0, script.substr(0, 235)));
  EXPECT_FALSE(store->append(d, 1, 189, script.substr(235)));
  EXPECT_FALSE(store->append(d, 1, 300, script.substr(235))); // a gap
  // Continuing at the end, or starting over at 0, are the two ways on.
  ASSERT_TRUE(store->append(d, 1, 235, script.substr(235)));
  std::string e;
  ASSERT_TRUE(store->commit(d, 1, &e, sha256(script))) << e;
  EXPECT_EQ(stored(d), script);
}

TEST_F(BlobStoreTest, ABlobInPlaceIsNeverReplaced) {
  const std::string &script = contents.blobs[0];
  const Digest &d = contents.digests[0];
  std::string e;
  ASSERT_EQ(store->beginUpload(d, "alice", 1), 0u);
  ASSERT_TRUE(store->append(d, 1, 0, script));
  ASSERT_TRUE(store->commit(d, 1, &e, sha256(script))) << e;
  // A second uploader whose bytes are other but whose claimed digest is
  // the blob's (the node hashed something else than the file holds).
  std::string other = script;
  other[10] ^= 1;
  ASSERT_EQ(store->beginUpload(d, "mallory", 2), 0u);
  ASSERT_TRUE(store->append(d, 2, 0, other));
  EXPECT_TRUE(store->commit(d, 2, &e, d)) << e; // dropped: one is in place
  EXPECT_EQ(stored(d), script);
  EXPECT_TRUE(std::filesystem::is_empty(root + "/store/partial"));
  // The kernel path's whole stores too.
  EXPECT_EQ(store->storeWhole(d, other), "");
  EXPECT_EQ(stored(d), script);
}

TEST_F(BlobStoreTest, ContentThatDoesNotHashToItsNameIsNeverStored) {
  const Digest &d = contents.digests[1];
  std::string wrong = contents.blobs[1];
  wrong.back() ^= 1;
  ASSERT_EQ(store->beginUpload(d, "mallory", 1), 0u);
  ASSERT_TRUE(store->append(d, 1, 0, wrong));
  std::string e;
  EXPECT_FALSE(store->commit(d, 1, &e)); // the file is hashed
  EXPECT_NE(e.find("does not match"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(store->pathOf(d)));
}

// Mallory begins an upload and trickles; bob, another
// tenant, neither waits for it nor meets its bytes.
TEST_F(BlobStoreTest, AnotherTenantsUploadNeitherBlocksNorSpoilsOne) {
  const std::string &script = contents.blobs[0];
  const Digest &d = contents.digests[0];
  ASSERT_EQ(store->beginUpload(d, "mallory", 1), 0u);
  ASSERT_TRUE(store->append(d, 1, 0, script.substr(0, 100)));
  ASSERT_EQ(store->beginUpload(d, "bob", 2), 0u); // its own file, from 0
  ASSERT_TRUE(store->append(d, 2, 0, script));
  std::string e;
  bool published = false;
  ASSERT_TRUE(store->commit(d, 2, &e, sha256(script), [&] {
    published = true;
  })) << e;
  EXPECT_TRUE(published);
  EXPECT_EQ(stored(d), script);
  // mallory's upload goes on in its own file, and is dropped at its end.
  EXPECT_EQ(store->partialSize(d, 1), 100u);
  ASSERT_TRUE(store->append(d, 1, 100, "XXXX"));
  EXPECT_FALSE(store->commit(d, 1, &e));
  EXPECT_EQ(stored(d), script);
}

// Two links of one tenant: the second waits while the first progresses,
// and uploads alongside when asked to; a trickle is no progress.
TEST_F(BlobStoreTest, ALinkOfTheSameTenantWaitsOnlyForProgress) {
  const Digest &d = contents.digests[1];
  const std::string &blob = contents.blobs[1];
  ASSERT_EQ(store->beginUpload(d, "alice", 1), 0u);
  EXPECT_EQ(store->beginUpload(d, "alice", 2), std::nullopt);
  EXPECT_EQ(store->uploadProgress(d, "bob"), std::nullopt);
  auto began = store->uploadProgress(d, "alice");
  ASSERT_TRUE(began);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(store->append(d, 1, 0, blob.substr(0, 1)));
  EXPECT_EQ(store->uploadProgress(d, "alice"), began); // a byte is none
  std::string quarter(BlobStore::kProgressBytes, 'q');
  ASSERT_TRUE(store->append(d, 1, 1, quarter));
  EXPECT_GT(*store->uploadProgress(d, "alice"), *began);
  // Link 2 stops waiting: a file of its own, its bytes its own.
  ASSERT_EQ(store->beginUpload(d, "alice", 2, true), 0u);
  ASSERT_TRUE(store->append(d, 2, 0, blob));
  std::string e;
  ASSERT_TRUE(store->commit(d, 2, &e, sha256(blob))) << e;
  EXPECT_EQ(stored(d), blob);
  EXPECT_EQ(store->partialSize(d, 1), 1 + quarter.size());
  store->releaseUploads(1);
}

// A broken upload resumes in the same tenant's next link, not another's;
// a new process starts without partial files.
TEST_F(BlobStoreTest, ABrokenUploadResumesForItsTenantOnly) {
  const Digest &d = contents.digests[1];
  const std::string &blob = contents.blobs[1];
  ASSERT_EQ(store->beginUpload(d, "alice", 1), 0u);
  ASSERT_TRUE(store->append(d, 1, 0, blob.substr(0, 1000)));
  store->releaseUploads(1);
  EXPECT_EQ(store->uploadProgress(d, "alice"), std::nullopt);
  EXPECT_EQ(store->beginUpload(d, "bob", 2), 0u);
  EXPECT_EQ(store->beginUpload(d, "alice", 3), 1000u);
  ASSERT_TRUE(store->append(d, 3, 1000, blob.substr(1000)));
  std::string e;
  ASSERT_TRUE(store->commit(d, 3, &e)) << e; // hashed from the file
  EXPECT_EQ(stored(d), blob);
  ASSERT_TRUE(store->append(d, 2, 0, blob.substr(0, 10)));
  store->releaseUploads(2);
  BlobStore again(root + "/store", 64 << 20);
  ASSERT_EQ(again.open(), "");
  EXPECT_TRUE(std::filesystem::is_empty(root + "/store/partial"));
}

// A partial file that cannot be made (here: its directory gone) fails the
// upload at its first chunk, instead of reading as another link's upload
// to wait for.
TEST_F(BlobStoreTest, AnUploadWhoseFileCannotBeMadeFailsAtOnce) {
  const Digest &d = contents.digests[1];
  std::filesystem::remove_all(root + "/store/partial");
  EXPECT_EQ(store->beginUpload(d, "alice", 1), 0u);
  EXPECT_FALSE(store->append(d, 1, 0, contents.blobs[1]));
  store->releaseUploads(1);
  std::filesystem::create_directory(root + "/store/partial");
}

// Random upload sequences (tests/fuzz/upload_sequence.h; the libFuzzer
// target upload_fuzzer searches further): 200 of them, each from a store
// without the sequence's blobs, partial uploads or claims, every step
// checked.
TEST_F(BlobStoreTest, RandomUploadSequencesKeepTheInvariant) {
  std::mt19937 rng(35);
  for (int sequence = 0; sequence < 200; ++sequence) {
    for (const Digest &d : contents.digests)
      std::filesystem::remove(store->pathOf(d));
    std::filesystem::remove_all(root + "/store/partial");
    std::filesystem::create_directory(root + "/store/partial");
    for (uint64_t owner = 1; owner <= 3; ++owner)
      store->releaseUploads(owner);
    std::string in(64 + rng() % 512, '\0');
    for (char &c : in)
      c = static_cast<char>(rng());
    ASSERT_EQ(upload_sequence::run(*store, contents, in), "")
        << "sequence " << sequence;
  }
}

} // namespace
} // namespace linkd
