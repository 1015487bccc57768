// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Running the members of an archive (scans, then rewrites) on every core.
// Each member is independent: its own ObjectFile, ObjCopy config or
// LLVMContext, and the rename table is only read.
//
// Plain threads, started and joined inside the call: no pool outlives it,
// so a process that forks afterwards (the link zygote) is left as it was
// found. Not llvm::parallel, whose executor is process-global and must never
// be started in the zygote (see lld-library-facts.md).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace linkd::rewrite {

// Calls fn(i) once for every i in [0, n), in any order, on up to
// hardware_concurrency threads (the caller's included). fn must not throw.
template <class Fn> void forEachIndex(size_t n, const Fn &fn) {
  size_t workers =
      std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++)
      fn(i);
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t)
    threads.emplace_back(work);
  work();
  for (std::thread &t : threads)
    t.join();
}

} // namespace linkd::rewrite
