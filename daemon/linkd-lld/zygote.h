// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The link zygote: a single-threaded process that forks the link children.
//
// LLD keeps process-global state, is not thread-safe, and may call fatal()
// or crash on bad input, so the gRPC process never runs it. At start-up the
// daemon execs `linkd-lld __zygote`, a fresh process with libLLVM loaded and
// relocated and no threads. For each link the daemon sends the request and
// the write ends of two pipes (stdout, stderr) over a Unix socket pair; the
// zygote hands it to a child, which becomes the linker (cwd, umask,
// environment, fds 1/2 = the pipes) and exits with LLD's status — or, as a
// reusable worker (link_worker.h), reports and waits for the next link. The
// zygote keeps a forked spare ready, reaps children and reports pid, wait
// status and resource usage back.
//
// A child that crashes or is killed is only a failed link. If the zygote
// itself dies, pending links fail (clients fall back to local links) and the
// next link starts a new zygote. Children die with the zygote
// (PR_SET_PDEATHSIG with SIGTERM, so LLVM removes the temporary output they
// were writing), and the zygote dies with the daemon (SIGKILL).
#pragma once


namespace linkd {

// Entry point of `linkd-lld __zygote <control-fd>`. Returns the process exit
// code. Sends a Hello frame (LLD's version) first, then serves Spawn frames.
int runZygote(int controlFd);

} // namespace linkd
