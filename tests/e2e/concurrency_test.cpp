// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `make -j32` on a cold machine: 32 clients released at the same instant with
// no daemon running. Exactly one daemon must start, and every client must get
// its own link's output and its own diagnostics back (each link differs: its
// own --defsym value and its own warning).
#include "harness.h"

#include <sstream>

namespace linkd::e2e {
namespace {

constexpr int kClients = 32;

class Concurrency : public E2eTest {
protected:
  // The linker command line clang-19 would run for `args`, with the linker
  // itself replaced by "{ld}".
  std::string clangLinkLine(const std::string &args) {
    RunResult r =
        run("clang-19 -### --ld-path=" + tools::ldLld.path + " " + args);
    EXPECT_TRUE(exitedZero(r));
    std::string quoted = "\"" + tools::ldLld.path + "\"";
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);) {
      size_t at = line.find(quoted);
      if (at != std::string::npos && line.find_first_not_of(' ') == at)
        return replaceAll(line, quoted, "{ld}");
    }
    ADD_FAILURE() << "no linker line in clang -### output\n" << describe(r);
    return {};
  }
};

TEST_F(Concurrency, ColdStartWith32Clients) {
  writeFile("main.c", R"(#include <stdio.h>
extern char client_id[];
int main(void) { printf("client %lu\n", (unsigned long)client_id); return 0; }
)");
  ASSERT_TRUE(exitedZero(run("clang-19 -O2 -fno-pic -c main.c")));
  std::string line = clangLinkLine("-no-pie main.o -o OUT");
  ASSERT_FALSE(line.empty());
  // Client i links from its own directory c<i>, with its own symbol value
  // and its own warning: any mix-up of cwd, argv or streams shows.
  auto commandFor = [&](const std::string &ld, int i) {
    std::string id = std::to_string(i);
    std::string out = ld == tools::ldLld.path ? "out.stock" : "out";
    return "cd c" + id + " && " +
           replaceAll(replaceAll(replaceAll(line, "{ld}", ld), "\"OUT\"", out),
                      "\"main.o\"", "../main.o") +
           " --defsym=client_id=" + id + " -z client" + id;
  };
  for (int i = 0; i < kClients; ++i)
    ASSERT_TRUE(exitedZero(run("mkdir c" + std::to_string(i))));

  std::vector<RunResult> stock;
  for (int i = 0; i < kClients; ++i) {
    stock.push_back(run(commandFor(tools::ldLld.path, i)));
    ASSERT_TRUE(exitedZero(stock.back()));
  }
  ASSERT_FALSE(daemonStatus().has_value()) << "a daemon was already running";

  // The race is the point, not the machine's speed: a daemon that 32
  // clients and a loaded machine (the tidy check on both cores) slow past
  // the default 10 s start timeout sent clients to link locally. They wait
  // up to a minute here.
  std::vector<std::string> commands;
  commands.reserve(kClients);
  for (int i = 0; i < kClients; ++i)
    commands.push_back("export LINKD_START_TIMEOUT_MS=60000 && " +
                       commandFor(binPath("ld.linkd"), i));
  std::vector<Background> clients = startTogether(commands);
  ASSERT_EQ(clients.size(), static_cast<size_t>(kClients));

  for (int i = 0; i < kClients; ++i) {
    SCOPED_TRACE("client " + std::to_string(i));
    RunResult r = wait(clients[i], 180s);
    ASSERT_TRUE(exitedZero(r));
    EXPECT_EQ(r.out, stock[i].out);
    EXPECT_EQ(r.err, stock[i].err) << describe(r);
    std::string id = std::to_string(i);
    EXPECT_TRUE(sameBytes("c" + id + "/out.stock", "c" + id + "/out"));
    RunResult ran = run("c" + id + "/out");
    EXPECT_TRUE(exitedZero(ran));
    EXPECT_EQ(ran.out, "client " + id + "\n");
  }

  std::vector<pid_t> daemons = daemonProcesses();
  EXPECT_EQ(daemons.size(), 1u) << "linkd serve processes for this socket";
  EXPECT_EQ(logLines("serving").size(), 1u);
  auto st = daemonStatus();
  ASSERT_TRUE(st.has_value());
  if (daemons.size() == 1)
    EXPECT_EQ(st->pid, daemons.front());
  EXPECT_EQ(st->linksTotal, static_cast<unsigned long long>(kClients))
      << "every client linked through the daemon\n"
      << st->json;
  EXPECT_EQ(st->linksFailed, 0u) << st->json;
}

} // namespace
} // namespace linkd::e2e
