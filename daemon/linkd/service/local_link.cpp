// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "daemon/linkd/service/local_link.h"

#include "kernel/kernel_wire.h"
#include "wire/link_wire.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace linkd {
namespace {

// A client sends its request right after connecting; one that sends nothing
// for this long gives the thread back.
constexpr auto kRequestWaitMs =
    static_cast<uint32_t>(kConnectionIdleLimit.count());

class FramedReplyStream final : public ReplyStream {
public:
  explicit FramedReplyStream(int fd) : fd(fd) {}
  bool write(const v1::LinkReply &reply) override {
    return !gone && (gone = !wire::sendReply(fd, reply), !gone);
  }
  // The client never half-closes: a hang-up (or an error) is a cancel.
  bool cancelled() override {
    if (gone)
      return true;
    pollfd p{fd, POLLRDHUP, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
      gone = true;
    return gone;
  }

private:
  int fd;
  bool gone = false;
};

} // namespace

Protocol sniffProtocol(int fd, int timeoutMs) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  // Only the first byte is peeked at, after poll says it is there: it tells
  // the two apart (HTTP/2 starts with 'P'), and gRPC's bytes stay unread for
  // it. A peek for the whole magic could not wait in poll once a prefix had
  // arrived (the socket stays readable): it would spin.
  char first;
  if (!kernel::waitReadable(fd, deadline) ||
      recv(fd, &first, 1, MSG_PEEK | MSG_DONTWAIT) != 1)
    return Protocol::Gone;
  if (first != wire::kMagic[0])
    return Protocol::Other;
  // Ours, or nobody's: the magic is read, not peeked.
  char head[wire::kMagic.size()];
  size_t got = 0;
  while (got < sizeof(head)) {
    if (!kernel::waitReadable(fd, deadline))
      return Protocol::Gone;
    ssize_t n = recv(fd, head + got, sizeof(head) - got, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      return Protocol::Gone;
    got += n > 0 ? static_cast<size_t>(n) : 0;
  }
  return std::memcmp(head, wire::kMagic.data(), sizeof(head)) == 0
             ? Protocol::Framed
             : Protocol::Gone;
}

void serveLocalLink(LinkService &service, int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  v1::LinkRequest req;
  if (std::string why = wire::readRequest(fd, kRequestWaitMs, req);
      !why.empty()) {
    spdlog::warn("local client: {}", why);
    wire::sendError(fd, why);
    return;
  }
  FramedReplyStream out(fd);
  grpc::Status st = service.serveRequest(req, out, /*rewriteCall=*/false);
  if (!st.ok() && !out.cancelled())
    wire::sendError(fd, st.error_message());
}

void turnAway(int fd, std::string_view why) {
  wire::sendError(fd, why); // a small frame on a fresh socket: it fits
  close(fd);
}

} // namespace linkd
