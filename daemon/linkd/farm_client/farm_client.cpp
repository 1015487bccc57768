// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/farm_client/farm_client.h"

#include "cache/cache_stats.h"
#include "daemon/linkd/blobs/blob_store.h"
#include "daemon/linkd/farm_client/output_policy.h"
#include "daemon/linkd/farm_client/output_writer.h"
#include "daemon/linkd/farm_client/tls_probe.h"
#include "link/flavor.h"
#include "store/local_store.h"
#include "util/files.h"
#include "view/path_fact.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace linkd {

using Clock = std::chrono::steady_clock;

std::map<std::string, uint64_t> FarmCounters::snapshot() const {
  return {{"farm_offloaded", offloaded.load()},
          {"farm_fallbacks", fallbacks.load()},
          {"farm_not_offloadable", notOffloadable.load()},
          {"farm_bytes_up", bytesUp.load()},
          {"farm_bytes_down", bytesDown.load()},
          {"farm_blobs_uploaded", blobsUploaded.load()},
          {"farm_blobs_skipped", blobsSkipped.load()},
          {"farm_remote_link_micros", remoteLinkMicros.load()},
          {"farm_round_trips", roundTrips.load()},
          {"farm_retries", retries.load()},
          {"farm_rejected", rejected.load()}};
}

void FarmCounters::zero() {
  for (auto *c : {&offloaded, &fallbacks, &notOffloadable, &bytesUp, &bytesDown,
                  &blobsUploaded, &blobsSkipped, &remoteLinkMicros, &roundTrips,
                  &retries, &rejected})
    c->store(0);
}

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  return s.substr(b);
}

// An output being received: a temp file beside its destination.
struct Incoming {
  std::string path, tmp;
  int fd = -1;
  uint32_t mode = 0;
  uint64_t size = 0, written = 0;
  Digest digest;
  bool digestLater = false; // it comes with the last chunk
  // Writes and hashes beside the stream: the digest verifies what the node
  // sent and is the one the local store files the output under.
  std::unique_ptr<OutputWriter> writer;
  bool complete = false;
};

void discard(std::vector<Incoming> &files) {
  for (Incoming &f : files) {
    if (f.writer) {
      Digest unused;
      f.writer->finish(unused); // before the descriptor goes
      f.writer.reset();
    }
    if (f.fd >= 0) {
      close(f.fd);
      unlink(f.tmp.c_str());
    }
    f.fd = -1;
  }
}

// Where an offloaded link's time went on this side (the debug log; the
// breakdown in docs/design.md was taken from it).
struct Phases {
  Clock::time_point begin = Clock::now(), described, lastBlob, firstOutput,
                    done;
  static double ms(Clock::time_point from, Clock::time_point to) {
    if (from == Clock::time_point() || to == Clock::time_point())
      return 0;
    return std::chrono::duration<double, std::milli>(to - from).count();
  }
  void log(size_t outputs) const {
    Clock::time_point uploaded = std::max(described, lastBlob);
    spdlog::debug("farm: phases facts_ms={:.1f} upload_ms={:.1f} "
                  "link_wait_ms={:.1f} outputs_ms={:.1f} finish_ms={:.1f} "
                  "outputs={}",
                  ms(begin, described), ms(described, lastBlob),
                  ms(uploaded, firstOutput), ms(firstOutput, done),
                  ms(done, Clock::now()), outputs);
  }
};

// Every address of the target is on this machine: compressing uploads would
// only cost time.
bool targetIsLoopback(std::string t) {
  for (const char *scheme : {"ipv4:", "ipv6:", "dns:///", "dns:"})
    if (t.starts_with(scheme)) {
      t = t.substr(std::strlen(scheme));
      break;
    }
  size_t pos = 0;
  while (pos <= t.size()) {
    size_t comma = t.find(',', pos);
    std::string a = t.substr(pos, comma == std::string::npos ? std::string::npos
                                                             : comma - pos);
    if (!(a.starts_with("127.") || a.starts_with("[::1]") ||
          a.starts_with("localhost:")))
      return false;
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return true;
}

std::string statusName(grpc::StatusCode c) {
  switch (c) {
  case grpc::StatusCode::UNAUTHENTICATED:
    return "UNAUTHENTICATED";
  case grpc::StatusCode::RESOURCE_EXHAUSTED:
    return "RESOURCE_EXHAUSTED";
  case grpc::StatusCode::INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case grpc::StatusCode::UNAVAILABLE:
    return "UNAVAILABLE";
  case grpc::StatusCode::CANCELLED:
    return "CANCELLED";
  case grpc::StatusCode::DEADLINE_EXCEEDED:
    return "DEADLINE_EXCEEDED";
  case grpc::StatusCode::OK:
    return "OK";
  default:
    return "status " + std::to_string(static_cast<int>(c));
  }
}

} // namespace

std::unique_ptr<FarmClient> FarmClient::create(const Config &settings,
                                               StatCache *statCache,
                                               std::string *error,
                                               bool requireToken) {
  std::unique_ptr<FarmClient> c(new FarmClient(settings, statCache));
  if (settings.farmTokenFile.empty() && requireToken) {
    *error = "farm_token_file (LINKD_FARM_TOKEN_FILE) is not set";
    return nullptr;
  }
  if (!settings.farmTokenFile.empty()) {
    linkd::Result<std::string> token =
        readFile(settings.farmTokenFile, 1 << 20);
    if (!token) {
      *error = "cannot read the farm token file " + token.error();
      return nullptr;
    }
    c->token = trimmed(*token);
  }
  // Every link would be refused UNAUTHENTICATED: say so now, with the path.
  if (c->token.empty() && requireToken) {
    *error = "the farm token file " + settings.farmTokenFile + " is empty";
    return nullptr;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (settings.farmInsecure) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    for (auto [file, field] :
         {std::pair{&settings.farmCa, &ssl.pem_root_certs},
          std::pair{&settings.farmCert, &ssl.pem_cert_chain},
          std::pair{&settings.farmKey, &ssl.pem_private_key}}) {
      if (file->empty())
        continue;
      linkd::Result<std::string> pem = readFile(*file);
      if (!pem) {
        *error = "cannot read " + pem.error();
        return nullptr;
      }
      *field = *pem;
    }
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  // Round robin over the nodes the target names, among those whose
  // grpc.health.v1 status for the Farm service is SERVING: a node that
  // drains says NOT_SERVING at once, and no new link is sent to it (issue
  // 42: links refused by a draining node were retried on it again, then
  // linked locally). A node without the health service counts as healthy.
  args.SetServiceConfigJSON(
      R"({"loadBalancingConfig": [{"round_robin": {}}],
          "healthCheckConfig": {"serviceName": "linkd.v1.Farm"}})");
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  // A node that stops answering (partitioned, SIGSTOPped, a dead host) is
  // given up within kKeepaliveMs + kKeepaliveTimeoutMs in any phase: HTTP/2
  // pings while a call is open, however long nothing else moves (the client
  // waited the whole farm_timeout_ms mid-link, and blocked in a write
  // mid-upload for good). The transport then closes and the link goes to the
  // next node or runs here. Nodes allow pings this often (serve.cpp).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // An address list has no single name for the certificate check; the
  // nodes' certificates then carry farm_tls_name, or the first address.
  std::string tlsName = settings.farmTlsName;
  if (std::vector<std::string> nodes = addressListOf(settings.farm);
      tlsName.empty() && !settings.farmInsecure && nodes.size() > 1) {
    tlsName = nodes[0].substr(0, nodes[0].rfind(':'));
    if (tlsName.size() > 2 && tlsName.front() == '[')
      tlsName = tlsName.substr(1, tlsName.size() - 2);
  }
  if (!tlsName.empty() && !settings.farmInsecure)
    args.SetSslTargetNameOverride(tlsName);
  c->channel = grpc::CreateCustomChannel(settings.farm, creds, args);
  c->creds = creds;
  c->channelArgs = args;
  c->loopback = targetIsLoopback(settings.farm);
  c->stub = v1::Farm::NewStub(c->channel);
  return c;
}

bool policyWantsOffload(const Config &settings, uint64_t inputBytes) {
  if (settings.farmPolicy == "local")
    return false;
  if (settings.farmPolicy == "remote")
    return true;
  return inputBytes >= settings.farmMinInput;
}

v1::PathFact FarmClient::fact(const std::string &path) {
  return describePath(path, statCache);
}

v1::PathFact describePath(const std::string &path, StatCache *statCache) {
  v1::PathFact f;
  if (!statPathFact(path, f))
    return f;
  std::optional<Digest> d;
  if (statCache) {
    if (auto s = statCache->lookup(path); s && s->exists && !s->isDirectory)
      d = s->digest;
  } else if (auto h = sha256File(path)) {
    d = h->digest;
  }
  if (!d || access(path.c_str(), R_OK) != 0) {
    f.set_kind(v1::PathFact::UNREADABLE);
    f.set_error(EACCES);
    return f;
  }
  f.set_kind(v1::PathFact::FILE);
  f.set_digest(std::string(d->raw()));
  return f;
}

v1::PathFact FarmClient::outputFact(const std::string &path) {
  return describeOutputPath(path, statCache);
}

v1::PathFact describeOutputPath(const std::string &path, StatCache *statCache) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return describePath(path, statCache);
  // An old output: described absent, and so never hashed nor uploaded.
  v1::PathFact f;
  f.set_path(path);
  f.set_kind(v1::PathFact::ABSENT);
  f.set_error(ENOENT);
  return f;
}

std::vector<v1::PathFact>
FarmClient::facts(const std::vector<std::string> &paths) {
  return describePaths(paths, statCache);
}

std::vector<v1::PathFact> describePaths(const std::vector<std::string> &paths,
                                        StatCache *statCache) {
  std::vector<v1::PathFact> out(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < paths.size();)
      out[i] = describePath(paths[i], statCache);
  };
  // One thread per core, and at least a few paths each (a thread costs
  // ~50 us; a path the stat cache knows, a few).
  size_t threads = std::min<size_t>(
      std::max(1u, std::thread::hardware_concurrency()), paths.size() / 16 + 1);
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t)
    helpers.emplace_back(work);
  work();
  for (std::thread &t : helpers)
    t.join();
  return out;
}

OffloadTarget::InFlight::InFlight(const OffloadTarget &t) : target(t) {
  std::lock_guard lock(t.inflightMu);
  it = t.inflight.insert(Clock::now());
}

OffloadTarget::InFlight::~InFlight() {
  std::lock_guard lock(target.inflightMu);
  target.inflight.erase(it);
}

double OffloadTarget::oldestOffloadSeconds() const {
  std::lock_guard lock(inflightMu);
  if (inflight.empty())
    return 0;
  return std::chrono::duration<double>(Clock::now() - *inflight.begin())
      .count();
}

FarmClient::Result
FarmClient::offload(const v1::LinkRequest &req,
                    const std::vector<std::string> &read,
                    const std::vector<std::string> &probed,
                    const std::vector<std::string> &outputs) {
  InFlight underWay(*this);
  Result r = offloadOnce(req, read, probed, outputs);
  if (!r.ok && r.retryable) {
    // A node that died mid-link: the channel has marked it down, so the
    // retry goes to another node (or fails fast).
    ++stats.retries;
    spdlog::info("farm: retrying once after: {}", r.error);
    r = offloadOnce(req, read, probed, outputs);
  }
  return r;
}

// One offload attempt's state, from connecting to committing its outputs.
struct FarmClient::Attempt {
  explicit Attempt(const v1::LinkRequest &req) : req(req), policy(req) {}
  const v1::LinkRequest &req;
  OutputPolicy policy; // where the node's outputs may go
  bool rejected = false; // the node sent an output this link cannot write
  Result result;
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::OffloadUp, v1::OffloadDown>>
      stream;
  Phases phases;
  std::map<Digest, std::string> pathOf; // blobs we described
  std::vector<Incoming> files;          // outputs, in the order they came
  Incoming *current = nullptr;          // the one whose data is arriving
  bool writeOk = true;
  bool done = false;
  v1::OffloadDone final;
  std::string fail; // why this side gave up
  uint64_t up = 0;  // bytes sent
  bool streaming() const { return writeOk && fail.empty() && !done; }
};

// The node asks about paths and blobs as the link meets them, and streams
// the linker's output, then every file it wrote, then its end.
FarmClient::Result
FarmClient::offloadOnce(const v1::LinkRequest &req,
                        const std::vector<std::string> &read,
                        const std::vector<std::string> &probed,
                        const std::vector<std::string> &outputs) {
  Attempt a(req);
  if (!connect(a)) // breaker, channel, deadline, token
    return std::move(a.result);
  sendStart(a, read, probed, outputs); // the request, facts known up front
  v1::OffloadDown m;
  while (a.streaming() && a.stream->Read(&m))
    onMessage(a, m); // questions, blobs, output, files, the end
  if (!endStream(a)) // transport errors and the node's own failures
    return std::move(a.result);
  if (!commitOutputs(a)) // rename every verified output into place
    return std::move(a.result);
  a.phases.log(a.files.size());
  a.result.ok = true;
  a.result.exitCode = a.final.exit_code();
  a.result.records = a.final.access_records();
  a.result.wallMicros = a.final.wall_micros();
  a.result.userMicros = a.final.user_micros();
  a.result.sysMicros = a.final.sys_micros();
  a.result.maxRssKib = a.final.max_rss_kib();
  return std::move(a.result);
}

bool FarmClient::connect(Attempt &a) {
  auto now = std::chrono::system_clock::now();
  int64_t nowNanos = Clock::now().time_since_epoch().count();
  if (nowNanos < downUntilNanos.load()) {
    a.result.error = "the farm " + settings.farm +
                     " had no node to serve this recently (down or draining); "
                     "not trying again yet";
    return false;
  }
  if (!channel->WaitForConnected(
          now + std::chrono::milliseconds(settings.farmConnectTimeoutMs))) {
    downUntilNanos = Clock::now().time_since_epoch().count() +
                     std::chrono::nanoseconds(std::chrono::seconds(10)).count();
    // gRPC does not say why; a check of our own does (an untrusted
    // certificate is not an outage, nor is a draining node).
    TlsProbeTarget probe{firstAddressOf(settings.farm), !settings.farmInsecure,
                         settings.farmCa, settings.farmTlsName,
                         static_cast<int>(settings.farmConnectTimeoutMs)};
    a.result.error = "cannot connect to the farm " + settings.farm + ": " +
                     probeFarmNode(probe) + " (not trying again for 10 s)";
    return false;
  }
  a.ctx.set_deadline(now + std::chrono::milliseconds(settings.farmTimeoutMs));
  if (!token.empty())
    a.ctx.AddMetadata("authorization", "Bearer " + token);
  a.stream = stub->Offload(&a.ctx);
  a.phases = Phases{};
  return true;
}

void FarmClient::describe(
    Attempt &a, const std::vector<std::string> &paths,
    google::protobuf::RepeatedPtrField<v1::PathFact> *out) {
  for (v1::PathFact &f : facts(paths)) {
    if (f.kind() == v1::PathFact::FILE)
      if (auto d = Digest::fromRaw(f.digest()))
        a.pathOf.emplace(*d, f.path());
    *out->Add() = std::move(f);
  }
}

void FarmClient::sendStart(Attempt &a, const std::vector<std::string> &read,
                           const std::vector<std::string> &probed,
                           const std::vector<std::string> &outputs) {
  v1::OffloadUp first;
  v1::LinkRequest *link = first.mutable_start()->mutable_link();
  *link = a.req;
  // Only what the linker reads goes to the node (which refuses the rest):
  // the process's own variables (PATH, TMPDIR, HOME, ...; flavor.h) name
  // this machine's directories, which the node does not have.
  auto reads = flavorEnvironment(static_cast<Flavor>(a.req.flavor()));
  for (auto it = link->mutable_env()->begin(); it != link->mutable_env()->end();)
    it = std::find(reads.begin(), reads.end(), it->first) == reads.end()
             ? link->mutable_env()->erase(it)
             : std::next(it);
  auto *startFacts = first.mutable_start()->mutable_facts();
  std::set<std::string> seen;
  for (const std::string &p : outputs)
    if (!p.empty() && p[0] == '/' && seen.insert(p).second)
      *startFacts->Add() = outputFact(p);
  std::vector<std::string> predicted;
  size_t fromRead = 0; // the first ones come from `read`
  for (const auto *list : {&read, &probed})
    for (const std::string &p : *list)
      if (!p.empty() && p[0] == '/' && seen.insert(p).second) {
        predicted.push_back(p);
        fromRead += list == &read;
      }
  int firstPredicted = startFacts->size();
  describe(a, predicted, startFacts);
  for (size_t i = 0; i < fromRead; ++i) {
    v1::PathFact &f = (*startFacts)[firstPredicted + static_cast<int>(i)];
    f.set_likely_read(f.kind() == v1::PathFact::FILE);
  }
  a.up = first.ByteSizeLong();
  a.phases.described = Clock::now();
  a.writeOk = a.stream->Write(first);
}

void FarmClient::onMessage(Attempt &a, v1::OffloadDown &m) {
  switch (m.kind_case()) {
  case v1::OffloadDown::kNeedPaths:
    answerPaths(a, m.need_paths());
    break;
  case v1::OffloadDown::kNeedBlobs:
    ++stats.roundTrips;
    for (const v1::BlobWant &w : m.need_blobs().blobs())
      if (!sendBlob(a, w))
        break;
    break;
  case v1::OffloadDown::kOutput:
    (m.output().stream() == v1::OutputChunk::STREAM_STDOUT ? a.result.out
                                                           : a.result.err)
        .append(m.output().data());
    break;
  case v1::OffloadDown::kFile:
    beginOutput(a, m.file());
    break;
  case v1::OffloadDown::kFileData:
    receiveOutputData(a, *m.mutable_file_data());
    break;
  case v1::OffloadDown::kDone:
    a.phases.done = Clock::now();
    a.final = m.done();
    a.done = true;
    break;
  default:
    break;
  }
}

void FarmClient::answerPaths(Attempt &a, const v1::NeedPaths &need) {
  ++stats.roundTrips;
  v1::OffloadUp answer;
  std::vector<std::string> asked;
  for (const std::string &p : need.paths())
    if (!p.empty() && p[0] == '/')
      asked.push_back(p);
  describe(a, asked, answer.mutable_facts()->mutable_facts());
  a.up += answer.ByteSizeLong();
  a.writeOk = a.stream->Write(answer);
}

// Uploads one blob the node wants, from where its partial copy ends; false
// (with `fail` or `writeOk` set) when the attempt cannot go on.
bool FarmClient::sendBlob(Attempt &a, const v1::BlobWant &w) {
  auto d = Digest::fromRaw(w.digest());
  auto it = d ? a.pathOf.find(*d) : a.pathOf.end();
  if (it == a.pathOf.end()) {
    a.fail = "the farm asked for a blob that was never described";
    return false;
  }
  int fd = ::open(it->second.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    a.fail = "cannot read " + it->second + ": " + std::strerror(errno);
    return false;
  }
  // One message, reused: its buffer is allocated once per blob, and on
  // loopback the file is read straight into it.
  v1::OffloadUp c;
  v1::BlobChunk *chunk = c.mutable_blob();
  chunk->set_digest(std::string(d->raw()));
  std::string raw;
  uint64_t off = w.offset();
  for (;;) {
    std::string &buf = loopback ? *chunk->mutable_data() : raw;
    buf.resize(kFarmChunkBytes);
    ssize_t n = pread(fd, buf.data(), buf.size(), static_cast<off_t>(off));
    if (n < 0) {
      a.fail = "cannot read " + it->second + ": " + std::strerror(errno);
      break;
    }
    buf.resize(static_cast<size_t>(n));
    bool compressed = false;
    if (!loopback)
      chunk->set_data(compressChunk(raw, &compressed));
    chunk->set_offset(off);
    chunk->set_compressed(compressed);
    chunk->set_last(n < static_cast<ssize_t>(kFarmChunkBytes));
    off += static_cast<uint64_t>(n);
    a.up += chunk->data().size();
    if (!(a.writeOk = a.stream->Write(c)) || chunk->last())
      break;
  }
  close(fd);
  ++stats.blobsUploaded;
  a.phases.lastBlob = Clock::now();
  return a.fail.empty() && a.writeOk;
}

void FarmClient::beginOutput(Attempt &a, const v1::FarmOutputFile &f) {
  auto d = f.digest().empty() ? std::optional<Digest>(Digest{})
                              : Digest::fromRaw(f.digest());
  if (a.current || f.path().empty() || f.path()[0] != '/' || !d) {
    a.fail = "the farm sent a malformed output";
    return;
  }
  if (a.phases.firstOutput == Clock::time_point())
    a.phases.firstOutput = Clock::now();
  OutputPolicy::Admitted admitted = a.policy.admit(f.path(), f.mode());
  if (admitted.path.empty()) {
    a.fail = admitted.refusal;
    a.rejected = true;
    return;
  }
  Incoming in;
  in.path = admitted.path;
  in.mode = admitted.mode;
  in.size = f.size();
  in.digest = *d;
  in.digestLater = f.digest().empty();
  std::string e;
  in.fd = createTempBeside(in.path, in.tmp, &e, journal);
  if (in.fd < 0) {
    a.fail = "cannot write " + in.path + ": " + e;
    return;
  }
  in.writer = std::make_unique<OutputWriter>(in.fd);
  a.files.push_back(std::move(in));
  a.current = &a.files.back();
}

void FarmClient::receiveOutputData(Attempt &a, v1::FileData &fd) {
  Incoming *current = a.current;
  if (!current) {
    a.fail = "the farm sent file data without a file";
    return;
  }
  stats.bytesDown += fd.data().size();
  std::optional<std::string> raw = fd.compressed()
                                       ? decompressChunk(fd.data())
                                       : std::move(*fd.mutable_data());
  if (!raw || current->written + raw->size() > current->size) {
    a.fail = "the farm sent a malformed chunk of " + current->path;
    return;
  }
  current->written += raw->size();
  if (!current->writer->add(std::move(*raw))) {
    a.fail = "cannot write " + current->path;
    return;
  }
  if (!fd.last())
    return;
  Digest got;
  bool written = current->writer->finish(got);
  current->writer.reset();
  if (!written) {
    a.fail = "cannot write " + current->path;
    return;
  }
  if (current->digestLater) {
    auto d = Digest::fromRaw(fd.digest());
    if (!d) {
      a.fail = "output " + current->path + " came without its digest";
      return;
    }
    current->digest = *d;
  }
  if (current->written != current->size || got != current->digest) {
    a.fail = "output " + current->path + " does not match its digest";
    return;
  }
  current->complete = true;
  a.current = nullptr;
}

// Closes the stream; false (outputs discarded, `error` set) unless the node
// linked to the end and the link may stand as a local one.
bool FarmClient::endStream(Attempt &a) {
  stats.bytesUp += a.up;
  if (a.rejected) {
    ++stats.rejected;
    spdlog::warn("farm: rejected the answer of {}: {}", a.ctx.peer(), a.fail);
  }
  if (!a.fail.empty())
    a.ctx.TryCancel();
  else
    a.stream->WritesDone();
  grpc::Status st = a.stream->Finish();
  const v1::OffloadDone &final = a.final;
  if (!a.fail.empty() || !a.done || a.current || !st.ok() ||
      !final.error().empty()) {
    discard(a.files);
    a.result.error = !a.fail.empty() ? a.fail
                     : st.ok() && final.error().empty()
                         ? "the farm ended the link without a result"
                         : "farm: " + statusName(st.error_code()) + ": " +
                               (st.ok() ? final.error() : st.error_message());
    a.result.retryable =
        a.fail.empty() &&
        (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
         st.error_code() == grpc::StatusCode::CANCELLED ||
         st.error_code() == grpc::StatusCode::INTERNAL ||
         st.error_code() == grpc::StatusCode::UNKNOWN);
    return false;
  }
  stats.blobsSkipped += final.blobs_present();
  if (!final.not_offloadable().empty() || final.term_signal()) {
    discard(a.files);
    if (!final.not_offloadable().empty())
      ++stats.notOffloadable;
    a.result.error =
        final.term_signal()
            ? "the link was killed on the farm by " + final.term_signal_name()
            : "not offloadable: " + final.not_offloadable();
    return false;
  }
  return true;
}

bool FarmClient::commitOutputs(Attempt &a) {
  for (Incoming &f : a.files) {
    std::string e;
    Result::Output o{f.path, f.digest, {}};
    if (!commitTemp(f.fd, f.tmp, f.path, f.mode, &e)) {
      discard(a.files);
      a.result.error = "cannot write " + f.path + ": " + e;
      return false;
    }
    if (fstat(f.fd, &o.st) == 0)
      a.result.outputs.push_back(std::move(o));
    close(f.fd);
    f.fd = -1;
  }
  return true;
}

} // namespace linkd

namespace linkd {

int printFarmHealth(bool json) {
  Config settings = loadConfig();
  if (settings.farm.empty()) {
    std::fprintf(stderr, "linkd: no farm configured (LINKD_FARM)\n");
    return 2;
  }
  // Health needs no token (create() reads one only if it is set).
  std::string err;
  auto client = FarmClient::create(settings, nullptr, &err,
                                   /*requireToken=*/false);
  if (!client) {
    std::fprintf(stderr, "linkd: %s\n", err.c_str());
    return 1;
  }
  return client->printHealth(json);
}

int FarmClient::printHealth(bool json) {
  // Every node of an address list, each on a channel of its own (the
  // offload channel would ask one node of its choice); a name the resolver
  // expands (dns:///) is asked once, as the offloads would.
  std::vector<std::string> nodes = addressListOf(settings.farm);
  std::string scheme = settings.farm.substr(0, 5); // ipv4: or ipv6:
  if (nodes.size() < 2)
    nodes = {""}; // the target as it is
  int rc = 0;
  for (const std::string &node : nodes) {
    std::shared_ptr<grpc::Channel> ch =
        node.empty()
            ? channel
            : grpc::CreateCustomChannel(scheme + node, creds, channelArgs);
    auto nodeStub = v1::Farm::NewStub(ch);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(settings.farmConnectTimeoutMs));
    ctx.set_wait_for_ready(true);
    v1::HealthRequest req;
    v1::HealthReply reply;
    grpc::Status st = nodeStub->Health(&ctx, req, &reply);
    std::string name = node.empty() ? settings.farm : node;
    if (!st.ok()) {
      rc = 1;
      if (json)
        std::printf("{\"node\": %s, \"error\": %s}\n", jsonString(name).c_str(),
                    jsonString(st.error_message()).c_str());
      else
        std::fprintf(stderr, "linkd: farm node %s: %s\n", name.c_str(),
                     st.error_message().c_str());
      continue;
    }
    if (json)
      std::printf("{\"node\": %s, \"version\": %s, \"peer\": %s, "
                  "\"jobs\": %u, \"active_links\": %u, \"queued_links\": %u, "
                  "\"links_total\": %llu, \"links_rejected\": %llu, "
                  "\"load_average_1m\": %.2f, \"store_bytes\": %llu, "
                  "\"uptime_seconds\": %llu}\n",
                  jsonString(name).c_str(), jsonString(reply.version()).c_str(),
                  jsonString(ctx.peer()).c_str(), reply.jobs(),
                  reply.active_links(), reply.queued_links(),
                  static_cast<unsigned long long>(reply.links_total()),
                  static_cast<unsigned long long>(reply.links_rejected()),
                  reply.load_average_1m(),
                  static_cast<unsigned long long>(reply.store_bytes()),
                  static_cast<unsigned long long>(reply.uptime_seconds()));
    else
      std::printf("farm node %s (linkd %s, %s)\n  jobs %u, active %u, "
                  "queued %u, links %llu, rejected %llu, load %.2f, store "
                  "%s\n",
                  ctx.peer().c_str(), reply.version().c_str(),
                  reply.lld_version().c_str(), reply.jobs(),
                  reply.active_links(), reply.queued_links(),
                  static_cast<unsigned long long>(reply.links_total()),
                  static_cast<unsigned long long>(reply.links_rejected()),
                  reply.load_average_1m(),
                  formatSize(reply.store_bytes()).c_str());
  }
  return rc;
}

} // namespace linkd
