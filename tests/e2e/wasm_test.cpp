// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// WebAssembly through wasm-ld.linkd: a freestanding module, compared with
// stock wasm-ld, then instantiated and called in Node's WebAssembly engine.
#include "harness.h"

namespace linkd::e2e {
namespace {

class Wasm : public E2eTest {};

TEST_F(Wasm, ModuleExportAll) {
  ASSERT_TRUE(haveTool(tools::wasmLd));
  ASSERT_TRUE(haveTool(tools::node));
  writeFile("math.c", R"(int table[8] = {1, 1, 2, 3, 5, 8, 13, 21};
int fib_sum(int n) {
  int s = 0;
  for (int i = 0; i < n && i < 8; ++i)
    s += table[i];
  return s;
}
)");
  writeFile("util.c", R"(static int calls;
int add(int a, int b) { ++calls; return a + b; }
int call_count(void) { return calls; }
)");
  ASSERT_TRUE(exitedZero(
      run("clang-19 --target=wasm32 -nostdlib -O2 -c math.c util.c")));
  ASSERT_TRUE(linkBoth(wasmLinkers(),
                       "{ld} --no-entry --export-all math.o util.o -o mod.wasm",
                       {"mod.wasm"}));
  writeFile("run.js", R"(const fs = require('fs');
WebAssembly.instantiate(fs.readFileSync('mod.wasm')).then(({instance}) => {
  const e = instance.exports;
  console.log(e.add(2, 3), e.add(40, 2), e.call_count(), e.fib_sum(8));
}).catch((err) => { console.error(err); process.exit(1); });
)");
  RunResult r = run(tools::node.path + " run.js");
  ASSERT_TRUE(exitedZero(r));
  EXPECT_EQ(r.out, "5 42 2 54\n");
}

} // namespace
} // namespace linkd::e2e
