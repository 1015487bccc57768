// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/link_cache.h"
#include "link/response_files.h"

#include "audit/module_id.h"
#include "audit/state_record.h"

#include "cache/file_time.h"
#include "cache/name_check.h"
#include "util/clock.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <shared_mutex>
#include <thread>

namespace linkd {
namespace {

constexpr const char *kManifestNs = "link-manifest";
constexpr int kMaxInputSets = 16;
constexpr size_t kRecentManifests = 1024;

// Same file with the same content as far as metadata can tell: writes
// change the size or the mtime. Not the ctime: renaming the output (a build
// moving it into place right after the link) changes only that, and we read
// through a descriptor opened before.
bool sameIdentity(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
         a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec &&
         a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

// Stores an output through its snapshot descriptor; its identity must still
// be the one seen when the link exited, before and after it is read.
// `sink`: handed the bytes as they are stored (LocalStore::putBlobFromFile).
std::optional<Digest> storeStableFile(LocalStore &store,
                                      const OutputSnapshot &snap,
                                      const LocalStore::ByteSink &sink) {
  if (snap.fd < 0)
    return std::nullopt;
  struct stat st;
  Digest d;
  bool ok = fstat(snap.fd, &st) == 0 && sameIdentity(st, snap.st) &&
            store.putBlobFromFile(snap.fd, static_cast<uint64_t>(st.st_size),
                                  &d, snap.digest, sink) &&
            fstat(snap.fd, &st) == 0 && sameIdentity(st, snap.st);
  if (!ok)
    return std::nullopt;
  return d;
}

// The audit's record under the output's digest and, where the output has
// one, its build-id: a record survives `strip` (audit/module_id.h).
void putStateRecord(LocalStore &store, const std::string &record,
                    const OutputSnapshot &snap, const Digest &digest) {
  store.putAction(audit::kStateRecordNs, digest, record);
  if (snap.fd < 0 || snap.st.st_size <= 0)
    return;
  auto size = static_cast<size_t>(snap.st.st_size);
  void *p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, snap.fd, 0);
  if (p == MAP_FAILED)
    return;
  std::string id = audit::moduleBuildId({static_cast<const char *>(p), size});
  munmap(p, size);
  if (!id.empty())
    store.putAction(audit::kStateRecordNs, sha256(id), record);
}

// An input's state through the descriptor opened before the client was
// answered (the file may be gone by now: its times are the ones seen then,
// and its content must not have changed since).
std::optional<FileState> stateThroughFd(const InputFds::Held *held) {
  struct stat st;
  if (!held || ::fstat(held->fd, &st) != 0)
    return std::nullopt;
  const struct stat &then = held->st;
  auto ns = [](const struct timespec &t) {
    return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  FileState out;
  out.exists = true;
  if (S_ISDIR(st.st_mode)) {
    out.isDirectory = true;
    return out;
  }
  if (!S_ISREG(st.st_mode) || st.st_size != then.st_size ||
      ns(st.st_mtim) != ns(then.st_mtim))
    return std::nullopt;
  out.changedNs = std::max(ns(then.st_mtim), ns(then.st_ctim));
  auto d = sha256Fd(held->fd);
  if (!d || d->size != static_cast<uint64_t>(st.st_size))
    return std::nullopt;
  out.size = d->size;
  out.digest = d->digest;
  return out;
}

} // namespace

OutputSnapshot::OutputSnapshot(std::string p) : path(std::move(p)) {
  // Non-blocking: an output that is a FIFO must not hold the daemon in
  // open(2) (such links are uncacheable, but the file can change under us).
  fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1; // store() refuses it
  }
}

OutputSnapshot::~OutputSnapshot() {
  if (fd >= 0)
    close(fd);
}

OutputSnapshot::OutputSnapshot(OutputSnapshot &&o) noexcept
    : path(std::move(o.path)), fd(o.fd), st(o.st), digest(o.digest) {
  o.fd = -1;
}

std::vector<OutputSnapshot> snapshotOutputs(const AccessLog &log) {
  std::vector<OutputSnapshot> out;
  out.reserve(log.outputs.size());
  for (const std::string &p : log.outputs)
    out.emplace_back(p);
  return out;
}

HelperThread::HelperThread() : worker([this] { loop(); }) {}

HelperThread::~HelperThread() {
  {
    std::lock_guard lock(mu);
    stop = true;
  }
  cv.notify_all();
  worker.join();
}

bool HelperThread::tryRun(const std::function<void()> &there,
                          const std::function<void()> &here) {
  std::unique_lock owner(use, std::try_to_lock);
  if (!owner.owns_lock())
    return false; // another lookup has it: the caller does all the work
  {
    std::lock_guard lock(mu);
    task = &there;
    done = false;
  }
  cv.notify_all();
  here();
  std::unique_lock lock(mu);
  cv.wait(lock, [this] { return done; });
  return true;
}

void HelperThread::loop() {
  std::unique_lock lock(mu);
  for (;;) {
    cv.wait(lock, [this] { return stop || task; });
    if (stop)
      return;
    const std::function<void()> *t = task;
    lock.unlock();
    (*t)();
    lock.lock();
    task = nullptr;
    done = true;
    cv.notify_all();
  }
}

namespace {

// The directory of the inputs being checked. Inputs are stored sorted, so
// files of one directory are neighbours: the directory is stat'ed once, and
// if its held descriptors are still valid (input_handles.h) its files are
// fstat'ed through them; otherwise they are stat'ed relative to the
// directory, opened once, and held for next time.
class DirCursor {
public:
  DirCursor(InputHandles &handles, LinkCache::PendingHolds &pending)
      : handles(handles), pending(pending) {}
  ~DirCursor() { leave(); }

  void enter(std::string_view dir) {
    if (dir == path)
      return;
    leave();
    path.assign(dir);
    if (::stat(path.c_str(), &pathSt) != 0)
      return;
    lock = handles.readLock();
    entry = handles.find(path, pathSt);
    if (!entry)
      lock = {};
  }

  // The stat of `name` through a held descriptor; false: check it by path.
  bool heldStat(std::string_view name, struct stat *st, const Digest **digest) {
    return entry && handles.stat(entry, name, st, digest);
  }

  // The directory opened by path (-1 if that fails).
  int fd() {
    if (dirFd < 0 && !triedOpen) {
      triedOpen = true;
      dirFd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (dirFd >= 0 && ::fstat(dirFd, &fdSt) != 0) {
        ::close(dirFd);
        dirFd = -1;
      }
    }
    return dirFd;
  }

  // Holds `name` later (LinkCache::holdChecked): opening and watching it is
  // most of what a first check of a file costs, and a hit can answer first.
  void hold(std::string_view name, const struct stat &st,
            const Digest &digest) {
    if (dirFd >= 0)
      toHold.push_back({std::string(name), st, digest});
  }

private:
  void leave() {
    entry = nullptr;
    lock = {};
    if (!toHold.empty()) {
      pending.add({path, fdSt, dirFd, std::move(toHold)});
      dirFd = -1; // the pending holds own it now
    }
    toHold.clear();
    if (dirFd >= 0)
      ::close(dirFd);
    dirFd = -1;
    triedOpen = false;
  }

  InputHandles &handles;
  LinkCache::PendingHolds &pending;
  std::string path;
  struct stat pathSt{};
  struct stat fdSt{}; // of dirFd: what hold() records
  std::shared_lock<std::shared_mutex> lock;
  const InputHandles::DirEntry *entry = nullptr;
  int dirFd = -1;
  bool triedOpen = false;
  std::vector<LinkCache::PendingHolds::File> toHold;
};

} // namespace

// Checks files [begin, end) of `set`; the first mismatch's reason, or "".
std::string LinkCache::checkFiles(const cache::v1::InputSet &set,
                                  const PathMapper &paths, int begin, int end) {
  DirCursor dir(handles, pendingHolds);
  std::string local;
  for (int i = begin; i < end; ++i) {
    const auto &f = set.files(i);
    const std::string &p =
        PathMapper::isMapped(f.path()) ? (local = paths.toLocal(f.path()))
                                       : f.path();
    size_t slash = p.rfind('/');
    std::optional<FileState> st;
    if (slash != std::string::npos && slash > 0) {
      dir.enter(std::string_view(p).substr(0, slash));
      const char *name = p.c_str() + slash + 1;
      struct stat seen;
      const Digest *known = nullptr;
      if (dir.heldStat(name, &seen, &known)) {
        if (known) { // unchanged since held: no stat cache lookup
          st.emplace();
          st->exists = true;
          st->digest = *known;
        } else {
          st = stats.fromStat(seen, p);
          // Held while its times were racy (or changed since): hold it again
          // with its digest once that can stand for its identity.
          if (st && st->exists && !st->isDirectory &&
              !racyAt(seen, wallNanosNow(), stats.racyWindow()) &&
              dir.fd() >= 0)
            dir.hold(name, seen, st->digest);
        }
      } else if (dir.fd() >= 0) {
        st = stats.lookupAt(dir.fd(), name, p, &seen);
        if (st && st->exists && !st->isDirectory)
          dir.hold(name, seen, st->digest);
      } else {
        st = stats.lookup(p);
      }
    } else {
      st = stats.lookup(p);
    }
    if (!st || !st->exists)
      return "input missing: " + p;
    if (st->isDirectory != f.is_directory())
      return "input changed type: " + p;
    if (!f.is_directory() && st->digest.raw() != f.digest())
      return "input changed: " + p;
  }
  return {};
}

bool LinkCache::inputsMatch(const cache::v1::InputSet &set,
                            const PathMapper &paths, std::string *why) {
  auto fail = [&](const std::string &msg) {
    if (why)
      *why = msg;
    return false;
  };
  for (const auto &r : set.required_names()) {
    const LeftOutName *n = paths.byId(r.id());
    if (!n || n->spelling != r.spelling() ||
        (!r.absolute().empty() && n->absolute != r.absolute())) {
      // Found in what the link made, or required for what its inputs are
      // (a linker script's SECTIONS patterns, bitcode module names).
      bool embedded = r.why().empty() || r.why().starts_with("an output") ||
                      r.why().starts_with("a diagnostic");
      std::string name = r.absolute().empty() ? r.spelling() : r.absolute();
      return fail(
          (embedded ? "stored result embeds " + name
                    : "stored result requires " + name + " (" + r.why() + ")") +
          ", this link has " +
          (!n                     ? std::string("no such name")
           : r.absolute().empty() ? n->spelling
                                  : n->absolute));
    }
  }
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
  // A stat is ~1 us; a link with hundreds of inputs checks them on two
  // threads (the lookup is on the critical path of a hit). Watched files
  // cost a hash lookup each, less than waking the helper (~40 us) for a
  // few thousand of them.
  int n = set.files_size();
  std::string first, second;
  if (n < (handles.watching() ? 2048 : 128) ||
      !helper.tryRun([&] { second = checkFiles(set, paths, n / 2, n); },
                     [&] { first = checkFiles(set, paths, 0, n / 2); }))
    first = checkFiles(set, paths, 0, n);
  if (!first.empty())
    return fail(first);
  if (!second.empty())
    return fail(second);
  return true;
}

const cache::v1::InputSet *
LinkCache::matchingSet(const cache::v1::Manifest &manifest,
                       const PathMapper &paths, std::string *why) {
  handles.refresh(); // changes of watched inputs up to now
  for (const auto &set : manifest.sets()) {
    std::string setWhy;
    if (inputsMatch(set, paths, &setWhy))
      return &set;
    if (why && why->empty())
      *why = setWhy;
  }
  if (why && why->empty())
    *why = "manifest has no input sets";
  return nullptr;
}

void LinkCache::PendingHolds::add(Dir d) {
  std::lock_guard lock(mu);
  dirs.push_back(std::move(d));
}

std::vector<LinkCache::PendingHolds::Dir> LinkCache::PendingHolds::take() {
  std::lock_guard lock(mu);
  return std::exchange(dirs, {});
}

LinkCache::PendingHolds::~PendingHolds() {
  for (Dir &d : dirs)
    ::close(d.fd);
}

void LinkCache::holdChecked() {
  for (PendingHolds::Dir &d : pendingHolds.take()) {
    for (const PendingHolds::File &f : d.files)
      handles.hold(d.path, d.st, d.fd, f.name.c_str(), f.st, f.digest);
    ::close(d.fd);
  }
}

std::shared_ptr<const cache::v1::Manifest>
LinkCache::recentManifest(const Digest &key) {
  std::lock_guard lock(recentMu);
  auto it = recent.find(key);
  return it == recent.end() ? nullptr : it->second;
}

std::shared_ptr<const cache::v1::Manifest>
LinkCache::rememberManifest(const Digest &key, cache::v1::Manifest &&m) {
  auto shared = std::make_shared<const cache::v1::Manifest>(std::move(m));
  std::lock_guard lock(recentMu);
  if (recent.size() >= kRecentManifests)
    recent.clear(); // crude, and enough: a build relinks a few hundred keys
  recent[key] = shared;
  return shared;
}

void LinkCache::lastInputPaths(const LinkAnalysis &link,
                               std::vector<std::string> &read,
                               std::vector<std::string> &probed) {
  std::shared_ptr<const cache::v1::Manifest> m = recentManifest(link.key);
  if (!m) {
    std::string value;
    cache::v1::Manifest parsed;
    if (blobs.getAction(kManifestNs, link.key, value) != Lookup::Hit ||
        !parsed.ParseFromString(value))
      return;
    m = rememberManifest(link.key, std::move(parsed));
  }
  if (m->sets().empty())
    return;
  const cache::v1::InputSet &set = m->sets(0);
  for (const auto &f : set.files())
    (f.is_directory() ? probed : read).push_back(link.paths.toLocal(f.path()));
  for (const auto &p : set.existing())
    probed.push_back(link.paths.toLocal(p));
  for (const auto &p : set.missing())
    probed.push_back(link.paths.toLocal(p));
}

std::optional<std::string> LinkCache::fetchBlob(const Digest &d,
                                                uint64_t size) {
  std::string blob;
  if (blobs.getBlob(d, blob) == Lookup::Hit)
    return blob;
  if (!remote || !remote->canRead())
    return std::nullopt;
  auto fetched = remote->getBlob(d, size); // verified against d
  if (fetched && blobs.putBlob(*fetched))
    ++remote->counters().backfills;
  return fetched;
}

std::optional<cache::v1::LinkResult> LinkCache::lookup(const LinkAnalysis &link,
                                                       std::string *why) {
  std::string localWhy, remoteWhy;
  const cache::v1::InputSet *set = nullptr;
  std::shared_ptr<const cache::v1::Manifest> local = recentManifest(link.key);
  if (!local) {
    std::string value;
    cache::v1::Manifest parsed;
    Lookup l = blobs.getAction(kManifestNs, link.key, value);
    if (l == Lookup::Hit && parsed.ParseFromString(value))
      local = rememberManifest(link.key, std::move(parsed));
    else
      localWhy =
          l == Lookup::Corrupt ? "manifest corrupt" : "no manifest for key";
  }
  static const cache::v1::Manifest kEmpty;
  const cache::v1::Manifest &manifest = local ? *local : kEmpty;
  if (local)
    set = matchingSet(manifest, link.paths, &localWhy);

  cache::v1::Manifest remoteManifest;
  if (!set && remote && remote->canRead()) {
    std::string tiersSaid;
    if (auto payload = remote->getAction(link.key, &tiersSaid);
        payload && remoteManifest.ParseFromString(*payload)) {
      set = matchingSet(remoteManifest, link.paths, &remoteWhy);
      if (set) {
        // Backfill: the set joins the local manifest.
        cache::v1::Manifest merged = mergeManifest(*set, manifest);
        blobs.putAction(kManifestNs, link.key, merged.SerializeAsString());
        rememberManifest(link.key, std::move(merged));
        ++remote->counters().backfills;
      }
    } else {
      remoteWhy = "no remote manifest" +
                  (tiersSaid.empty() ? "" : " (" + tiersSaid + ")");
    }
  }
  if (!set) {
    if (why)
      *why = remoteWhy.empty() ? localWhy : localWhy + "; remote: " + remoteWhy;
    return std::nullopt;
  }
  auto d = Digest::fromRaw(set->result_key());
  if (d) {
    // Results are content-addressed: one verified read can be reused.
    std::lock_guard lock(recentMu);
    if (auto it = results.find(*d); it != results.end())
      return *it->second;
  }
  cache::v1::LinkResult result;
  auto blob =
      d ? fetchBlob(*d, set->result_size() ? set->result_size() : kSizeUnknown)
        : std::nullopt;
  if (blob && result.ParseFromString(*blob)) {
    std::lock_guard lock(recentMu);
    if (results.size() >= kRecentManifests)
      results.clear();
    results[*d] = std::make_shared<const cache::v1::LinkResult>(result);
    return result;
  }
  if (why)
    *why = "result missing or corrupt";
  return std::nullopt;
}

Lookup LinkCache::materialize(const cache::v1::LinkResult &result,
                              const LinkAnalysis &link, std::string *error,
                              std::vector<Backfill> *later) {
  for (const auto &out : result.outputs()) {
    std::string tiersSaid; // why the remote did not have it
    auto d = Digest::fromRaw(out.digest());
    if (!d) {
      if (error)
        *error = "bad output digest";
      return Lookup::Corrupt;
    }
    std::string path = link.paths.toLocal(out.path());
    auto mode = static_cast<mode_t>(out.mode());
    if (spares && spares->wants(out.size()) && spares->take(*d, path, mode))
      continue;
    Lookup l = blobs.materializeBlob(*d, path, mode, error);
    if (l == Lookup::Miss && remote && remote->canRead()) {
      // Not here: stream it from the remote (verified on the way) into a
      // temp file beside the output; keep the file open for the backfill.
      std::string tmp;
      int fd = createTempBeside(path, tmp, error, blobs.tempJournal());
      if (fd < 0)
        return Lookup::Error;
      if (remote->fetchBlobToFile(*d, out.size(), fd, &tiersSaid) &&
          commitTemp(fd, tmp, path, mode, error)) {
        later->push_back(Backfill{fd, *d, out.size()});
        continue;
      }
      close(fd);
      unlink(tmp.c_str());
    }
    if (l != Lookup::Hit) {
      if (error && error->empty())
        *error = "output blob for " + path +
                 (l == Lookup::Corrupt ? " was corrupt" : " is missing") +
                 (tiersSaid.empty() ? "" : " (remote: " + tiersSaid + ")");
      return l;
    }
  }
  return Lookup::Hit;
}

void LinkCache::forgetRecent() {
  {
    std::lock_guard lock(recentMu);
    recent.clear();
    results.clear();
  }
  if (spares)
    spares->clear();
}

void LinkCache::prepareSpares(const cache::v1::LinkResult &result) {
  if (!spares)
    return;
  for (const auto &out : result.outputs())
    if (auto d = Digest::fromRaw(out.digest()); d && spares->wants(out.size()))
      spares->prepare(*d, out.size());
}

void LinkCache::backfill(std::vector<Backfill> &later) {
  for (Backfill &b : later) {
    Digest got;
    // What is read back must still be what was verified (the output may
    // have been changed in place meanwhile).
    if (blobs.putBlobFromFile(b.fd, b.size, &got) && got == b.digest && remote)
      ++remote->counters().backfills;
    close(b.fd);
  }
  later.clear();
}

cache::v1::Manifest mergeManifest(const cache::v1::InputSet &newest,
                                  const cache::v1::Manifest &old) {
  auto inputsOnly = [](cache::v1::InputSet s) {
    s.clear_result_key();
    s.clear_result_size();
    s.clear_created_unix();
    return s.SerializeAsString();
  };
  std::string newestInputs = inputsOnly(newest);
  cache::v1::Manifest fresh;
  *fresh.add_sets() = newest;
  for (const auto &s : old.sets()) {
    if (fresh.sets_size() >= kMaxInputSets)
      break;
    if (inputsOnly(s) != newestInputs)
      *fresh.add_sets() = s;
  }
  return fresh;
}

void LinkCache::pushToRemote(const LinkAnalysis &link,
                             const cache::v1::InputSet &set,
                             const cache::v1::LinkResult &result,
                             const Digest &resultDigest) {
  // Blobs first, then the manifest that refers to them (one writer thread:
  // a reader never finds a manifest whose blobs are not there yet).
  auto fromLocal = [this](Digest d) {
    return [this, d]() -> std::optional<std::string> {
      std::string data;
      if (blobs.getBlob(d, data) == Lookup::Hit)
        return data;
      return std::nullopt;
    };
  };
  for (const auto &o : result.outputs())
    if (auto d = Digest::fromRaw(o.digest()))
      remote->putBlobAsync(*d, o.size(), fromLocal(*d));
  remote->putBlobAsync(resultDigest, set.result_size(),
                       fromLocal(resultDigest));
  remote->putActionAsync(link.key,
                         [set](const std::optional<std::string> &cur) {
                           cache::v1::Manifest old;
                           if (cur)
                             old.ParseFromString(*cur);
                           return mergeManifest(set, old).SerializeAsString();
                         });
}

void LinkCache::hashRecentInputs(LinkAnalysis &link) {
  int64_t now = fileClockNowNs();
  // The named inputs, and what the last link of this key read: libraries
  // found by search, and every input of a link keyed as given (COFF,
  // Mach-O), which names none.
  std::vector<std::string> candidates, probed;
  for (const LeftOutName &n : link.paths.names())
    if (n.role == NameRole::Input)
      candidates.push_back(n.absolute);
  lastInputPaths(link, candidates, probed);
  for (const std::string &candidate : candidates) {
    std::string path = withoutDotComponents(candidate);
    struct stat st;
    if (link.digestsBeforeLink.count(path) || ::stat(path.c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode) ||
        !mayHaveChangedSince(std::max(nanos(st.st_mtim), nanos(st.st_ctim)),
                             now))
      continue;
    if (std::optional<FileState> f = stats.lookup(path);
        f && f->exists && !f->isDirectory)
      link.digestsBeforeLink[path] = f->digest;
  }
}

LinkCache::StoreOutcome
LinkCache::store(const LinkAnalysis &link, const AccessLog &log,
                 const std::vector<OutputSnapshot> &outputs,
                 const LinkOutput &output, int exitCode, uint64_t linkMicros, int64_t linkStartNs) {
  StoreOutcome outcome;
  auto refuse = [&](std::string why) {
    outcome.notStoredReason = std::move(why);
    return outcome;
  };
  if (outputs.empty() && !link.resultMayBeEmpty)
    return refuse("the link wrote no output");

  cache::v1::InputSet set;
  // Response files are covered by the key, by content. LLVM may open one by
  // another spelling than its argument's ("<cwd>/./a.rsp" for "a.rsp",
  // "<cwd>/a.rsp" for "./a.rsp"): both sides without "." parts.
  std::set<std::string> responseFiles;
  for (const std::string &f : link.responseFiles)
    responseFiles.insert(withoutDotComponents(f));
  for (const std::string &p : log.read) {
    if (link.replacedInputs.count(p) ||
        responseFiles.count(withoutDotComponents(p)))
      continue;
    auto st = stats.lookup(p);
    if ((!st || !st->exists) && log.inputFds)
      st = stateThroughFd(log.inputFds->find(p)); // deleted since (rustc)
    if (!st || !st->exists)
      return refuse("cannot read input " + p);
    // Stamped in the tick the link began or later: rewritten after LLD
    // read it (a build step that follows the link's answer, while this
    // stores), or just before the link (a compiler's object). Only the
    // bytes hashed before the link tell them apart.
    if (!st->isDirectory && mayHaveChangedSince(st->changedNs, linkStartNs)) {
      auto before = link.digestsBeforeLink.find(withoutDotComponents(p));
      if (before == link.digestsBeforeLink.end() ||
          before->second != st->digest)
        return refuse("input changed during the link: " + p);
    }
    // Keyed by its identity without STT_FILE names: the key holds it, as
    // long as these are the bytes it was keyed on.
    if (auto it = link.identityKeyed.find(withoutDotComponents(p));
        it != link.identityKeyed.end()) {
      if (st->isDirectory || st->digest != it->second)
        return refuse("input changed during the link: " + p);
      continue;
    }
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

  // A diagnostic quoting a source file name the key left out (LLD's last
  // resort for a location: "referenced by conf123.c").
  if (!link.fileSymbols.empty()) {
    std::string text = output.stream(false) + '\n' + output.stream(true);
    for (const std::string &name : link.fileSymbols)
      if (!name.empty() && text.find(name) != std::string::npos)
        return refuse("a diagnostic names the source file of an input "
                      "keyed without it");
  }

  // The outputs are stored first, searched for the left-out names as the
  // store reads them (name_check.h); the manifest that records what they
  // require is written last.
  cache::v1::LinkResult result;
  OutputScan scan(link.paths);
  std::vector<Digest> outputDigests;
  for (const OutputSnapshot &snap : outputs) {
    std::optional<Digest> d = storeStableFile(blobs, snap, scan.startOutput());
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
    outputDigests.push_back(*d);
  }
  NameCheck names = checkNames(link.paths, log, scan, output.stream(false),
                               output.stream(true));
  // The diagnostics as stored, piece by piece in LLD's order; a name inside
  // a longer word in any piece is required exactly, as in the whole stream.
  std::set<std::string> embedded;
  storeOutput(output, link.paths, result, &embedded);
  for (const std::string &id : embedded) {
    names.exact.emplace(id, true);
    names.whyById.emplace(id, "a diagnostic contains it inside a longer word");
  }
  // Paths under a base dir above the working directory are keyed relative
  // to it: a result that names the base dir depends on the working
  // directory (checkout A's -rpath /src/A/lib is not checkout B's).
  if (link.paths.relativeToCwd() && names.exact.count("B"))
    names.exact["C"] = true;
  outcome.nameCheckMicros = names.micros;
  outcome.nameCheckCpuMicros = names.cpuMicros;
  outcome.nameCheckBytes = names.scannedBytes;
  outcome.requiredNames = names.exact.size();
  outcome.requiredWhy = names.why;
  for (const auto &[id, absoluteToo] : names.exact) {
    const LeftOutName *n = link.paths.byId(id);
    auto *r = set.add_required_names();
    r->set_id(id);
    r->set_spelling(n ? n->spelling : "");
    if (auto why = names.whyById.find(id); why != names.whyById.end())
      r->set_why(why->second);
    if (absoluteToo && n)
      r->set_absolute(n->absolute);
  }

  result.set_exit_code(exitCode);
  result.set_link_micros(linkMicros);
  Digest resultDigest;
  std::string resultBlob = result.SerializeAsString();
  if (!blobs.putBlob(resultBlob, &resultDigest))
    return refuse("cannot write to the store");
  set.set_result_key(std::string(resultDigest.raw()));
  set.set_result_size(resultBlob.size());
  set.set_created_unix(unixSecondsNow());

  // Newest set first; older sets with the same inputs and the oldest beyond
  // the limit go.
  cache::v1::Manifest old;
  std::string value;
  if (blobs.getAction(kManifestNs, link.key, value) == Lookup::Hit)
    old.ParseFromString(value);
  cache::v1::Manifest merged = mergeManifest(set, old);
  if (!blobs.putAction(kManifestNs, link.key, merged.SerializeAsString()))
    return refuse("cannot write to the store");
  rememberManifest(link.key, std::move(merged));
  // The audit finds a module's state by its bytes alone (docs/audit.md).
  if (log.hasStateRecord)
    for (size_t i = 0; i < outputs.size(); ++i)
      putStateRecord(blobs, log.stateRecord, outputs[i], outputDigests[i]);
  rememberKey(link);
  if (remote && remote->canWrite())
    pushToRemote(link, set, result, resultDigest);
  // No spare copy yet: a miss already writes each large output once more
  // (the store), and on two cores that work lands on the next link. The
  // first hit makes one (link_service.cpp), for the hits after it.
  outcome.stored = true;
  return outcome;
}

bool storeStateRecord(LocalStore &store, const std::string &record,
                      const std::vector<OutputSnapshot> &outputs) {
  bool all = true;
  for (const OutputSnapshot &snap : outputs) {
    struct stat st;
    std::optional<FileDigest> d;
    if (snap.fd >= 0 && fstat(snap.fd, &st) == 0 && sameIdentity(st, snap.st))
      d = sha256Fd(snap.fd);
    if (!d || fstat(snap.fd, &st) != 0 || !sameIdentity(st, snap.st)) {
      all = false; // changed meanwhile: its record would name other bytes
      continue;
    }
    putStateRecord(store, record, snap, d->digest);
  }
  return all;
}

} // namespace linkd
