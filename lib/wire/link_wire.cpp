// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "wire/link_wire.h"

#include "kernel/kernel_wire.h"

namespace linkd::wire {

bool sendRequest(int fd, const v1::LinkRequest &req) {
  std::string body;
  if (!req.SerializeToString(&body))
    return false;
  // One writev: magic, then the frame (its length prefix, type, body).
  std::string head(kMagic);
  uint32_t n = static_cast<uint32_t>(body.size() + 1);
  for (int i = 0; i < 4; ++i)
    head.push_back(static_cast<char>(n >> (8 * i)));
  head.push_back(MsgRequest);
  return kernel::writeRaw(fd, {head, body});
}

bool sendReply(int fd, const v1::LinkReply &reply) {
  std::string body;
  if (!reply.SerializeToString(&body))
    return false;
  char type = MsgReply;
  return kernel::writeFrame(fd, {std::string_view(&type, 1), body});
}

bool sendError(int fd, std::string_view message) {
  char type = MsgError;
  return kernel::writeFrame(fd, {std::string_view(&type, 1), message});
}

bool readReply(int fd, uint32_t timeoutMs, v1::LinkReply &reply,
               std::string &error) {
  std::string payload;
  if (!kernel::readFrame(fd, payload, timeoutMs))
    return false;
  std::string_view body = std::string_view(payload).substr(1);
  if (payload[0] == MsgError) {
    error = body.empty() ? "(no message)" : std::string(body);
    return true;
  }
  return payload[0] == MsgReply &&
         reply.ParseFromArray(body.data(), static_cast<int>(body.size()));
}

std::string readRequest(int fd, uint32_t timeoutMs, v1::LinkRequest &req) {
  std::string payload;
  if (!kernel::readFrame(fd, payload, timeoutMs, kMaxRequestBytes))
    return "no request (closed, timed out, or larger than " +
           std::to_string(kMaxRequestBytes >> 20) + " MiB)";
  if (payload[0] != MsgRequest)
    return "not a request frame";
  std::string_view body = std::string_view(payload).substr(1);
  if (!req.ParseFromArray(body.data(), static_cast<int>(body.size())))
    return "a request that does not parse";
  return {};
}

} // namespace linkd::wire
