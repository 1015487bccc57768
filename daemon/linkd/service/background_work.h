// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Work a request does after its client has its answer: storing a link's
// result in the cache (compressing and writing the outputs: for an archive
// of 1,096 objects, ~100 MB) and preparing spare copies after a hit. The
// client is gone, but the next request is usually already running, and on a
// machine with few cores that work competed with it for CPU and the disk:
// the archive miss read 1.125x llvm-ar while the previous miss's store ran.
//
// So it runs on a thread of its own at a low priority, CPU (nice 10: about a
// tenth of a core against a request's link child) and I/O (best effort,
// lowest level), and the request's thread waits for it: what the request
// holds while it stores (its mark for identical links, the active count)
// is unchanged. A thread of its own because a thread cannot raise its
// priority again without privilege, and request threads are reused.
#pragma once

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>
#include <utility>

namespace linkd {

template <typename Work> void runInBackground(Work &&work) {
  std::thread t([&work] {
    pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
    setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 10);
    // ioprio_set(IOPRIO_WHO_PROCESS, tid, IOPRIO_PRIO_VALUE(BE, 7)); no
    // glibc wrapper. Failure leaves the default: only slower for others.
    constexpr int kWhoProcess = 1, kClassBestEffort = 2, kClassShift = 13;
    syscall(SYS_ioprio_set, kWhoProcess, tid,
            (kClassBestEffort << kClassShift) | 7);
    std::forward<Work>(work)();
  });
  t.join();
}

} // namespace linkd
