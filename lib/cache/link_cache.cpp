#include "cache/link_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace linkd {
namespace {

constexpr const char *kManifestNs = "link-manifest";
constexpr int kMaxInputSets = 16;

bool sameIdentity(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
         a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec &&
         a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

// Stores an output whose identity must stay the one seen when the link
// exited, before and after it is read; the digest of what was read.
std::optional<Digest> storeStableFile(LocalStore &store,
                                      const OutputSnapshot &snap) {
  int fd = open(snap.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  struct stat st;
  Digest d;
  bool ok = fstat(fd, &st) == 0 && sameIdentity(st, snap.st) &&
            store.putBlobFromFile(fd, static_cast<uint64_t>(st.st_size), &d) &&
            fstat(fd, &st) == 0 && sameIdentity(st, snap.st);
  close(fd);
  if (!ok)
    return std::nullopt;
  return d;
}

int64_t nowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

std::vector<OutputSnapshot> snapshotOutputs(const AccessLog &log) {
  std::vector<OutputSnapshot> out;
  for (const std::string &p : log.outputs) {
    OutputSnapshot s;
    s.path = p;
    if (stat(p.c_str(), &s.st) == 0 && S_ISREG(s.st.st_mode))
      out.push_back(s);
    else
      out.push_back(OutputSnapshot{p, {}}); // vanished: store() refuses
  }
  return out;
}

bool LinkCache::inputsMatch(const cache::v1::InputSet &set,
                            const PathMapper &paths, std::string *why) {
  auto fail = [&](const std::string &msg) {
    if (why)
      *why = msg;
    return false;
  };
  for (const std::string &stored : set.missing()) {
    std::string p = paths.toLocal(stored);
    auto st = stats.lookup(p);
    if (!st || st->exists)
      return fail("probed path now exists: " + p);
  }
  for (const std::string &stored : set.existing()) {
    std::string p = paths.toLocal(stored);
    struct stat st;
    if (::stat(p.c_str(), &st) != 0)
      return fail("path no longer exists: " + p);
  }
  for (const auto &f : set.files()) {
    std::string p = paths.toLocal(f.path());
    auto st = stats.lookup(p);
    if (!st || !st->exists)
      return fail("input missing: " + p);
    if (st->isDirectory != f.is_directory())
      return fail("input changed type: " + p);
    if (!f.is_directory() && st->digest.raw() != f.digest())
      return fail("input changed: " + p);
  }
  return true;
}

std::optional<cache::v1::LinkResult>
LinkCache::lookup(const LinkAnalysis &link, std::string *why) {
  std::string value;
  Lookup l = blobs.getAction(kManifestNs, link.key, value);
  cache::v1::Manifest manifest;
  if (l != Lookup::Hit || !manifest.ParseFromString(value)) {
    if (why)
      *why = l == Lookup::Corrupt ? "manifest corrupt" : "no manifest for key";
    return std::nullopt;
  }
  std::string firstWhy;
  for (const auto &set : manifest.sets()) {
    std::string setWhy;
    if (!inputsMatch(set, link.paths, &setWhy)) {
      if (firstWhy.empty())
        firstWhy = setWhy;
      continue;
    }
    auto d = Digest::fromRaw(set.result_key());
    std::string blob;
    cache::v1::LinkResult result;
    if (d && blobs.getBlob(*d, blob) == Lookup::Hit &&
        result.ParseFromString(blob))
      return result;
    if (firstWhy.empty())
      firstWhy = "result missing or corrupt";
  }
  if (why)
    *why = firstWhy.empty() ? "manifest has no input sets" : firstWhy;
  return std::nullopt;
}

bool LinkCache::materialize(const cache::v1::LinkResult &result,
                            const LinkAnalysis &link, std::string *error) {
  for (const auto &out : result.outputs()) {
    auto d = Digest::fromRaw(out.digest());
    if (!d) {
      if (error)
        *error = "bad output digest";
      return false;
    }
    std::string path = link.paths.toLocal(out.path());
    Lookup l = blobs.materializeBlob(*d, path, static_cast<mode_t>(out.mode()),
                                     error);
    if (l != Lookup::Hit) {
      if (error && error->empty())
        *error = "output blob for " + path +
                 (l == Lookup::Corrupt ? " was corrupt" : " is missing");
      return false;
    }
  }
  return true;
}

LinkCache::StoreOutcome
LinkCache::store(const LinkAnalysis &link, const AccessLog &log,
                 const std::vector<OutputSnapshot> &outputs,
                 const std::string &stdoutData, const std::string &stderrData,
                 int exitCode, uint64_t linkMicros, int64_t linkStartNs) {
  StoreOutcome outcome;
  auto refuse = [&](std::string why) {
    outcome.notStoredReason = std::move(why);
    return outcome;
  };
  if (outputs.empty())
    return refuse("the link wrote no output");

  cache::v1::InputSet set;
  for (const std::string &p : log.read) {
    if (link.responseFiles.count(p))
      continue; // covered by the key, by content
    auto st = stats.lookup(p);
    if (!st || !st->exists)
      return refuse("cannot read input " + p);
    if (!st->isDirectory && st->changedNs >= linkStartNs)
      return refuse("input changed during the link: " + p);
    auto *f = set.add_files();
    f->set_path(link.paths.toStored(p));
    f->set_is_directory(st->isDirectory);
    if (!st->isDirectory) {
      f->set_digest(std::string(st->digest.raw()));
      f->set_size(st->size);
    }
  }
  for (const std::string &p : log.existing)
    set.add_existing(link.paths.toStored(p));
  for (const std::string &p : log.missing)
    set.add_missing(link.paths.toStored(p));

  cache::v1::LinkResult result;
  for (const OutputSnapshot &snap : outputs) {
    std::optional<Digest> d;
    if (S_ISREG(snap.st.st_mode))
      d = storeStableFile(blobs, snap);
    if (!d)
      return refuse("output changed, vanished or could not be stored: " +
                    snap.path);
    uint64_t size = static_cast<uint64_t>(snap.st.st_size);
    outcome.bytesWritten += size;
    auto *o = result.add_outputs();
    o->set_path(link.paths.toStored(snap.path));
    o->set_digest(std::string(d->raw()));
    o->set_size(size);
    o->set_mode(snap.st.st_mode & 07777);
  }
  result.set_stdout_data(link.paths.toStored(stdoutData));
  result.set_stderr_data(link.paths.toStored(stderrData));
  result.set_exit_code(exitCode);
  result.set_link_micros(linkMicros);
  Digest resultDigest;
  if (!blobs.putBlob(result.SerializeAsString(), &resultDigest))
    return refuse("cannot write to the store");
  set.set_result_key(std::string(resultDigest.raw()));
  set.set_created_unix(nowUnix());

  // Newest set first; drop older sets with the same inputs and the oldest
  // beyond the limit.
  cache::v1::Manifest old, fresh;
  std::string value;
  if (blobs.getAction(kManifestNs, link.key, value) == Lookup::Hit)
    old.ParseFromString(value);
  *fresh.add_sets() = set;
  for (const auto &s : old.sets()) {
    if (fresh.sets_size() >= kMaxInputSets)
      break;
    cache::v1::InputSet a = s, b = set;
    a.clear_result_key();
    a.clear_created_unix();
    b.clear_result_key();
    b.clear_created_unix();
    if (a.SerializeAsString() != b.SerializeAsString())
      *fresh.add_sets() = s;
  }
  if (!blobs.putAction(kManifestNs, link.key, fresh.SerializeAsString()))
    return refuse("cannot write to the store");
  outcome.stored = true;
  return outcome;
}

} // namespace linkd
