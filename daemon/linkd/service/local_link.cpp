#include "daemon/linkd/service/local_link.h"

#include "wire/link_wire.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace linkd {
namespace {

// A client sends its request right after connecting; one that sends nothing
// for this long gives the thread back.
constexpr uint32_t kRequestWaitMs = 30000;

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
  char head[wire::kMagic.size()];
  for (;;) {
    ssize_t n = recv(fd, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
      return Protocol::Gone;
    if (n > 0 && std::memcmp(head, wire::kMagic.data(), n) != 0)
      return Protocol::Other;
    if (n == static_cast<ssize_t>(sizeof(head)))
      break;
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return Protocol::Gone;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      return n > 0 ? Protocol::Other : Protocol::Gone;
    // A prefix of the magic arrived alone (the socket stays readable, so
    // poll would not wait): sleep a little for the rest.
    pollfd p{fd, POLLIN, 0};
    if (n > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    else
      poll(&p, 1, static_cast<int>(left));
  }
  return recv(fd, head, sizeof(head), 0) == sizeof(head) ? Protocol::Framed
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

} // namespace linkd
