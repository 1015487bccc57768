// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Where one Link request's replies go, and how the daemon learns that the
// client went away: a gRPC stream (`linkd` CLI, the remote API), or the thin
// client's framed connection (local_link.h). The request path
// (link_request.cpp) writes to this and never to a transport.
#pragma once

#include "linkd/v1/linkd.pb.h"

#include <grpcpp/grpcpp.h>

namespace linkd {

class ReplyStream {
public:
  virtual ~ReplyStream() = default;
  // False once the client is gone (the link is then cancelled).
  virtual bool write(const v1::LinkReply &reply) = 0;
  // True when the client cancelled, hung up, or its deadline passed.
  virtual bool cancelled() = 0;
};

class GrpcReplyStream final : public ReplyStream {
public:
  GrpcReplyStream(grpc::ServerContext *ctx,
                  grpc::ServerWriter<v1::LinkReply> *writer)
      : ctx(ctx), writer(writer) {}
  bool write(const v1::LinkReply &reply) override {
    return writer->Write(reply);
  }
  bool cancelled() override { return ctx->IsCancelled(); }

private:
  grpc::ServerContext *ctx;
  grpc::ServerWriter<v1::LinkReply> *writer;
};

} // namespace linkd
