// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// `linkd-lld rewrite ...`: symbol and COMDAT rewriting of objects and
// archives into an output directory (docs/rewrite.md). `linkd rewrite`
// execs this, as `linkd link` execs `linkd-lld link`.
#pragma once

namespace linkd {

int cmdRewrite(int argc, char **argv);

} // namespace linkd
