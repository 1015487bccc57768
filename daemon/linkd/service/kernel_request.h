// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What the daemon accepts in a decoded Link message from liblinkd before it
// looks anything up (kernel_link.h): a known flavor, arguments and the
// environment LLD reads without NUL bytes, input names that are one file
// each in the link's view, well-formed digests, and no more bytes than the
// daemon's request limit. A file of its own, without the zygote or a
// socket, so that the kernel wire's fuzzer (tests/fuzz/kernel_wire_fuzzer.cpp)
// runs exactly the checks the daemon runs.
#pragma once

#include "digest/digest.h"
#include "kernel/kernel_wire.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace linkd {

// The link's working directory in its view: relative input names live here.
// A path nobody has on a real file system, so that nothing under it is ever
// looked up outside the view.
constexpr std::string_view kKernelViewCwd = "/.linkd-kernel";

// "" if the daemon may serve `req`, else why not; `digests` gets each
// input's digest, in order.
std::string checkKernelLink(const kernel::LinkMsg &req,
                            uint64_t maxRequestBytes,
                            std::vector<Digest> &digests);

// The path an input name is in the link's view: absolute names as they
// are, relative ones under the view's virtual working directory.
std::string blobViewPath(std::string_view name);

} // namespace linkd
