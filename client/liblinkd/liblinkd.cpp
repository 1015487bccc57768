// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// liblinkd's C API (include/linkd/linkd.h): decide the flavor as stock LLD
// would, hash the inputs, link through the daemon (started on first use),
// else in a child process; hand the outcome back as one allocation the
// caller frees. Nothing here is shared between calls but the environment.
#include "linkd/linkd.h"

#include "client/autostart.h"
#include "client/liblinkd/child_link.h"
#include "client/liblinkd/daemon_call.h"
#include "client/liblinkd/kernel_request.h"
#include "config/runtime_paths.h"

#include <dlfcn.h>
#include <openssl/sha.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace linkd::kernel {
namespace {

// What a linkd_result points into.
struct ResultBox {
  linkd_result pub{};
  std::string out, err, error;
  std::vector<WireOutput> files;
  std::vector<linkd_output> views;
};

linkd_result *publish(Outcome &&o) {
  auto *box = new (std::nothrow) ResultBox;
  if (!box)
    return nullptr;
  box->error = std::move(o.error);
  if (o.result) {
    box->out = std::move(o.result->out);
    box->err = std::move(o.result->err);
    box->files = std::move(o.result->outputs);
    box->pub.exit_code = o.result->exitCode;
    box->pub.term_signal = o.result->termSignal;
    box->pub.cache_hit = o.result->cacheHit;
    box->pub.blobs_uploaded = o.result->blobsUploaded;
  } else {
    box->pub.exit_code = -1;
  }
  for (const WireOutput &f : box->files)
    box->views.push_back(
        {f.name.c_str(), f.data.data(), f.data.size(), f.mode});
  box->pub.diagnostics = box->err.c_str();
  box->pub.diagnostics_size = box->err.size();
  box->pub.stdout_text = box->out.c_str();
  box->pub.stdout_size = box->out.size();
  box->pub.outputs = box->views.data();
  box->pub.output_count = box->views.size();
  box->pub.error = box->error.c_str();
  box->pub.ran_locally = o.local;
  return &box->pub;
}

Outcome failed(std::string why) {
  Outcome o;
  o.error = std::move(why);
  return o;
}

// LLD's own answer to a command line it refuses before linking (a missing
// or unknown -flavor, the generic `lld` without one): exit status 1.
Outcome lldRefusal(std::string message) {
  Outcome o;
  o.result.emplace();
  o.result->exitCode = 1;
  o.result->err = std::move(message) + "\n";
  return o;
}

std::optional<Outcome> buildRequest(const char *const *argv, size_t argc,
                                    const linkd_input *inputs, size_t n,
                                    const linkd_options *opt, Request &req) {
  req.argv.emplace_back(opt && opt->tool ? opt->tool : "ld.lld");
  for (size_t i = 0; i < argc; ++i) {
    if (!argv[i])
      return failed("argv[" + std::to_string(i) + "] is NULL");
    req.argv.emplace_back(argv[i]);
  }
  std::optional<Flavor> flavor = flavorFromProgramName(req.argv[0]);
  LeadingFlavor leading = takeLeadingFlavor(req.argv);
  if (!leading.error.empty())
    return lldRefusal(leading.error);
  if (leading.flavor)
    flavor = leading.flavor;
  if (!flavor && isGenericLldName(req.argv[0]))
    return lldRefusal(std::string(kLldGenericDriverMessage));
  if (!flavor || isArchiver(*flavor))
    return failed("'" + req.argv[0] +
                  "' is not a linker name (ld.lld, wasm-ld, ld64.lld, "
                  "lld-link, or lld with -flavor)");
  req.flavor = *flavor;
  req.noCache = opt && opt->no_cache;
  req.timeoutMs = opt ? opt->timeout_ms : 0;
  if (n > 0 && !inputs)
    return failed("inputs is NULL");
  for (size_t i = 0; i < n; ++i) {
    const linkd_input &in = inputs[i];
    if (!in.name)
      return failed("input " + std::to_string(i) + " has no name");
    if (std::string e = checkInputName(in.name); !e.empty())
      return failed(e);
    if (in.size > 0 && !in.data)
      return failed("input '" + std::string(in.name) + "' has no data");
    Input x{in.name, {static_cast<const char *>(in.data), in.size}, {}};
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char *>(x.data.data()),
           x.data.size(), md);
    x.sha256.assign(reinterpret_cast<char *>(md), sizeof(md));
    for (const Input &seen : req.inputs)
      if (seen.name == x.name)
        return failed("two inputs are named '" + x.name + "'");
    req.inputs.push_back(std::move(x));
  }
  return std::nullopt;
}

// The daemon if one answers on the blob socket; else start one and ask
// again; else (or if the daemon cannot run this link) a child process.
Outcome run(const Request &req) {
  const char *disable = std::getenv("LINKD_DISABLE");
  if (disable && std::strcmp(disable, "1") == 0)
    return linkInChildProcess(req);
  RuntimePaths paths = resolveRuntimePaths();
  for (int attempt = 0; attempt < 2; ++attempt) {
    Outcome o;
    switch (linkThroughDaemon(paths, req, o)) {
    case DaemonCall::Done:
    case DaemonCall::Failed:
      return o;
    case DaemonCall::Unavailable:
      return linkInChildProcess(req);
    case DaemonCall::NoDaemon:
      if (attempt == 0 &&
          !ensureDaemon(paths, daemonBinaryForLibrary()).empty())
        return linkInChildProcess(req);
      break;
    }
  }
  return linkInChildProcess(req);
}

std::string libraryDirectory() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void *>(&linkd_version), &info) ||
      !info.dli_fname)
    return ".";
  char buf[4096];
  const char *real = realpath(info.dli_fname, buf);
  std::string p = real ? real : info.dli_fname;
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

void copyTo(char *dst, size_t cap, const std::string &s) {
  std::snprintf(dst, cap, "%s", s.c_str());
}

} // namespace

std::string daemonBinaryForLibrary() {
  if (const char *bin = std::getenv("LINKD_BIN"); bin && *bin)
    return bin;
  std::string dir = libraryDirectory();
  std::string sibling = dir + "/../bin/linkd";
  if (access(sibling.c_str(), X_OK) == 0)
    return sibling;
  return dir + "/linkd";
}

// Not from LINKD_BIN: the fallback must work when that daemon cannot.
std::string lldBinaryForLibrary() {
  std::string dir = libraryDirectory();
  std::string sibling = dir + "/../bin/linkd-lld";
  if (access(sibling.c_str(), X_OK) == 0)
    return sibling;
  return dir + "/linkd-lld";
}

} // namespace linkd::kernel

using namespace linkd::kernel;

extern "C" {

__attribute__((visibility("default"))) linkd_result *
linkd_link(const char *const *argv, size_t argc, const linkd_input *inputs,
           size_t input_count, const linkd_options *options) {
  Request req;
  if (argc > 0 && !argv)
    return publish(failed("argv is NULL"));
  if (auto refused =
          buildRequest(argv, argc, inputs, input_count, options, req))
    return publish(std::move(*refused));
  return publish(run(req));
}

__attribute__((visibility("default"))) const linkd_output *
linkd_result_output(const linkd_result *result, const char *name) {
  if (!result || !name)
    return nullptr;
  for (size_t i = 0; i < result->output_count; ++i)
    if (std::strcmp(result->outputs[i].name, name) == 0)
      return &result->outputs[i];
  return nullptr;
}

__attribute__((visibility("default"))) void
linkd_result_free(linkd_result *result) {
  delete reinterpret_cast<ResultBox *>(result);
}

__attribute__((visibility("default"))) int linkd_health_check(linkd_health *out,
                                                              int autostart) {
  if (!out)
    return -1;
  *out = linkd_health{};
  linkd::RuntimePaths paths = linkd::resolveRuntimePaths();
  if (autostart) {
    if (std::string e = linkd::ensureDaemon(paths, daemonBinaryForLibrary());
        !e.empty()) {
      copyTo(out->error, sizeof(out->error), e);
      return -1;
    }
  }
  HealthMsg h;
  std::string error;
  if (!daemonHealth(paths, h, error)) {
    copyTo(out->error, sizeof(out->error), error);
    return -1;
  }
  out->daemon = 1;
  copyTo(out->version, sizeof(out->version), h.version);
  copyTo(out->lld_version, sizeof(out->lld_version), h.lldVersion);
  out->active_links = h.activeLinks;
  out->links_total = h.linksTotal;
  out->cache_hits = h.hits;
  out->cache_misses = h.misses;
  return 0;
}

__attribute__((visibility("default"))) const char *linkd_version(void) {
  return LINKD_VERSION;
}

__attribute__((visibility("default"))) int linkd_api_version(void) {
  return LINKD_API_VERSION;
}

} // extern "C"
