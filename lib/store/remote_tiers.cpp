// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "store/remote_tiers.h"

#include "store/local_store.h"
#include "util/files.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

// Envelope: "LKA2", flags (bit 0: signed), [32-byte HMAC], the 32-byte
// action key the entry answers, payload. The key inside is what binds an
// unsigned entry to its key: a reader without the fleet key checks it on
// every read, so an entry copied over another key's (a keyless
// reader wrote the other link's bytes) is rejected like a bad signature.
// The HMAC covers the key too. "LKA1" entries (no key inside) are
// accepted only signed and by a keyed reader.
constexpr std::string_view kMagic = "LKA2";
constexpr std::string_view kMagicV1 = "LKA1";
constexpr size_t kMacSize = 32;
constexpr size_t kKeySize = 32;

std::string mac(const std::string &key, const Digest &actionKey,
                std::string_view payload) {
  std::string material = "linkd-action-v1";
  material += actionKey.raw();
  material += payload;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char *>(material.data()),
       material.size(), out, &len);
  return std::string(reinterpret_cast<char *>(out), len);
}

} // namespace

std::map<std::string, uint64_t> RemoteCounters::snapshot() const {
  return {{"remote_hits", hits},
          {"remote_misses", misses},
          {"remote_errors", errors},
          {"remote_timeouts", timeouts},
          {"remote_bytes_read", bytesRead},
          {"remote_bytes_written", bytesWritten},
          {"remote_writes", writes},
          {"remote_writes_dropped", writesDropped},
          {"remote_rejected", rejected},
          {"remote_corrupt", corrupt},
          {"remote_breaker_trips", breakerTrips},
          {"remote_skipped_breaker_open", skippedOpen},
          {"remote_backfills", backfills},
          {"remote_refills", refills},
          {"remote_healed", healed}};
}

void RemoteCounters::zero() {
  for (auto *c : {&hits, &misses, &errors, &timeouts, &bytesRead, &bytesWritten,
                  &writes, &writesDropped, &rejected, &corrupt, &breakerTrips,
                  &skippedOpen, &backfills, &refills, &healed})
    c->store(0);
}

std::unique_ptr<RemoteTiers> RemoteTiers::create(RemoteOptions options,
                                                 std::string *error) {
  std::unique_ptr<RemoteTiers> r(new RemoteTiers(std::move(options)));
  for (const RemoteTierConfig &c : r->opts.tiers) {
    auto t = std::make_unique<Tier>();
    t->cfg = c;
    std::string why;
    if (c.scheme.starts_with("grpc"))
      t->backend =
          r->opts.makeGrpcBackend ? r->opts.makeGrpcBackend(c, &why) : nullptr;
    else
      t->backend = c.scheme.starts_with("redis") ? makeRedisBackend(c)
                                                 : makeHttpBackend(c);
    if (!t->backend) {
      *error = "cannot set up remote " + c.displayName() +
               (why.empty() ? "" : ": " + why);
      return nullptr;
    }
    r->tiers.push_back(std::move(t));
  }
  r->writer = std::thread([p = r.get()] { p->writerLoop(); });
  return r;
}

RemoteTiers::~RemoteTiers() {
  {
    std::lock_guard lock(qmu);
    stopping = true;
  }
  qcv.notify_all();
  if (writer.joinable())
    writer.join();
}

bool RemoteTiers::canRead() const {
  for (const auto &t : tiers)
    if (t->cfg.mode != TierMode::WriteOnly)
      return true;
  return false;
}

bool RemoteTiers::canWrite() const {
  for (const auto &t : tiers)
    if (t->cfg.mode != TierMode::ReadOnly)
      return true;
  return false;
}

std::vector<std::pair<std::string, bool>> RemoteTiers::breakers() {
  std::vector<std::pair<std::string, bool>> out;
  for (auto &t : tiers) {
    std::lock_guard lock(t->mu);
    out.emplace_back(t->cfg.displayName(), t->openUntil != Clock::time_point{});
  }
  return out;
}

std::vector<RemoteTiers::TierCounts> RemoteTiers::tierCounts() {
  std::vector<TierCounts> out;
  out.reserve(tiers.size());
  for (auto &t : tiers)
    out.push_back({t->cfg.displayName(),
                   {{"hit", t->hits},
                    {"miss", t->misses},
                    {"stored", t->stores},
                    {"error", t->errors},
                    {"timeout", t->timeouts},
                    {"corrupt", t->corrupt},
                    {"rejected", t->rejected},
                    {"skipped_breaker_open", t->skipped}}});
  return out;
}

bool RemoteTiers::admit(Tier &t) {
  std::lock_guard lock(t.mu);
  if (t.openUntil == Clock::time_point{})
    return true;
  if (Clock::now() < t.openUntil || t.probing) {
    ++stats.skippedOpen;
    ++t.skipped;
    return false;
  }
  t.probing = true; // half-open: one request finds out
  return true;
}

namespace {

// One tier's part of why a lookup found nothing, for miss reasons.
void because(std::string *why, const RemoteTierConfig &cfg,
             std::string_view what) {
  if (!why)
    return;
  if (!why->empty())
    *why += ", ";
  *why += cfg.displayName();
  *why += ": ";
  *why += what;
}

std::string_view outcome(RemoteStatus st) {
  switch (st) {
  case RemoteStatus::Miss:
    return "miss";
  case RemoteStatus::Timeout:
    return "timed out";
  case RemoteStatus::Error:
    return "failed";
  default:
    return "no answer";
  }
}

} // namespace

void RemoteTiers::tell(Tier &t, const std::string &kind,
                       const std::string &what) {
  if (!opts.warn)
    return;
  std::string more;
  {
    std::lock_guard lock(t.mu);
    Tier::Told &told = t.told[kind];
    Clock::time_point now = Clock::now();
    if (told.at != Clock::time_point{} &&
        now - told.at < std::chrono::minutes(1)) {
      ++told.unsaid;
      return;
    }
    if (told.unsaid)
      more = " (and " + std::to_string(told.unsaid) +
             " more like it in the last minute)";
    told = {now, 0};
  }
  opts.warn("remote tier " + t.cfg.displayName() + ": " + what + more);
}

void RemoteTiers::record(Tier &t, RemoteStatus st) {
  bool failed = st == RemoteStatus::Error || st == RemoteStatus::Timeout;
  bool tripped = false;
  {
    std::lock_guard lock(t.mu);
    if (st == RemoteStatus::Error)
      ++stats.errors;
    if (st == RemoteStatus::Timeout)
      ++stats.timeouts;
    switch (st) {
    case RemoteStatus::Hit:
      ++t.hits; // verified by the caller: a corrupt one counts there too
      break;
    case RemoteStatus::Miss:
      ++t.misses;
      break;
    case RemoteStatus::Stored:
      ++t.stores;
      break;
    case RemoteStatus::Error:
      ++t.errors;
      break;
    case RemoteStatus::Timeout:
      ++t.timeouts;
      break;
    }
    bool wasProbing = t.probing;
    t.probing = false;
    if (!failed) {
      t.consecutiveErrors = 0;
      t.openUntil = {};
      return;
    }
    ++t.consecutiveErrors;
    if (st == RemoteStatus::Timeout || t.consecutiveErrors >= 3 || wasProbing) {
      if (t.openUntil == Clock::time_point{} || wasProbing) {
        ++stats.breakerTrips;
        tripped = true;
      }
      t.openUntil = Clock::now() + opts.breakerCooldown;
    }
  }
  std::string said = t.backend->lastError();
  tell(t, st == RemoteStatus::Timeout ? "timeout" : "error",
       std::string(st == RemoteStatus::Timeout ? "timed out" : "failed") +
           (said.empty() ? "" : ": " + said));
  if (tripped)
    tell(t, "breaker",
         "circuit breaker open: skipped for " +
             std::to_string(opts.breakerCooldown.count()) +
             " s, then one request tries it (" +
             (st == RemoteStatus::Timeout ? "a timeout" : "3 errors in a row") +
             ")");
}

void RemoteTiers::noteCorrupt(Tier &t, const Digest &d) {
  ++stats.corrupt;
  ++t.corrupt;
  tell(t, "corrupt",
       "blob " + d.hex() +
           " does not hash to its name: dropped; this worker's next writes "
           "replace it");
  t.replaceUntilNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         (Clock::now() + kSuspectFor).time_since_epoch())
                         .count();
  std::lock_guard lock(corruptMu);
  if (corruptSeen.size() >= kMaxCorrupt)
    corruptSeen.erase(corruptSeen.begin());
  corruptSeen.emplace(&t, d);
}

bool RemoteTiers::seenCorrupt(Tier &t, const Digest &d) {
  std::lock_guard lock(corruptMu);
  return corruptSeen.count({&t, d}) > 0;
}

void RemoteTiers::refill(const std::vector<Tier *> &missed, const Digest &key,
                         std::string bytes, bool isAction) {
  std::vector<Tier *> to;
  for (Tier *t : missed)
    if (t->cfg.mode != TierMode::ReadOnly)
      to.push_back(t);
  if (to.empty() || !canWrite())
    return;
  uint64_t size = bytes.size();
  enqueue(size, [this, to, key, isAction, bytes = std::move(bytes)] {
    for (Tier *t : to) {
      if (!admit(*t))
        continue;
      RemoteStatus st = isAction ? t->backend->putAction(key, bytes)
                                 : t->backend->putBlob(key, bytes);
      record(*t, st);
      if (st == RemoteStatus::Stored) {
        ++stats.writes;
        ++stats.refills;
        stats.bytesWritten += bytes.size();
      }
    }
  });
}

std::optional<std::string> RemoteTiers::getBlob(const Digest &d,
                                                uint64_t size) {
  std::vector<Tier *> missed;
  for (auto &t : tiers) {
    if (t->cfg.mode == TierMode::WriteOnly || !admit(*t))
      continue;
    std::string data;
    RemoteStatus st = t->backend->getBlob(d, size, data);
    record(*t, st);
    if (st == RemoteStatus::Miss) {
      ++stats.misses;
      missed.push_back(t.get());
    }
    if (st != RemoteStatus::Hit)
      continue;
    stats.bytesRead += data.size();
    if (sha256(data) != d) {
      noteCorrupt(*t, d);
      missed.push_back(t.get());
      continue;
    }
    ++stats.hits;
    refill(missed, d, data, /*isAction=*/false);
    return data;
  }
  return std::nullopt;
}

namespace {

// Hashes a file while another thread appends to it: the hasher reads back
// (pread, from the page cache) what has been written so far, so receiving
// and writing never wait for hashing and no chunk is copied twice.
class TrailingHasher {
public:
  explicit TrailingHasher(int fd) : fd(fd), worker([this] { run(); }) {}
  ~TrailingHasher() { finish(); }
  void wrote(uint64_t bytes) {
    {
      std::lock_guard lock(mu);
      written += bytes;
    }
    cv.notify_one();
  }
  // Stops after hashing everything written; false if a read failed.
  std::optional<Digest> finish() {
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_one();
    if (worker.joinable())
      worker.join();
    return failed ? std::nullopt : std::optional<Digest>(digest);
  }

private:
  void run() {
    std::string buf(1 << 20, '\0');
    uint64_t hashed = 0;
    for (;;) {
      uint64_t avail;
      bool last;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return done || written > hashed; });
        avail = written;
        last = done;
      }
      while (hashed < avail) {
        ssize_t n = pread(fd, buf.data(),
                          std::min<uint64_t>(buf.size(), avail - hashed),
                          static_cast<off_t>(hashed));
        if (n <= 0) {
          failed = true;
          return;
        }
        hash.update({buf.data(), static_cast<size_t>(n)});
        hashed += static_cast<uint64_t>(n);
      }
      if (last) {
        digest = hash.finish();
        return;
      }
    }
  }
  int fd;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t written = 0;
  bool done = false;
  bool failed = false;
  Sha256 hash;
  Digest digest;
  std::thread worker;
};


} // namespace

bool RemoteTiers::fetchBlobToFile(const Digest &d, uint64_t size, int fd,
                                  std::string *why) {
  std::vector<Tier *> missed;
  for (auto &t : tiers) {
    if (t->cfg.mode == TierMode::WriteOnly)
      continue;
    if (!admit(*t)) {
      because(why, t->cfg, "breaker open");
      continue;
    }
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
      return false;
    TrailingHasher hash(fd);
    uint64_t bytes = 0;
    bool writeFailed = false;
    // Transports hand over pieces of any size (curl: 16 KiB to 512 KiB);
    // small ones are gathered to write and wake the hasher per MiB, big ones
    // written as they are (a copy costs more than a write call).
    std::string batch;
    batch.reserve(1 << 20);
    auto put = [&](std::string_view piece) {
      if (piece.empty() || writeFailed)
        return;
      writeFailed = !writeAll(fd, piece);
      if (!writeFailed) {
        bytes += piece.size();
        hash.wrote(piece.size());
      }
    };
    auto flush = [&] {
      put(batch);
      batch.clear();
    };
    RemoteStatus st =
        t->backend->streamBlob(d, size, [&](std::string_view chunk) {
          if (batch.size() + chunk.size() > (1u << 20))
            flush();
          if (chunk.size() >= (128u << 10)) {
            flush();
            put(chunk);
          } else {
            batch.append(chunk);
          }
          return !writeFailed;
        });
    flush();
    std::optional<Digest> got = hash.finish();
    if (writeFailed)
      return false; // our disk, not the tier
    record(*t, st);
    if (st == RemoteStatus::Miss) {
      ++stats.misses;
      missed.push_back(t.get());
    }
    if (st != RemoteStatus::Hit) {
      because(why, t->cfg, outcome(st));
      continue;
    }
    stats.bytesRead += bytes;
    if (!got || *got != d) {
      noteCorrupt(*t, d);
      because(why, t->cfg, "corrupt (dropped)");
      missed.push_back(t.get());
      continue;
    }
    ++stats.hits;
    // The tiers above that missed get it too; read back from the file
    // (the page cache) up to a size a write queue should hold.
    if (!missed.empty() && bytes <= kMaxRefillBytes) {
      std::string data(bytes, '\0');
      if (pread(fd, data.data(), bytes, 0) == static_cast<ssize_t>(bytes))
        refill(missed, d, std::move(data), /*isAction=*/false);
    }
    return true;
  }
  return false;
}

std::optional<std::string> RemoteTiers::getAction(const Digest &key,
                                                  std::string *why) {
  std::vector<Tier *> missed;
  for (auto &t : tiers) {
    if (t->cfg.mode == TierMode::WriteOnly)
      continue;
    if (!admit(*t)) {
      because(why, t->cfg, "breaker open");
      continue;
    }
    std::string entry;
    RemoteStatus st = t->backend->getAction(key, entry);
    record(*t, st);
    if (st == RemoteStatus::Miss) {
      ++stats.misses;
      missed.push_back(t.get());
    }
    if (st != RemoteStatus::Hit) {
      because(why, t->cfg, outcome(st));
      continue;
    }
    stats.bytesRead += entry.size();
    if (auto payload = unwrapAction(key, entry)) {
      ++stats.hits;
      refill(missed, key, entry, /*isAction=*/true);
      return payload;
    }
    ++stats.rejected;
    ++t->rejected;
    because(why, t->cfg, "entry rejected");
    tell(*t, "rejected",
         "the entry for key " + key.hex() + " is rejected: " +
             (opts.hmacKey.empty()
                  ? "written for another key, or in a format without one"
                  : "unsigned, signed with another fleet key, or written for "
                    "another key"));
  }
  return std::nullopt;
}

std::string RemoteTiers::wrapAction(const Digest &key,
                                    const std::string &payload) const {
  std::string out(kMagic);
  out += static_cast<char>(opts.hmacKey.empty() ? 0 : 1);
  if (!opts.hmacKey.empty())
    out += mac(opts.hmacKey, key, payload);
  out += key.raw();
  out += payload;
  return out;
}

std::optional<std::string>
RemoteTiers::unwrapAction(const Digest &key, const std::string &entry) const {
  bool v1 = entry.starts_with(kMagicV1);
  if (entry.size() < kMagic.size() + 1 || (!v1 && !entry.starts_with(kMagic)))
    return std::nullopt;
  bool isSigned = entry[kMagic.size()] & 1;
  size_t off = kMagic.size() + 1;
  std::string_view mine;
  if (isSigned) {
    if (entry.size() < off + kMacSize)
      return std::nullopt;
    mine = std::string_view(entry).substr(off, kMacSize);
    off += kMacSize;
  }
  if (!v1) {
    if (entry.size() < off + kKeySize ||
        entry.compare(off, kKeySize, key.raw()) != 0)
      return std::nullopt; // written for another key
    off += kKeySize;
  }
  std::string payload = entry.substr(off);
  if (!opts.hmacKey.empty()) {
    if (!isSigned)
      return std::nullopt; // we require signatures
    std::string expected = mac(opts.hmacKey, key, payload);
    if (CRYPTO_memcmp(expected.data(), mine.data(), kMacSize) != 0)
      return std::nullopt;
  } else if (v1) {
    return std::nullopt; // nothing binds it to this key
  }
  return payload;
}

void RemoteTiers::enqueue(uint64_t bytes, std::function<void()> task) {
  {
    std::lock_guard lock(qmu);
    if (queuedBytes + bytes > opts.maxQueuedBytes && !queue.empty()) {
      ++stats.writesDropped;
      return;
    }
    queuedBytes += bytes;
    queue.emplace_back(bytes, std::move(task));
  }
  qcv.notify_one();
}

void RemoteTiers::putBlobAsync(
    const Digest &d, uint64_t size,
    std::function<std::optional<std::string>()> load) {
  if (!canWrite())
    return;
  enqueue(size, [this, d, size, load = std::move(load)] {
    std::optional<std::string> data;
    for (auto &t : tiers) {
      if (t->cfg.mode == TierMode::ReadOnly || !admit(*t))
        continue;
      // A blob this daemon found corrupt there is replaced, not found; so
      // is every blob while the tier is suspect.
      bool corrupt = seenCorrupt(*t, d);
      bool suspect =
          Clock::now().time_since_epoch().count() < t->replaceUntilNs.load();
      if (!corrupt && !suspect) {
        RemoteStatus has = t->backend->hasBlob(d, size);
        record(*t, has);
        if (has == RemoteStatus::Hit || has == RemoteStatus::Error ||
            has == RemoteStatus::Timeout)
          continue; // present, or the tier is unwell
      }
      if (!data && !(data = load()))
        return;
      RemoteStatus st = t->backend->putBlob(d, *data);
      record(*t, st);
      if (st == RemoteStatus::Stored) {
        ++stats.writes;
        stats.bytesWritten += data->size();
        if (corrupt) {
          ++stats.healed;
          std::lock_guard lock(corruptMu);
          corruptSeen.erase({t.get(), d});
        }
      }
    }
  });
}

void RemoteTiers::putActionAsync(
    const Digest &key,
    std::function<std::string(const std::optional<std::string> &)> merge) {
  if (!canWrite())
    return;
  enqueue(4096, [this, key, merge = std::move(merge)] {
    for (auto &t : tiers) {
      if (t->cfg.mode == TierMode::ReadOnly || !admit(*t))
        continue;
      std::optional<std::string> current;
      std::string entry;
      // A write-only tier is not read; its entry is replaced.
      if (t->cfg.mode == TierMode::ReadWrite) {
        RemoteStatus st = t->backend->getAction(key, entry);
        record(*t, st);
        if (st == RemoteStatus::Error || st == RemoteStatus::Timeout)
          continue;
        if (st == RemoteStatus::Hit)
          current = unwrapAction(key, entry);
      }
      std::string value = wrapAction(key, merge(current));
      RemoteStatus st = t->backend->putAction(key, value);
      record(*t, st);
      if (st == RemoteStatus::Stored) {
        ++stats.writes;
        stats.bytesWritten += value.size();
      }
    }
  });
}

void RemoteTiers::writerLoop() {
  for (;;) {
    std::pair<uint64_t, std::function<void()>> item;
    {
      std::unique_lock lock(qmu);
      qcv.wait(lock, [this] { return stopping || !queue.empty(); });
      if (queue.empty())
        return; // stopping, nothing left
      item = std::move(queue.front());
      queue.pop_front();
      busy = true;
    }
    item.second();
    {
      std::lock_guard lock(qmu);
      queuedBytes -= item.first;
      busy = false;
    }
    idleCv.notify_all();
  }
}

void RemoteTiers::drain() {
  std::unique_lock lock(qmu);
  idleCv.wait(lock, [this] { return queue.empty() && !busy; });
}

} // namespace linkd
