// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// A reusable link worker: a pre-forked link child (a spare, zygote.cpp)
// that, after an ELF link that may be followed by another, stays: it
// reports (the daemon answers), closes the link's descriptors, lets LLD
// free its state as lldMain does between two links, tells the zygote it is
// idle, and serves the next link the zygote hands it. A small link then
// costs LLD's own work only: no fork, no exit, no page faults for code and
// heap that the previous link already touched, a warm thread pool (hello
// world: ~4 ms instead of 6.5–8 in a fresh child; docs/design.md "Reusable
// link workers").
//
// What a worker carries from one link to the next is LLD's and LLVM's
// process state after CommonLinkerContext::destroy, and nothing of a
// request: the set-up (link_child.h) replaces descriptors, environment,
// cwd, umask and signal mask per link, and LLVM's streams get their colour
// settings back. A link may run in a used worker only if nothing in it is
// known to leave state that destroy does not reset (mayRunInWorker: ELF,
// none of -mllvm / LTO / plugin (but GCC's, which LLD ignores) /
// --time-trace / --reproduce / --threads / a PE target / a response file,
// no LLD_REPRODUCE, LLD_IN_TEST or
// FORCE_LLD_DIAGNOSTICS_CRASH, no rewrite plan); and a worker
// is used again only if its link ended with status 0 through the driver's
// normal return, read no bitcode, wrote an output for a target whose LLD
// state is known to be per link (x86-64, i386, 64-bit AMDGPU), left no
// descriptor or thread behind, and is still small. Everything else ends the
// process after the report, as every link child did before.
//
// A sandboxed link (the daemon's library links, daemon/linkd/service/
// kernel_link.cpp) may run in a worker too: the sandbox is turned off after
// it, but its Landlock confinement cannot be, so such a worker serves only
// links confined to the same directories (the zygote matches them), and an
// unconfined worker never gets a sandboxed link's confinement added.
#pragma once

#include "linkd/v1/linkd.pb.h"

#include <sys/types.h>

namespace linkd {

// True if `req` may run in a worker that served other links before, and
// may leave the worker reusable after it (the worker checks the link's
// outcome too). Decided by the zygote before it picks a worker.
bool mayRunInWorker(const v1::LinkRequest &req);

// Body of a spare after fork: `fd` is its socket to the zygote. Waits for a
// request (a Spawn frame as the daemon sent it), runs it, and — for a
// SpawnReusable frame whose link allows it — sends an Idle frame with the
// link's id and waits for the next. Never returns.
[[noreturn]] void serveLinks(int fd, pid_t zygotePid, int journalFd);

} // namespace linkd
