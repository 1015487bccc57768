// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// libFuzzer target over what the daemon does with a request before any
// link runs: the bytes are a serialized LinkRequest (protobuf: any bytes
// that parse), checked as a farm node checks one (validateOffloadedLink),
// analysed for its cache key as a link and as an archive request (response
// files expanded, capped), and its allowed outputs derived as a farm client
// does (lib/link/link_outputs). Paths resolve in a scratch directory, so a
// response file named by the input is whatever is there (nothing, or the
// files the response-file fuzzer leaves).
//
// Errors are values; crashes, sanitizer reports and leaks are findings.
// Built only with -DLINKD_FUZZ=ON (tests/fuzz/CMakeLists.txt).
#include "cache/archive_key.h"
#include "cache/link_key.h"
#include "cache/stat_cache.h"
#include "daemon/linkd/farm_node/offload_request.h"
#include "link/link_outputs.h"
#include "link/response_files.h"
#include "linkd/v1/linkd.pb.h"

#include <cstdint>

namespace {

linkd::LinkInvocation toInvocation(const linkd::v1::LinkRequest &req) {
  linkd::LinkInvocation inv;
  inv.flavor = static_cast<linkd::Flavor>(req.flavor() & 0xf);
  inv.argv.assign(req.argv().begin(), req.argv().end());
  inv.cwd = "/tmp/linkd-fuzz";
  for (const auto &[k, v] : req.env())
    inv.env[k] = v;
  inv.umask = req.umask();
  if (req.has_stdin_data())
    inv.stdinData = req.stdin_data();
  return inv;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  linkd::v1::LinkRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size)))
    return 0;
  (void)linkd::validateOffloadedLink(req);
  linkd::LinkInvocation inv = toInvocation(req);
  linkd::KeyContext ctx;
  ctx.linkdVersion = "fuzz";
  ctx.lldVersion = "fuzz";
  ctx.baseDir = "/tmp";
  if (linkd::isArchiver(inv.flavor)) {
    std::string err;
    auto stats = linkd::StatCache::open("", &err);
    (void)linkd::analyzeArchiveRequest(inv, ctx, *stats);
  } else {
    (void)linkd::analyzeLink(inv, ctx);
  }
  auto args = linkd::expandResponseFiles(inv.argv, inv.cwd).args;
  linkd::LinkOutputs o = linkd::linkOutputs(inv.flavor, args, inv.cwd);
  for (const std::string &a : args)
    (void)o.allows(linkd::tidyPath(linkd::absolutePath(a, inv.cwd)));
  return 0;
}
