// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Workers that share a cache tier (shared_cache_test.cpp: Redis and HTTP;
// reapi_test.cpp: an REAPI server). A "worker" is a daemon with its own
// socket, state and local store; workers share only the tier. Counters come
// from `linkd stats --json`; bytes are compared with stock LLD's.
#pragma once

#include "harness.h"

#include <map>
#include <string>
#include <thread>

namespace linkd::e2e {

class TierWorkersTest : public E2eTest {
protected:
  void SetUp() override {
    E2eTest::SetUp();
    writeFile("main.c",
              "#include <stdio.h>\nint lib(void);\n"
              "int main(void) { printf(\"%d\\n\", lib()); return 0; }\n");
    writeFile("lib.c", "int lib(void) { return 42; }\n");
    ASSERT_TRUE(exitedZero(run("clang-19 -c main.c lib.c")));
  }

  // Environment of worker `name`: its own socket, state and local store.
  std::string worker(const std::string &name, const std::string &remote,
                     const std::string &extra = "") {
    run("mkdir -p " + name + "/run && chmod 700 " + name + "/run");
    std::string env = "export LINKD_SOCKET=" + path(name + "/run/linkd.sock") +
                      " LINKD_CACHE_DIR=" + path(name + "/cache") +
                      " LINKD_STATE_DIR=" + path(name + "/state") +
                      " LINKD_REMOTE='" + remote + "' " + extra + "; ";
    if (!workers.count(name)) {
      workers[name] = env;
      atTeardown([this, env] { run(env + binPath("linkd") + " stop"); });
    }
    return env;
  }

  // Every worker links the same command (same output name, so the same
  // action key); the output is then moved to `keep` for comparison.
  RunResult linkAs(const std::string &env, const std::string &keep,
                   const std::string &objects = "main.o lib.o") {
    RunResult r =
        run(env + "rm -f out && clang-19 --ld-path=" + binPath("ld.linkd") +
            " " + objects + " -o out");
    if (r.exitCode == 0)
      run("mv out " + keep);
    return r;
  }

  // Stock LLD's link of `objects`, as `ref`.
  void stockReference(const std::string &objects = "main.o lib.o") {
    ASSERT_TRUE(exitedZero(
        run("clang-19 -fuse-ld=lld " + objects + " -o out && mv out ref")));
  }

  std::map<std::string, long long> stats(const std::string &env) {
    return cacheStats(env);
  }

  // Waits until worker `env` has written `n` entries to its remote tiers.
  void waitForRemoteWrites(const std::string &env, long long n) {
    for (int i = 0; i < 400; ++i) {
      if (stats(env)["remote_writes"] >= n)
        return;
      std::this_thread::sleep_for(25ms);
    }
    ADD_FAILURE() << "remote writes did not reach " << n;
  }

  // Lines of worker `name`'s log that hold `needle`.
  size_t workerLog(const std::string &name, const std::string &needle) {
    RunResult r =
        run("grep -c -F -- '" + needle + "' " + name + "/state/linkd.log");
    return r.out.empty() ? 0 : std::stoul(r.out);
  }

  std::map<std::string, std::string> workers;
};

} // namespace linkd::e2e
