// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/reapi/reapi_executor.h"

#include "cache/access_log.h"
#include "daemon/linkd/farm_client/output_policy.h"
#include "daemon/linkd/farm_client/output_writer.h"
#include "link/flavor.h"
#include "linkd/v1/remote_link.pb.h"
#include "store/local_store.h"
#include "util/files.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

namespace linkd::reapi {

namespace {

using Clock = std::chrono::steady_clock;

std::string deterministic(const google::protobuf::MessageLite &m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

// A message as a blob of the action: its bytes and their digest.
UploadBlob messageBlob(const google::protobuf::MessageLite &m) {
  std::string bytes = deterministic(m);
  re::Digest d = digestOf(bytes);
  return {d, std::move(bytes), {}};
}

// An output being received: a temp file beside its destination.
struct Incoming {
  std::string path, tmp;
  uint32_t mode = 0;
  re::Digest digest;
  UniqueFd fd;
};

void discard(std::vector<Incoming> &files) {
  for (Incoming &f : files)
    if (f.fd.valid()) {
      f.fd.reset();
      ::unlink(f.tmp.c_str());
    }
}

const re::FileNode *fileNamed(const re::Directory &dir,
                              const std::string &name) {
  for (const re::FileNode &f : dir.files())
    if (f.name() == name)
      return &f;
  return nullptr;
}

// The DT_SONAME of ELF64 little-endian shared object `path` ("" if none):
// the name the dynamic loader looks for (libcurl.so.4), where the mapped
// file is named by its version (libcurl.so.4.8.0).
std::string sharedObjectName(const std::string &path) {
  auto data = readFile(path, 512 << 20);
  if (!data || data->size() < 64 ||
      data->compare(0, 4,
                    "\x7f"
                    "ELF") != 0 ||
      (*data)[4] != 2 || (*data)[5] != 1)
    return "";
  const std::string &f = *data;
  auto u16 = [&](uint64_t at) -> uint64_t {
    return at + 2 <= f.size() ? static_cast<uint8_t>(f[at]) |
                                    static_cast<uint8_t>(f[at + 1]) << 8
                              : 0;
  };
  auto u64 = [&](uint64_t at) -> uint64_t {
    uint64_t v = 0;
    for (int i = 7; i >= 0 && at + 8 <= f.size(); --i)
      v = v << 8 | static_cast<uint8_t>(f[at + i]);
    return v;
  };
  uint64_t phoff = u64(32), phentsize = u16(54), phnum = u16(56);
  uint64_t dynOff = 0, dynSize = 0;
  std::vector<std::pair<uint64_t, uint64_t>> loads; // vaddr, offset
  std::vector<uint64_t> loadSizes;
  for (uint64_t i = 0; i < phnum && phentsize >= 56; ++i) {
    uint64_t ph = phoff + i * phentsize;
    uint32_t type = static_cast<uint32_t>(u64(ph) & 0xffffffff);
    if (type == 2) { // PT_DYNAMIC
      dynOff = u64(ph + 8);
      dynSize = u64(ph + 32);
    } else if (type == 1) { // PT_LOAD
      loads.emplace_back(u64(ph + 16), u64(ph + 8));
      loadSizes.push_back(u64(ph + 32));
    }
  }
  uint64_t strtab = 0, soname = UINT64_MAX;
  for (uint64_t at = dynOff; at + 16 <= dynOff + dynSize && at + 16 <= f.size();
       at += 16) {
    uint64_t tag = u64(at), val = u64(at + 8);
    if (tag == 0)
      break;
    if (tag == 5) // DT_STRTAB
      strtab = val;
    else if (tag == 14) // DT_SONAME
      soname = val;
  }
  if (soname == UINT64_MAX)
    return "";
  for (size_t i = 0; i < loads.size(); ++i)
    if (strtab >= loads[i].first && strtab < loads[i].first + loadSizes[i]) {
      uint64_t at = strtab - loads[i].first + loads[i].second + soname;
      if (at >= f.size())
        return "";
      std::string name = f.substr(at, f.find('\0', at) - at);
      return name.find('/') == std::string::npos ? name : "";
    }
  return "";
}

// Absolute paths a small text input names: a linker script's GROUP, INPUT
// and AS_NEEDED lists (glibc's libc.so, libm.so). A worker that meets them
// without facts would take them as absent and need another round for each.
std::vector<std::string> scriptPaths(const std::string &path,
                                     const std::vector<std::string> &libDirs) {
  std::vector<std::string> out;
  auto text = readFile(path, 64 << 10);
  if (!text || text->find('\0') != std::string::npos)
    return out; // an object, an archive, or too big to be a script
  // A relative name (libgcc_s.so's `GROUP ( libgcc_s.so.1 -lgcc )`) is
  // looked for beside the script, then in the -L directories: those
  // candidates are described too.
  std::string dir = path.substr(0, path.rfind('/') + 1);
  std::string token;
  for (char c : *text + " ") {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' ||
        c == ',' || c == '"') {
      if (token.size() > 1 && token[0] == '/' && token.find("/*") == token.npos)
        out.push_back(token);
      else if (token.find(".so") != std::string::npos && token[0] != '-' &&
               token.find('/') == std::string::npos) {
        out.push_back(dir + token);
        for (const std::string &d : libDirs)
          out.push_back(d + "/" + token);
      }
      token.clear();
    } else {
      token += c;
    }
  }
  return out;
}

} // namespace

// One offload, from the first round to the outputs in place.
struct Executor::Attempt {
  explicit Attempt(const v1::LinkRequest &req) : req(req), policy(req) {}
  const v1::LinkRequest &req;
  OutputPolicy policy;
  std::vector<v1::PathFact> facts;
  std::map<std::string, size_t> factIndex; // path -> facts[i]
  std::string actionId;
  int round = 0;
  re::ActionResult action;
  re::Tree tree; // the action's output directory (runRound)
  v1::RemoteLinkResult result;
  std::vector<std::string> unknown; // exist here, had no fact there
  Result out;
  uint64_t up = 0;
  // Describes what the small text files among the facts name (linker
  // scripts), and what those name, until nothing new appears.
  void describeScripts(StatCache *statCache) {
    // The -L directories, absolute (GNU ld's spellings).
    std::vector<std::string> libDirs;
    const auto &argv = req.argv();
    for (int i = 1; i < argv.size(); ++i) {
      std::string d;
      if ((argv[i] == "-L" || argv[i] == "--library-path") &&
          i + 1 < argv.size())
        d = argv[i + 1];
      else if (argv[i].starts_with("--library-path="))
        d = argv[i].substr(15);
      else if (argv[i].starts_with("-L") && argv[i].size() > 2)
        d = argv[i].substr(2);
      if (!d.empty() && d[0] != '=')
        libDirs.push_back(d[0] == '/' ? d : req.cwd() + "/" + d);
    }
    for (size_t done = 0; done < facts.size();) {
      std::vector<std::string> named;
      for (size_t end = facts.size(); done < end; ++done)
        if (facts[done].kind() == v1::PathFact::FILE &&
            facts[done].size() <= (64 << 10))
          for (std::string &p : scriptPaths(facts[done].path(), libDirs))
            if (!factIndex.count(p))
              named.push_back(std::move(p));
      std::sort(named.begin(), named.end());
      named.erase(std::unique(named.begin(), named.end()), named.end());
      for (v1::PathFact &f : describePaths(named, statCache))
        addFact(std::move(f));
    }
  }
  void addFact(v1::PathFact f) {
    // A directory's modification time changes with every file made in it
    // and no linker reads it: left out, so the same link is the same
    // action (the cluster's action cache can answer it).
    if (f.kind() == v1::PathFact::DIRECTORY)
      f.clear_mtime_ns();
    auto [it, fresh] = factIndex.emplace(f.path(), facts.size());
    if (fresh)
      facts.push_back(std::move(f));
    else
      facts[it->second] = std::move(f);
  }
};

std::vector<std::string> loadedFiles(int64_t pid) {
  std::vector<std::string> files;
  std::string base = "/proc/" + std::to_string(pid);
  char exe[PATH_MAX];
  ssize_t n = ::readlink((base + "/exe").c_str(), exe, sizeof(exe) - 1);
  if (n <= 0)
    return files;
  files.emplace_back(exe, static_cast<size_t>(n));
  // Read to the end: /proc reports a size of 0 (readFile trusts sizes).
  std::ifstream in(base + "/maps");
  if (!in)
    return {};
  auto maps = std::make_optional<std::string>(
      std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::set<std::string> seen{files[0]};
  size_t pos = 0;
  while (pos < maps->size()) {
    size_t nl = maps->find('\n', pos);
    std::string line =
        maps->substr(pos, nl == std::string::npos ? nl : nl - pos);
    pos = nl == std::string::npos ? maps->size() : nl + 1;
    size_t slash = line.find('/');
    if (slash == std::string::npos)
      continue;
    std::string path = line.substr(slash);
    if (path.find(".so") == std::string::npos || path.ends_with(" (deleted)"))
      continue;
    if (seen.insert(path).second)
      files.push_back(path);
  }
  return files;
}

std::unique_ptr<Executor> Executor::create(const Config &settings,
                                           StatCache *statCache,
                                           std::vector<std::string> toolFiles,
                                           std::string lldVersion,
                                           std::string *error) {
  std::unique_ptr<Executor> e(new Executor(settings, statCache));
  if (!settings.remoteLinker.empty() && settings.remoteLinker[0] != '/') {
    *error = "remote_linker (LINKD_REMOTE_LINKER) must name linkd-lld on the "
             "cluster's workers by an absolute path";
    return nullptr;
  }
  e->toolFiles = std::move(toolFiles);
  e->lldVersion = std::move(lldVersion);
  if (settings.remoteLinker.empty() && e->toolFiles.empty()) {
    *error = "no remote_linker, and this machine's linkd-lld cannot be "
             "shipped (its files are unknown)";
    return nullptr;
  }
  Endpoint base;
  if (!endpointSettings(settings, base, error))
    return nullptr;
  auto parsed = parseEndpoint(settings.remoteExecutor, error);
  if (!parsed)
    return nullptr;
  Endpoint ep = base;
  ep.url = parsed->url;
  ep.target = parsed->target;
  ep.tls = parsed->tls;
  if (!parsed->instanceName.empty())
    ep.instanceName = parsed->instanceName;
  ep.connectTimeout = std::chrono::milliseconds(settings.farmConnectTimeoutMs);
  // Blob transfers of a big link's inputs take longer than a cache tier's
  // lookups are allowed.
  ep.timeout = std::chrono::milliseconds(
      std::max<uint64_t>(settings.remoteTimeoutMs, 120000));
  e->client = Client::create(ep, error);
  if (!e->client)
    return nullptr;
  e->execution = re::Execution::NewStub(e->client->channel());
  return e;
}

bool Executor::toolReady(std::string *error) {
  std::lock_guard lock(toolMu);
  if (!tool.empty())
    return true;
  std::vector<ToolFile> files;
  std::set<std::string> names;
  for (size_t i = 0; i < toolFiles.size(); ++i) {
    const std::string &path = toolFiles[i];
    // Shared objects under the name the loader looks for.
    std::string name = i == 0 ? "linkd-lld" : sharedObjectName(path);
    if (name.empty())
      name = path.substr(path.rfind('/') + 1);
    if (!names.insert(name).second)
      continue; // one library by two paths
    std::string why;
    auto d = sha256File(path, &why);
    if (!d) {
      *error = "cannot ship the linker: " + why;
      return false;
    }
    files.push_back({name, path, toProto(d->digest, d->size),
                     name.starts_with("ld-linux")});
  }
  if (std::none_of(files.begin(), files.end(),
                   [](const ToolFile &f) { return f.loader; })) {
    *error = "cannot ship the linker: its dynamic loader is not among its " +
             std::to_string(files.size()) + " mapped files";
    return false;
  }
  std::sort(
      files.begin(), files.end(),
      [](const ToolFile &x, const ToolFile &y) { return x.name < y.name; });
  tool = std::move(files);
  return true;
}

OffloadTarget::Result
Executor::offload(const v1::LinkRequest &req,
                  const std::vector<std::string> &read,
                  const std::vector<std::string> &probed,
                  const std::vector<std::string> &outputs) {
  InFlight underWay(*this);

  Attempt a(req);
  if (Clock::now().time_since_epoch().count() < downUntilNanos.load()) {
    a.out.error =
        "the cluster " + target() + " failed recently; not trying again yet";
    return std::move(a.out);
  }
  Capabilities caps;
  if (grpc::Status st = client->capabilities(caps);
      !st.ok() || !caps.execution) {
    downUntilNanos =
        (Clock::now() + std::chrono::seconds(10)).time_since_epoch().count();
    a.out.error =
        "the cluster " + target() + " cannot run links: " +
        (st.ok() ? "it does not execute SHA-256 actions"
                 : codeName(st.error_code()) + ": " + st.error_message()) +
        " (not trying again for 10 s)";
    return std::move(a.out);
  }
  // The facts the daemon knows up front: outputs (an old output as absent),
  // what the last link with this key read and probed, the command line's.
  std::set<std::string> seen;
  std::vector<std::string> described;
  for (const std::string &p : outputs)
    if (!p.empty() && p[0] == '/' && seen.insert(p).second)
      a.addFact(describeOutputPath(p, statCache));
  for (const auto *list : {&read, &probed})
    for (const std::string &p : *list)
      if (!p.empty() && p[0] == '/' && seen.insert(p).second)
        described.push_back(p);
  for (v1::PathFact &f : describePaths(described, statCache))
    a.addFact(std::move(f));
  a.describeScripts(statCache);
  for (a.round = 1; a.round <= kMaxRounds; ++a.round) {
    a.unknown.clear();
    if (!runRound(a))
      return std::move(a.out);
    if (a.unknown.empty())
      break;
    if (a.round == kMaxRounds) {
      a.out.error = "the link still needed undescribed paths after " +
                    std::to_string(kMaxRounds) + " rounds (" + a.unknown[0] +
                    ", ...)";
      return std::move(a.out);
    }
    spdlog::debug("remote executor: round {} met {} paths that exist here "
                  "without a fact (first: {}); describing them",
                  a.round, a.unknown.size(), a.unknown.front());
    for (v1::PathFact &f : describePaths(a.unknown, statCache))
      a.addFact(std::move(f));
    a.describeScripts(statCache);
  }
  stats.bytesUp += a.up;
  if (!fetchOutputs(a))
    return std::move(a.out);
  const v1::OffloadDone &d = a.result.done();
  a.out.ok = true;
  a.out.exitCode = d.exit_code();
  a.out.records = d.access_records();
  a.out.wallMicros = d.wall_micros();
  a.out.userMicros = d.user_micros();
  a.out.sysMicros = d.sys_micros();
  a.out.maxRssKib = d.max_rss_kib();
  return std::move(a.out);
}

bool Executor::execute(Attempt &a, const re::Digest &actionDigest) {
  // Execute, following the operation; after a dropped stream, wait on it.
  re::ExecuteRequest ereq;
  ereq.set_instance_name(client->endpoint().instanceName);
  *ereq.mutable_action_digest() = actionDigest;
  std::string opName;
  google::longrunning::Operation op;
  grpc::Status st;
  for (int attempt = 0; attempt < 3 && !op.done(); ++attempt) {
    grpc::ClientContext ctx;
    client->prepare(ctx, std::chrono::milliseconds(settings.farmTimeoutMs),
                    a.actionId);
    std::unique_ptr<grpc::ClientReader<google::longrunning::Operation>> reader;
    if (opName.empty()) {
      reader = execution->Execute(&ctx, ereq);
    } else {
      re::WaitExecutionRequest w;
      w.set_name(opName);
      reader = execution->WaitExecution(&ctx, w);
    }
    google::longrunning::Operation next;
    while (reader->Read(&next)) {
      if (!next.name().empty())
        opName = next.name();
      op = next;
      if (op.done())
        break;
    }
    st = reader->Finish();
    if (op.done() || opName.empty() ||
        (st.error_code() != grpc::StatusCode::UNAVAILABLE &&
         st.error_code() != grpc::StatusCode::OK))
      break;
    ++stats.retries;
  }
  if (!op.done()) {
    a.out.error =
        "Execute: " +
        (st.ok() ? std::string("the stream ended before the action")
                 : codeName(st.error_code()) + ": " + st.error_message());
    return false;
  }
  if (op.has_error()) {
    a.out.error = "Execute: " +
                  codeName(static_cast<grpc::StatusCode>(op.error().code())) +
                  ": " + op.error().message();
    return false;
  }
  re::ExecuteResponse resp;
  if (!op.response().UnpackTo(&resp)) {
    a.out.error = "Execute: the operation holds no ExecuteResponse";
    return false;
  }
  if (resp.status().code() != 0) {
    a.out.error =
        "the action failed: " +
        codeName(static_cast<grpc::StatusCode>(resp.status().code())) + ": " +
        resp.status().message();
    return false;
  }
  a.action = resp.result();
  return true;
}

bool Executor::runRound(Attempt &a) {
  ++stats.roundTrips;
  // The request as the runner reads it: only the variables the linker
  // reads (the process's own name this machine's directories).
  v1::OffloadStart start;
  // Only what the link child uses: the same link from any client is the
  // same action (no settings, client version or base_dir), and the
  // process's own variables (PATH, TMPDIR, HOME) stay here.
  v1::LinkRequest *link = start.mutable_link();
  link->set_protocol_version(a.req.protocol_version());
  link->set_flavor(a.req.flavor());
  *link->mutable_argv() = a.req.argv();
  link->set_cwd(a.req.cwd());
  link->set_umask(a.req.umask());
  link->set_stderr_is_color_tty(a.req.stderr_is_color_tty());
  if (a.req.has_stdin_data())
    link->set_stdin_data(a.req.stdin_data());
  for (const std::string_view name :
       flavorEnvironment(static_cast<Flavor>(a.req.flavor())))
    if (auto it = a.req.env().find(std::string(name)); it != a.req.env().end())
      (*link->mutable_env())[it->first] = it->second;
  for (const v1::PathFact &f : a.facts)
    *start.add_facts() = f;
  UploadBlob request = messageBlob(start);

  // The input root: in/request, in/blobs/<hex> (one per content).
  std::vector<UploadBlob> blobs;
  std::map<std::string, const v1::PathFact *> byHex;
  for (const v1::PathFact &f : a.facts)
    if (f.kind() == v1::PathFact::FILE)
      if (auto d = Digest::fromRaw(f.digest()))
        byHex.emplace(d->hex(), &f);
  re::Directory blobDir;
  for (const auto &[hex, f] : byHex) {
    re::FileNode *n = blobDir.add_files();
    n->set_name(hex);
    *n->mutable_digest() = toProto(*Digest::fromRaw(f->digest()), f->size());
    blobs.push_back({n->digest(), {}, f->path()});
  }
  UploadBlob blobDirBlob = messageBlob(blobDir);
  re::Directory in;
  re::FileNode *req = in.add_files();
  req->set_name("request");
  *req->mutable_digest() = request.digest;
  re::DirectoryNode *bd = in.add_directories();
  bd->set_name("blobs");
  *bd->mutable_digest() = blobDirBlob.digest;
  UploadBlob inBlob = messageBlob(in);
  re::Directory root;
  re::DirectoryNode *inNode = root.add_directories();
  inNode->set_name("in");
  *inNode->mutable_digest() = inBlob.digest;
  re::Command command;
  std::optional<UploadBlob> toolBlob;
  if (settings.remoteLinker.empty()) {
    // This machine's linkd-lld and what it runs with, under tool/.
    if (!toolReady(&a.out.error))
      return false;
    re::Directory toolDir;
    std::string loader;
    for (const ToolFile &f : tool) {
      re::FileNode *n = toolDir.add_files();
      n->set_name(f.name);
      *n->mutable_digest() = f.digest;
      n->set_is_executable(true);
      blobs.push_back({f.digest, {}, f.path});
      if (f.loader)
        loader = f.name;
    }
    toolBlob = messageBlob(toolDir);
    re::DirectoryNode *t = root.add_directories();
    t->set_name("tool");
    *t->mutable_digest() = toolBlob->digest;
    command.add_arguments("tool/" + loader);
    command.add_arguments("--library-path");
    command.add_arguments("tool");
    command.add_arguments("tool/linkd-lld");
  } else {
    command.add_arguments(settings.remoteLinker);
  }
  UploadBlob rootBlob = messageBlob(root);

  Capabilities caps;
  client->capabilities(caps);
  command.add_arguments("remote-link");
  // Results of one LLD are not another's: the action names the one this
  // machine links with (the runner ignores it).
  auto *version = command.add_environment_variables();
  version->set_name("LINKD_LLD_VERSION");
  version->set_value(lldVersion);
  command.add_arguments("in");
  command.add_arguments("out");
  command.add_output_directories("out");
  if (caps.outputPaths())
    command.add_output_paths("out");
  re::Platform platform;
  for (const auto &[name, value] : settings.remotePlatform) {
    auto *p = platform.add_properties();
    p->set_name(name);
    p->set_value(value);
  }
  *command.mutable_platform() = platform;
  UploadBlob commandBlob = messageBlob(command);
  re::Action action;
  *action.mutable_command_digest() = commandBlob.digest;
  *action.mutable_input_root_digest() = rootBlob.digest;
  action.mutable_timeout()->set_seconds(
      static_cast<int64_t>(settings.farmTimeoutMs / 1000));
  *action.mutable_platform() = platform;
  UploadBlob actionBlob = messageBlob(action);
  a.actionId = actionBlob.digest.hash();
  spdlog::debug("remote executor: round {} action {} facts={} request={}",
                a.round, a.actionId, a.facts.size(), request.digest.hash());
  for (UploadBlob *b :
       {&request, &blobDirBlob, &inBlob, &rootBlob, &commandBlob, &actionBlob})
    blobs.push_back(*b); // a copy: the digests are used below
  if (toolBlob)
    blobs.push_back(*toolBlob);

  // Upload what the CAS lacks.
  std::vector<re::Digest> all, missing;
  all.reserve(blobs.size());
  for (const UploadBlob &b : blobs)
    all.push_back(b.digest);
  if (grpc::Status st = client->findMissing(all, missing); !st.ok()) {
    a.out.error = "FindMissingBlobs: " + codeName(st.error_code()) + ": " +
                  st.error_message();
    return false;
  }
  std::set<std::string> want;
  for (const re::Digest &d : missing)
    want.insert(d.hash());
  std::vector<UploadBlob> send;
  for (UploadBlob &b : blobs)
    if (want.count(b.digest.hash()))
      send.push_back(std::move(b));
  stats.blobsSkipped += blobs.size() - send.size();
  stats.blobsUploaded += send.size();
  if (grpc::Status st = client->upload(send, &a.up); !st.ok()) {
    a.out.error =
        "upload: " + codeName(st.error_code()) + ": " + st.error_message();
    return false;
  }

  // The cluster may have run this very action before (another client, or
  // this one before its cache lost the result): its action cache answers
  // without running it again (Bazel's worker never looks there on Execute).
  re::ActionResult cached;
  if (client->getActionResult(actionBlob.digest, {}, cached).ok() &&
      cached.exit_code() == 0) {
    spdlog::info("remote executor {}: action {} answered from the cluster's "
                 "action cache",
                 target(), a.actionId.substr(0, 16));
    a.action = std::move(cached);
  } else if (!execute(a, actionBlob.digest)) {
    return false;
  }
  auto blobText = [&](const std::string &raw, const re::Digest &d) {
    std::string text = raw;
    if (text.empty() && d.size_bytes() > 0 && !client->read(d, text).ok())
      text = "(unreadable)";
    return text;
  };
  a.out.out = blobText(a.action.stdout_raw(), a.action.stdout_digest());
  a.out.err = blobText(a.action.stderr_raw(), a.action.stderr_digest());
  if (a.action.exit_code() != 0) {
    a.out.error = "the worker could not run " +
                  (settings.remoteLinker.empty() ? "the shipped linkd-lld"
                                                 : settings.remoteLinker) +
                  " (exit " + std::to_string(a.action.exit_code()) +
                  "): " + a.out.err.substr(0, 400);
    return false;
  }
  // The runner's result, from the output directory's tree.
  const re::OutputDirectory *outDir = nullptr;
  for (const re::OutputDirectory &d : a.action.output_directories())
    if (d.path() == "out")
      outDir = &d;
  std::string treeBytes;
  if (!outDir || !client->read(outDir->tree_digest(), treeBytes).ok() ||
      !a.tree.ParseFromString(treeBytes)) {
    a.out.error = "the action returned no readable output directory";
    return false;
  }
  const re::FileNode *resultNode = fileNamed(a.tree.root(), "result");
  std::string resultBytes;
  if (!resultNode || !client->read(resultNode->digest(), resultBytes).ok() ||
      !a.result.ParseFromString(resultBytes)) {
    a.out.error = "the action returned no readable result";
    return false;
  }
  stats.bytesDown += resultBytes.size() + treeBytes.size();
  if (a.result.lld_version() != lldVersion) {
    a.out.error = "the worker's linkd-lld links with " +
                  (a.result.lld_version().empty() ? std::string("another LLD")
                                                  : a.result.lld_version()) +
                  ", this machine's with " + lldVersion;
    return false;
  }
  if (!a.result.done().error().empty()) {
    a.out.error = "the worker gave up: " + a.result.done().error();
    return false;
  }
  // Paths the link met without a fact were absent there: if one exists
  // here, this round saw another file system than a local link would.
  std::vector<std::string> unknown(a.result.unknown_paths().begin(),
                                   a.result.unknown_paths().end());
  for (v1::PathFact &f : describePaths(unknown, statCache)) {
    if (f.kind() != v1::PathFact::ABSENT && !a.factIndex.count(f.path()))
      a.unknown.push_back(f.path());
    else if (f.kind() == v1::PathFact::ABSENT)
      a.addFact(std::move(f)); // absent here too: as the link saw it
  }
  // The files/ directory: each output's content, by index.
  a.out.outputs.clear();
  return true;
}

bool Executor::reject(Attempt &a, const std::string &why) {
  ++stats.rejected;
  spdlog::warn("remote executor {}: rejected the answer: {}", target(), why);
  a.out.error = why;
  return false;
}

bool Executor::fetchOutputs(Attempt &a) {
  AccessLog log = parseAccessLog(a.result.done().access_records());
  if (!log.uncacheable.empty()) {
    ++stats.notOffloadable;
    a.out.error = "not offloadable: " + log.uncacheable.front();
    return false;
  }
  // The records the cache will store must describe this machine's files:
  // every path the worker says the link read, saw or missed is one this
  // link described, as that kind (a worker cannot make the cache believe
  // a link read less than it did, or something else).
  auto kindOf = [&](const std::string &p) {
    auto it = a.factIndex.find(p);
    return it == a.factIndex.end() ? -1 : a.facts[it->second].kind();
  };
  for (const std::string &p : log.read)
    if (kindOf(p) != v1::PathFact::FILE && kindOf(p) != v1::PathFact::DIRECTORY)
      return reject(a, "the worker says the link read " + p +
                           ", which it was not given");
  for (const std::string &p : log.existing)
    if (kindOf(p) != v1::PathFact::FILE && kindOf(p) != v1::PathFact::DIRECTORY)
      return reject(a,
                    "the worker says " + p + " exists, which it was not told");
  for (const std::string &p : log.missing)
    if (kindOf(p) != v1::PathFact::ABSENT)
      return reject(a, "the worker says " + p +
                           " is absent, which it is not here");
  if (a.result.done().term_signal()) {
    a.out.error = "the link was killed on the worker by " +
                  a.result.done().term_signal_name();
    return false;
  }
  // files/<i> in the tree: the digests the runner reported, and no others.
  const re::Directory *files = nullptr;
  for (const re::DirectoryNode &n : a.tree.root().directories())
    if (n.name() == "files")
      for (const re::Directory &child : a.tree.children())
        if (digestOf(deterministic(child)).hash() == n.digest().hash())
          files = &child;
  if (!files && a.result.outputs_size() > 0) {
    a.out.error = "the action returned no files directory";
    return false;
  }
  std::vector<Incoming> incoming;
  for (int i = 0; i < a.result.outputs_size(); ++i) {
    const v1::FarmOutputFile &o = a.result.outputs(i);
    const re::FileNode *node = fileNamed(*files, std::to_string(i));
    auto d = Digest::fromRaw(o.digest());
    if (!node || !d || node->digest().hash() != d->hex() ||
        static_cast<uint64_t>(node->digest().size_bytes()) != o.size()) {
      discard(incoming);
      a.out.error = "output " + o.path() + " does not match its digest";
      return false;
    }
    OutputPolicy::Admitted admitted = a.policy.admit(o.path(), o.mode());
    if (admitted.path.empty()) {
      discard(incoming);
      return reject(a, admitted.refusal);
    }
    Incoming in;
    in.path = admitted.path;
    in.mode = admitted.mode;
    in.digest = node->digest();
    std::string e;
    in.fd = UniqueFd(createTempBeside(in.path, in.tmp, &e, journal));
    if (!in.fd.valid()) {
      discard(incoming);
      a.out.error = "cannot write " + in.path + ": " + e;
      return false;
    }
    OutputWriter writer(in.fd.get());
    grpc::Status st = client->stream(in.digest, [&](std::string_view piece) {
      stats.bytesDown += piece.size();
      return writer.add(std::string(piece));
    });
    Digest got;
    bool written = writer.finish(got);
    incoming.push_back(std::move(in));
    if (!st.ok() || !written || got != *d) {
      discard(incoming);
      a.out.error = "output " + o.path() + ": " +
                    (st.ok() ? "cannot write it" : st.error_message());
      return false;
    }
  }
  for (Incoming &f : incoming) {
    std::string e;
    Result::Output o{f.path, *fromProto(f.digest), {}};
    if (!commitTemp(f.fd.get(), f.tmp, f.path, f.mode, &e)) {
      discard(incoming);
      a.out.error = "cannot write " + f.path + ": " + e;
      return false;
    }
    if (fstat(f.fd.get(), &o.st) == 0)
      a.out.outputs.push_back(std::move(o));
    f.fd.reset();
  }
  return true;
}

} // namespace linkd::reapi
