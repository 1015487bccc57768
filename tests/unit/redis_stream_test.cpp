// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The Redis tier's streaming read of a large blob (pipelined GETRANGE pieces
// whose replies are read straight from the socket), against a scripted
// server: replies cut at any byte, error replies, short and over-long
// bodies, garbage, a server that stops answering. Each must end as Hit with
// exactly the value's bytes, or as Error/Timeout with the connection not
// reused, never as bytes that were not sent.
#include "store/remote_backend.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace linkd {
namespace {

using namespace std::chrono_literals;

// How the server answers one GETRANGE of the body (not the 0..0 probe):
// the reply bytes it sends, given the range's true slice.
using Answer =
    std::function<std::string(long long from, const std::string &slice)>;

// An answer ending in kClose sends what comes before it and closes the
// connection; kStall sends nothing and never answers.
const std::string kClose = "\x01close", kStall = "\x01stall";

std::string bulk(const std::string &s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

class FakeRedis {
public:
  FakeRedis(std::string value, Answer answer, size_t cut = 0)
      : value(std::move(value)), answer(std::move(answer)), cut(cut) {
    char tmpl[] = "/tmp/linkd-fake-redis.XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/r.sock";
    listener = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path.copy(a.sun_path, sizeof a.sun_path - 1);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listener, 8), 0);
    thread = std::thread([this] { serve(); });
  }
  ~FakeRedis() {
    stop = true;
    thread.join();
    close(listener);
    unlink(path.c_str());
    rmdir(dir.c_str());
  }

  std::string url() const { return "redis+unix://" + path; }
  int connections() const { return accepted.load(); }
  int commands() const { return served.load(); }

private:
  void serve() {
    std::vector<int> clients;
    while (!stop) {
      std::vector<pollfd> fds{{listener, POLLIN, 0}};
      for (int c : clients)
        fds.push_back({c, POLLIN, 0});
      if (poll(fds.data(), fds.size(), 20) <= 0)
        continue;
      if (fds[0].revents & POLLIN) {
        clients.push_back(accept(listener, nullptr, nullptr));
        ++accepted;
      }
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents & (POLLIN | POLLHUP))
          if (!command(fds[i].fd)) {
            close(fds[i].fd);
            std::erase(clients, fds[i].fd);
          }
    }
    for (int c : clients)
      close(c);
  }

  // Reads one RESP command array and answers it; false: the client left.
  bool command(int fd) {
    std::string line;
    auto readLine = [&](std::string &out) {
      out.clear();
      char ch;
      while (read(fd, &ch, 1) == 1) {
        if (ch == '\n' && !out.empty() && out.back() == '\r') {
          out.pop_back();
          return true;
        }
        out += ch;
      }
      return false;
    };
    if (!readLine(line) || line.empty() || line[0] != '*')
      return false;
    std::vector<std::string> args(std::stoul(line.substr(1)));
    for (std::string &a : args) {
      if (!readLine(line) || line[0] != '$')
        return false;
      a.resize(std::stoul(line.substr(1)) + 2);
      size_t got = 0;
      while (got < a.size()) {
        ssize_t n = read(fd, a.data() + got, a.size() - got);
        if (n <= 0)
          return false;
        got += static_cast<size_t>(n);
      }
      a.resize(a.size() - 2);
    }
    ++served;
    std::string reply;
    if (args[0] == "STRLEN") {
      reply = ":" + std::to_string(value.size()) + "\r\n";
    } else if (args[0] == "GETRANGE") {
      long long from = std::stoll(args[2]), to = std::stoll(args[3]);
      std::string slice = value.substr(
          static_cast<size_t>(from),
          static_cast<size_t>(std::min<long long>(
              to - from + 1, static_cast<long long>(value.size()) - from)));
      reply = from == 0 && to == 0 ? bulk(slice) : answer(from, slice);
    } else {
      reply = "-ERR unknown command\r\n";
    }
    if (reply == kStall)
      return true;
    bool closeAfter = reply.ends_with(kClose);
    if (closeAfter)
      reply.resize(reply.size() - kClose.size());
    // Sent in pieces of `cut` bytes (0: at once), so that headers and bodies
    // arrive split anywhere.
    for (size_t at = 0; at < reply.size();) {
      size_t n = cut ? std::min(cut, reply.size() - at) : reply.size() - at;
      ssize_t w = send(fd, reply.data() + at, n, MSG_NOSIGNAL);
      if (w <= 0)
        return false;
      at += static_cast<size_t>(w);
    }
    return !closeAfter;
  }

  std::string value;
  Answer answer;
  size_t cut;
  std::string dir, path;
  int listener = -1;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<int> accepted{0}, served{0};
};

std::string bigValue(size_t n) {
  std::string v(n + 1, '\0');
  v[0] = 'r'; // linkd's raw-value format byte
  uint32_t x = 12345;
  for (size_t i = 1; i < v.size(); ++i) {
    x = x * 1103515245 + 12345;
    v[i] = static_cast<char>(x >> 16);
  }
  return v;
}

struct Streamed {
  std::unique_ptr<RemoteBackend> backend; // its pool holds the connection
  RemoteStatus status = RemoteStatus::Error;
  std::string bytes;
  std::string error;
};

Streamed stream(const FakeRedis &server, std::chrono::milliseconds timeout) {
  std::string err;
  auto cfg = parseRemoteUrl(server.url(), &err);
  EXPECT_TRUE(cfg) << err;
  cfg->timeout = timeout;
  Streamed s;
  s.backend = makeRedisBackend(*cfg);
  // The fake serves one value whatever the key.
  s.status = s.backend->streamBlob(Digest{}, kSizeUnknown,
                                   [&](std::string_view piece) {
                                     s.bytes.append(piece);
                                     return true;
                                   });
  s.error = s.backend->lastError();
  return s;
}

const Answer kHonest = [](long long, const std::string &slice) {
  return bulk(slice);
};

TEST(RedisStream, PiecesSplitAnywhereArriveWhole) {
  std::string v = bigValue((5u << 20) + 123);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{65536 + 3}}) {
    if (cut == 1) {
      // A byte at a time costs a syscall per byte: a smaller value.
      std::string small = bigValue(300000);
      FakeRedis server(small, kHonest, cut);
      Streamed s = stream(server, 5s);
      EXPECT_EQ(s.status, RemoteStatus::Hit);
      EXPECT_TRUE(s.bytes == small.substr(1)) << "cut " << cut;
      continue;
    }
    FakeRedis server(v, kHonest, cut);
    Streamed s = stream(server, 5s);
    EXPECT_EQ(s.status, RemoteStatus::Hit) << s.error;
    EXPECT_EQ(s.bytes.size(), v.size() - 1);
    EXPECT_TRUE(s.bytes == v.substr(1)) << "cut " << cut;
    // The connection went back to the pool clean: the next read uses it.
    std::string again;
    EXPECT_EQ(s.backend->streamBlob(Digest{}, kSizeUnknown,
                                    [&](std::string_view p) {
                                      again.append(p);
                                      return true;
                                    }),
              RemoteStatus::Hit);
    EXPECT_TRUE(again == s.bytes);
    EXPECT_EQ(server.connections(), 1);
  }
}

TEST(RedisStream, AnErrorReplyMidStreamFailsAndDropsTheConnection) {
  std::string v = bigValue(6u << 20);
  FakeRedis server(v, [](long long from, const std::string &slice) {
    return from > (2 << 20) ? std::string("-NOPERM no permissions\r\n")
                            : bulk(slice);
  });
  Streamed s = stream(server, 5s);
  EXPECT_EQ(s.status, RemoteStatus::Error);
  EXPECT_NE(s.error.find("NOPERM"), std::string::npos) << s.error;
  EXPECT_LT(s.bytes.size(), v.size() - 1);
  // Replies were still in flight: the next request opens a new connection.
  std::string out;
  s.backend->getBlob(Digest{}, kSizeUnknown, out);
  EXPECT_EQ(server.connections(), 2);
}

TEST(RedisStream, ShortLongAndGarbageRepliesFail) {
  std::string v = bigValue(5u << 20);
  const std::vector<std::pair<const char *, Answer>> cases = {
      {"closed mid-body",
       [](long long, const std::string &slice) {
         return std::string("$") + std::to_string(slice.size()) + "\r\n" +
                slice.substr(0, 1000) + kClose;
       }},
      {"a longer piece than asked",
       [](long long, const std::string &slice) { return bulk(slice + slice); }},
      {"a piece of a terabyte",
       [](long long, const std::string &) {
         return std::string("$1099511627776\r\n") + std::string(4096, 'x');
       }},
      {"an empty piece",
       [](long long, const std::string &) { return bulk(""); }},
      {"a nil piece",
       [](long long, const std::string &) { return std::string("$-1\r\n"); }},
      {"garbage length",
       [](long long, const std::string &) {
         return std::string("$12x\r\nabc\r\n");
       }},
      {"a huge length",
       [](long long, const std::string &) {
         return std::string("$99999999999999999999\r\n");
       }},
      {"no CRLF after the body",
       [](long long, const std::string &slice) {
         return "$" + std::to_string(slice.size()) + "\r\n" + slice + "XY";
       }},
      {"an integer instead of a string",
       [](long long, const std::string &) { return std::string(":5\r\n"); }},
  };
  for (const auto &[what, answer] : cases) {
    FakeRedis server(v, answer);
    Streamed s = stream(server, 2s);
    EXPECT_NE(s.status, RemoteStatus::Hit) << what;
    // Whatever reached the sink is a prefix of the true bytes: a piece
    // longer than asked is refused before its first byte.
    EXPECT_TRUE(v.substr(1, s.bytes.size()) == s.bytes) << what;
  }
}

TEST(RedisStream, AServerThatStopsAnsweringTimesOut) {
  std::string v = bigValue(5u << 20);
  FakeRedis server(v, [](long long from, const std::string &slice) {
    return from > (2 << 20) ? kStall : bulk(slice);
  });
  auto t0 = std::chrono::steady_clock::now();
  Streamed s = stream(server, 300ms);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(s.status, RemoteStatus::Timeout);
  EXPECT_LT(took, 3s);
}

} // namespace
} // namespace linkd
