// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A sandboxed link's view of its client's file system: on a farm node (the
// client's machine), for a kernel link (the caller's named blobs,
// daemon/linkd/service/kernel_link.cpp), and on a Remote Execution API
// worker (`linkd-lld remote-link`, the input root).
//
// The sandboxed link child asks questions (lib/child/sandbox_protocol.h); this
// class answers them from the facts the client sent (path -> absent, file with
// digest, directory), and keeps the files the link writes in a scratch
// directory of the link's own. A question it cannot answer yet names what is
// missing: the fact for a path (ask the client) or the content of a blob
// (ask for an upload). Nothing here ever resolves a client path on the
// host's file system: real paths handed to the child are blob files, files
// in the scratch directory, or an empty stand-in directory.
// Used by one thread (the link's handler).
#pragma once

#include "child/sandbox_protocol.h"
#include "digest/digest.h"
#include "linkd/v1/farm.pb.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace linkd {

// Where blob contents are: files named by digest (a farm node's store,
// blob_store.h; an REAPI input root's blobs/ directory).
struct BlobFiles {
  // Whether blob `d` is there and may serve this link (a farm node asks
  // its owners too, blob_owners.h); one that may not is asked for like a
  // missing one.
  std::function<bool(const Digest &)> has;
  std::function<std::string(const Digest &)> pathOf;
};

class SandboxView {
public:
  SandboxView(BlobFiles blobs, std::string scratchDir);

  // Creates the scratch directory; "" or why not. The owner removes it
  // (daemon/linkd/farm_node/scratch_janitor.h).
  std::string open();

  void addFact(const v1::PathFact &fact);
  bool knows(const std::string &path) const;
  // Whether `path` is a directory the view was told of (a fact).
  bool knowsDirectory(const std::string &path) const;
  const std::string &scratchDir() const { return scratch; }
  size_t size() const { return entries.size(); }

  struct Question {
    char op = 0;
    std::string path, path2;
  };
  // Parses one message from the child; nullopt if malformed.
  static std::optional<Question> parse(std::string_view msg);

  struct Answer {
    bool ready = false;             // else: one of the needs below is set
    std::string needPath;           // the client must describe this path
    std::optional<Digest> needBlob; // the client must upload this blob
    sandbox::SandboxReply reply;
    std::string real;           // node path for the child to open
    std::optional<Digest> blob; // a read served from the node's store
  };
  Answer answer(const Question &q);

  // Digests of files the client described as likely read whose content the
  // node lacks.
  std::vector<Digest> missingBlobs();

  struct Output {
    std::string path; // the client's path
    std::string real; // the file in the scratch directory
  };
  // The files the link wrote, under their final names.
  std::vector<Output> outputs() const;

private:
  struct Entry {
    enum State { Fact, Written, Gone } state = Fact;
    v1::PathFact fact;
    std::string real; // Written: the scratch file
  };
  Answer statAnswer(const std::string &path);
  Answer readAnswer(const std::string &path);
  Answer writeAnswer(const std::string &path);
  Answer renameAnswer(const std::string &from, const std::string &to);
  Answer unlinkAnswer(const std::string &path);
  Answer chmodAnswer(const std::string &path, const std::string &mode);

  bool have(const Digest &d) { return blobs.has(d); }
  BlobFiles blobs;
  std::string scratch;
  std::map<std::string, Entry> entries;
  unsigned nextOutput = 0;
};

} // namespace linkd
