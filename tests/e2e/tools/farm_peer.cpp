// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// farm_peer: the other side of a farm connection, for the e2e tests. It
// speaks the Farm protocol (proto/linkd/v1/farm.proto) the way a hostile
// peer would, so a test can check what a node or a client does with it.
//
//   farm_peer offload TARGET CA TOKEN REQUEST.json [FILE...]
//       A farm client: sends OffloadStart with the LinkRequest read from
//       REQUEST.json (protobuf JSON), answers questions about the absolute
//       paths FILE... with their content (FILE `--all`: every regular file
//       of this machine, as a real client would), with FILEs, about
//       directories with what they are, and every other with "absent",
//       prints `status=CODE message` (CODE as grpc::StatusCode) and the
//       linker's stderr. CA "-" speaks plaintext.
//   farm_peer stall TARGET CA TOKEN REQUEST.json
//       The same, but never answers a question nor closes; prints the status
//       the node ends the call with.
//   farm_peer trickle TARGET CA TOKEN REQUEST.json FILE...
//       The same as offload, but sends the content of a blob the node asks
//       for one byte a second, and never its end.
//   farm_peer lie TARGET CA TOKEN REQUEST.json FILE...
//       The same as offload, but every blob's content with its first byte
//       flipped (the node must refuse the upload's digest).
//   farm_peer overlap TARGET CA TOKEN REQUEST.json FILE...
//       The same as offload, but each blob in two chunks whose offsets
//       overlap while their bytes, as streamed, hash to its digest (the
//       node must refuse the second chunk).
//   farm_peer no-read TARGET CA TOKEN REQUEST.json FILE...
//       The same as offload, but once the node sends an output file, reads
//       nothing more for 10 s.
//   farm_peer facts TARGET TOKEN N
//       Sends (plaintext) an OffloadStart with N nameless directory facts;
//       prints the status.
//   farm_peer info TARGET
//       One Linkd.Info call to a local daemon (e.g. unix:/path/linkd.sock),
//       as whoever runs it; prints `status=CODE message`.
//   farm_peer local SOCKET REQUEST.json
//       A thin client of a local daemon, on its framed wire
//       (lib/wire/link_wire.h): sends the LinkRequest read from REQUEST.json
//       as it is, prints `error=MESSAGE` for a refusal or `exit=CODE` when
//       the link is done.
//   farm_peer fake-node PORT MODE
//       A farm node on 127.0.0.1:PORT (plaintext) that runs nothing and
//       answers every link with one output and exit status 0. MODE says
//       which output: `abs:PATH` (that absolute path), `setuid` (the -o
//       output, mode 04755), `path:REL` (cwd/REL). Runs until killed.
#include "linkd/v1/farm.grpc.pb.h"
#include "linkd/v1/linkd.grpc.pb.h"
#include "wire/link_wire.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <openssl/sha.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

namespace v1 = linkd::v1;

namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string sha256(const std::string &data) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char *>(data.data()), data.size(), d);
  return std::string(reinterpret_cast<char *>(d), sizeof(d));
}

struct File {
  std::string content, digest;
};

int client(const std::string &mode, const std::string &target,
           const std::string &ca, const std::string &token,
           const std::string &requestFile, std::map<std::string, File> files) {
  bool stall = mode == "stall";
  v1::OffloadUp first;
  auto st = google::protobuf::util::JsonStringToMessage(
      slurp(requestFile), first.mutable_start()->mutable_link());
  if (!st.ok()) {
    std::fprintf(stderr, "farm_peer: %s: %s\n", requestFile.c_str(),
                 std::string(st.message()).c_str());
    return 2;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (ca == "-") {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = slurp(ca);
    creds = grpc::SslCredentials(ssl);
  }
  auto stub = v1::Farm::NewStub(grpc::CreateChannel(target, creds));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::seconds(120));
  ctx.AddMetadata("authorization", "Bearer " + token);
  auto stream = stub->Offload(&ctx);
  stream->Write(first);
  std::string err;
  v1::OffloadDown m;
  std::map<std::string, std::string> byDigest; // digest -> content
  bool everyFile = files.erase("--all") > 0;
  for (const auto &[path, f] : files)
    byDigest[f.digest] = f.content;
  while (stream->Read(&m)) {
    if (m.has_need_paths() && !stall) {
      v1::OffloadUp a;
      for (const std::string &p : m.need_paths().paths()) {
        v1::PathFact *f = a.mutable_facts()->add_facts();
        f->set_path(p);
        auto known = files.find(p);
        struct stat st{};
        if (known == files.end() && everyFile && stat(p.c_str(), &st) == 0 &&
            S_ISREG(st.st_mode)) {
          File loaded{slurp(p), ""};
          loaded.digest = sha256(loaded.content);
          byDigest[loaded.digest] = loaded.content;
          known = files.emplace(p, loaded).first;
        }
        if (known == files.end() && stat(p.c_str(), &st) == 0 &&
            S_ISDIR(st.st_mode) && !files.empty()) {
          f->set_kind(v1::PathFact::DIRECTORY);
          f->set_mode(st.st_mode);
          continue;
        }
        if (known == files.end()) {
          f->set_kind(v1::PathFact::ABSENT);
          f->set_error(2);
          continue;
        }
        f->set_kind(v1::PathFact::FILE);
        f->set_digest(known->second.digest);
        f->set_size(known->second.content.size());
        f->set_mode(0100644);
      }
      stream->Write(a);
    } else if (m.has_need_blobs() && !stall) {
      for (const v1::BlobWant &w : m.need_blobs().blobs()) {
        auto known = byDigest.find(w.digest());
        if (known == byDigest.end())
          continue;
        std::string content = known->second;
        if (mode == "lie" && !content.empty())
          content[0] ^= 1;
        if (mode == "overlap" && content.size() > 2) {
          size_t half = content.size() / 2;
          for (auto [at, from] : {std::pair<size_t, size_t>{0, 0},
                                  std::pair<size_t, size_t>{half - 1, half}}) {
            v1::OffloadUp c;
            c.mutable_blob()->set_digest(w.digest());
            c.mutable_blob()->set_offset(at);
            c.mutable_blob()->set_data(from ? content.substr(from)
                                            : content.substr(0, half));
            c.mutable_blob()->set_last(from != 0);
            stream->Write(c);
          }
          continue;
        }
        for (size_t off = w.offset();;) {
          size_t n = mode == "trickle" ? 1 : size_t(1) << 20;
          n = std::min(n, content.size() - off);
          v1::OffloadUp c;
          c.mutable_blob()->set_digest(w.digest());
          c.mutable_blob()->set_offset(off);
          c.mutable_blob()->set_data(content.substr(off, n));
          off += n;
          if (mode == "trickle") {
            if (!stream->Write(c))
              break;
            std::this_thread::sleep_for(std::chrono::seconds(1));
            continue; // never the last byte's chunk
          }
          c.mutable_blob()->set_last(off == content.size());
          stream->Write(c);
          if (off == content.size())
            break;
        }
      }
    } else if (m.has_file() && mode == "no-read") {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      err += "resumed reading\n";
    } else if (m.has_output()) {
      err += m.output().data();
    } else if (m.has_done()) {
      if (!m.done().error().empty())
        err += "done.error: " + m.done().error() + "\n";
      std::printf("exit_code=%d\n", m.done().exit_code());
      stream->WritesDone();
    }
  }
  grpc::Status s = stream->Finish();
  std::printf("status=%d %s\n%s", static_cast<int>(s.error_code()),
              s.error_message().c_str(), err.c_str());
  return 0;
}

// An OffloadStart with `n` nameless directory facts (4 bytes each on the
// wire).
int facts(const std::string &target, const std::string &token, long n) {
  v1::OffloadUp first;
  v1::LinkRequest *link = first.mutable_start()->mutable_link();
  link->set_protocol_version(1);
  link->set_flavor(v1::FLAVOR_ELF);
  link->add_argv("ld.lld");
  link->set_cwd("/");
  for (long i = 0; i < n; ++i)
    first.mutable_start()->add_facts()->set_kind(v1::PathFact::DIRECTORY);
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto stub = v1::Farm::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  ctx.AddMetadata("authorization", "Bearer " + token);
  auto stream = stub->Offload(&ctx);
  stream->Write(first);
  stream->WritesDone();
  v1::OffloadDown m;
  while (stream->Read(&m)) {
  }
  grpc::Status s = stream->Finish();
  std::printf("status=%d %s\n", static_cast<int>(s.error_code()),
              s.error_message().c_str());
  return 0;
}

// The -o output of a GNU-style argv (enough for the tests' links).
std::string outputOf(const v1::LinkRequest &req) {
  for (int i = 1; i < req.argv_size(); ++i) {
    if (req.argv(i - 1) == "-o")
      return req.argv(i);
    if (req.argv(i).starts_with("-o") && req.argv(i).size() > 2)
      return req.argv(i).substr(2);
  }
  return "a.out";
}

class FakeNode final : public v1::Farm::Service {
public:
  explicit FakeNode(std::string mode) : mode(std::move(mode)) {}
  grpc::Status Offload(grpc::ServerContext *,
                       grpc::ServerReaderWriter<v1::OffloadDown, v1::OffloadUp>
                           *stream) override {
    v1::OffloadUp first;
    if (!stream->Read(&first) || !first.has_start())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no start");
    const v1::LinkRequest &req = first.start().link();
    std::string out = outputOf(req);
    std::string path = out[0] == '/' ? out : req.cwd() + "/" + out;
    uint32_t mode = 0755;
    if (this->mode.starts_with("abs:"))
      path = this->mode.substr(4);
    else if (this->mode.starts_with("path:"))
      path = req.cwd() + "/" + this->mode.substr(5);
    else if (this->mode == "setuid")
      mode = 04755;
    std::string content = "#!/bin/sh\necho owned\n";
    v1::OffloadDown m;
    v1::FarmOutputFile *f = m.mutable_file();
    f->set_path(path);
    f->set_mode(mode);
    f->set_size(content.size());
    f->set_digest(sha256(content));
    stream->Write(m);
    v1::OffloadDown d;
    d.mutable_file_data()->set_data(content);
    d.mutable_file_data()->set_last(true);
    stream->Write(d);
    v1::OffloadDown done;
    done.mutable_done()->set_exit_code(0);
    stream->Write(done);
    while (stream->Read(&first)) {
    }
    return grpc::Status::OK;
  }

private:
  std::string mode;
};

int fakeNode(const std::string &port, const std::string &mode) {
  FakeNode service(mode);
  grpc::ServerBuilder b;
  b.AddListeningPort("127.0.0.1:" + port, grpc::InsecureServerCredentials());
  b.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (!server)
    return 1;
  server->Wait();
  return 0;
}

int info(const std::string &target) {
  auto stub = v1::Linkd::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::InfoRequest req;
  v1::InfoReply reply;
  grpc::Status s = stub->Info(&ctx, req, &reply);
  std::printf("status=%d %s\n", static_cast<int>(s.error_code()),
              s.error_message().c_str());
  return 0;
}

} // namespace

int local(const std::string &socketPath, const std::string &requestFile) {
  v1::LinkRequest req;
  auto st =
      google::protobuf::util::JsonStringToMessage(slurp(requestFile), &req);
  if (!st.ok()) {
    std::fprintf(stderr, "farm_peer: %s: %s\n", requestFile.c_str(),
                 std::string(st.message()).c_str());
    return 2;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socketPath.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  if (fd < 0 ||
      ::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
      !linkd::wire::sendRequest(fd, req)) {
    std::perror("farm_peer: connect");
    return 2;
  }
  for (;;) {
    v1::LinkReply reply;
    std::string error;
    if (!linkd::wire::readReply(fd, 60000, reply, error)) {
      std::printf("hangup\n");
      return 0;
    }
    if (!error.empty()) {
      std::printf("error=%s\n", error.c_str());
      return 0;
    }
    if (reply.has_done()) {
      std::printf("exit=%d\n", reply.done().exit_code());
      return 0;
    }
  }
}

int main(int argc, char **argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if ((cmd == "offload" || cmd == "stall" || cmd == "trickle" ||
       cmd == "no-read" || cmd == "lie" || cmd == "overlap") &&
      argc >= 6) {
    std::map<std::string, File> files;
    for (int i = 6; i < argc; ++i) {
      File f{std::string(argv[i]) == "--all" ? "" : slurp(argv[i]), ""};
      f.digest = sha256(f.content);
      files[argv[i]] = f;
    }
    return client(cmd, argv[2], argv[3], argv[4], argv[5], files);
  }
  if (cmd == "facts" && argc == 5)
    return facts(argv[2], argv[3], std::atol(argv[4]));
  if (cmd == "local" && argc == 4)
    return local(argv[2], argv[3]);
  if (cmd == "info" && argc == 3)
    return info(argv[2]);
  if (cmd == "fake-node" && argc == 4)
    return fakeNode(argv[2], argv[3]);
  std::fprintf(stderr, "usage: see tests/e2e/tools/farm_peer.cpp\n");
  return 2;
}
