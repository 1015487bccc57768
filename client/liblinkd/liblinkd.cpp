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
#include "client/liblinkd/output_names.h"
#include "client/local_linker.h"
#include "config/runtime_paths.h"

#include <dlfcn.h>
// SHA256_* are deprecated in OpenSSL 3 in favour of EVP (see sha256()).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <algorithm>
#include <cstddef>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace linkd::kernel {
namespace {

std::string libraryDirectory();

// Raw SHA-256 through OpenSSL's low-level interface: libcrypto is linked
// in statically (no NEEDED libcrypto.so.3, which no wheel may carry), and
// SHA256_* pull in the digest and its CPU dispatch only, not EVP's
// providers and configuration file.
std::string sha256(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256_CTX ctx;
  SHA256_Init(&ctx);
  SHA256_Update(&ctx, data.data(), data.size());
  SHA256_Final(md, &ctx);
  return std::string(reinterpret_cast<char *>(md), sizeof(md));
}

// What a linkd_result points into.
struct ResultBox {
  linkd_result pub{};
  std::string out, err, error, uncacheable;
  std::vector<WireOutput> files;
  std::vector<linkd_output> views;
};

// The status of a link that ran: LLD's exit status and signal say it.
linkd_status statusOfRun(const ResultMsg &r) {
  if (r.termSignal)
    return LINKD_LINKER_CRASHED;
  return r.exitCode == 0 ? LINKD_OK : LINKD_LINK_FAILED;
}

linkd_served servedAs(const Outcome &o) {
  if (!o.result)
    return LINKD_SERVED_NOT_RUN;
  if (o.local)
    return LINKD_SERVED_LOCAL;
  if (o.result->cacheHit)
    return LINKD_SERVED_HIT;
  return o.result->uncacheable.empty() ? LINKD_SERVED_MISS
                                       : LINKD_SERVED_UNCACHED;
}

linkd_result *publish(Outcome &&o) {
  auto *box = new (std::nothrow) ResultBox;
  if (!box)
    return nullptr;
  box->pub.served = servedAs(o);
  box->error = std::move(o.error);
  if (o.result) {
    box->pub.status = statusOfRun(*o.result);
    box->out = std::move(o.result->out);
    box->err = std::move(o.result->err);
    box->files = std::move(o.result->outputs);
    box->uncacheable = std::move(o.result->uncacheable);
    box->pub.exit_code = o.result->exitCode;
    box->pub.term_signal = o.result->termSignal;
    box->pub.cache_hit = o.result->cacheHit;
    box->pub.blobs_uploaded = o.result->blobsUploaded;
  } else {
    box->pub.status = o.status == LINKD_OK ? LINKD_IO_ERROR : o.status;
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
  box->pub.uncacheable = box->uncacheable.c_str();
  box->pub.ran_locally = o.local;
  return &box->pub;
}

Outcome badArgument(std::string why) {
  return failedWith(LINKD_BAD_ARGUMENT, std::move(why));
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

// The caller's options, however old its header: only the fields its
// struct_size covers are read, the rest keep their defaults (docs/abi.md).
std::optional<Outcome> readOptions(const linkd_options *given, Request &req,
                                   std::string &tool) {
  linkd_options opt = LINKD_OPTIONS_INIT;
  if (given) {
    constexpr size_t minimum = offsetof(linkd_options, tool) + sizeof(void *);
    if (given->struct_size < minimum)
      return badArgument("options.struct_size is " +
                         std::to_string(given->struct_size) +
                         "; set it to sizeof(linkd_options) "
                         "(LINKD_OPTIONS_INIT)");
    std::memcpy(&opt, given, std::min<size_t>(given->struct_size, sizeof(opt)));
  }
  constexpr uint32_t known = LINKD_NO_CACHE | LINKD_NO_AUTOSTART |
                             LINKD_NO_FALLBACK | LINKD_LOCAL_ONLY;
  if (opt.flags & ~known)
    return badArgument("options.flags has bits this liblinkd does not know (" +
                       std::to_string(opt.flags & ~known) + ")");
  if ((opt.flags & LINKD_LOCAL_ONLY) && (opt.flags & LINKD_NO_FALLBACK))
    return badArgument("options.flags has both LINKD_LOCAL_ONLY and "
                       "LINKD_NO_FALLBACK: no way is left to link");
  req.flags = opt.flags;
  req.timeoutMs = opt.timeout_ms;
  tool = opt.tool ? opt.tool : "ld.lld";
  if (opt.fallback_linker)
    req.fallbackLinker = opt.fallback_linker;
  return std::nullopt;
}

std::optional<Outcome> buildRequest(const char *const *argv, size_t argc,
                                    const linkd_input *inputs, size_t n,
                                    const linkd_options *opt, Request &req) {
  std::string tool;
  if (auto refused = readOptions(opt, req, tool))
    return refused;
  if (argc > 0 && !argv)
    return badArgument("argv is NULL");
  req.argv.push_back(tool);
  for (size_t i = 0; i < argc; ++i) {
    if (!argv[i])
      return badArgument("argv[" + std::to_string(i) + "] is NULL");
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
    return badArgument("'" + req.argv[0] +
                       "' is not a linker name (ld.lld, wasm-ld, ld64.lld, "
                       "lld-link, or lld with -flavor)");
  req.flavor = *flavor;
  if (n > 0 && !inputs)
    return badArgument("inputs is NULL");
  for (size_t i = 0; i < n; ++i) {
    const linkd_input &in = inputs[i];
    if (!in.name)
      return badArgument("input " + std::to_string(i) + " has no name");
    if (std::string e = checkInputName(in.name); !e.empty())
      return badArgument(e);
    if (in.size > 0 && !in.data)
      return badArgument("input '" + std::string(in.name) + "' has no data");
    Input x{in.name, {static_cast<const char *>(in.data), in.size}, {}};
    x.sha256 = sha256(x.data);
    for (const Input &seen : req.inputs)
      if (seen.name == x.name)
        return badArgument("two inputs are named '" + x.name + "'");
    req.inputs.push_back(std::move(x));
  }
  if (std::string e = outputOutsideWorkingDirectory(req); !e.empty())
    return badArgument(e);
  return std::nullopt;
}

// No daemon for this call: a local link, unless the caller forbade it.
Outcome withoutDaemon(const Request &req, Outcome noDaemon) {
  if (req.flags & LINKD_NO_FALLBACK) {
    noDaemon.status = LINKD_NO_DAEMON;
    noDaemon.error = "no daemon (LINKD_NO_FALLBACK): " + noDaemon.error;
    return noDaemon;
  }
  return linkInChildProcess(req);
}

// The daemon if one answers on the blob socket; else start one (unless
// LINKD_NO_AUTOSTART) and ask again; else (or if the daemon cannot run this
// link) a child process.
Outcome run(const Request &req) {
  const char *disable = std::getenv("LINKD_DISABLE");
  if ((disable && std::strcmp(disable, "1") == 0) ||
      (req.flags & LINKD_LOCAL_ONLY))
    return linkInChildProcess(req);
  RuntimePaths paths = resolveRuntimePaths();
  Outcome o;
  for (int attempt = 0; attempt < 2; ++attempt) {
    o = Outcome{};
    switch (linkThroughDaemon(paths, req, o)) {
    case DaemonCall::Done:
    case DaemonCall::Failed:
      return o;
    case DaemonCall::Unavailable:
      return withoutDaemon(req, std::move(o));
    case DaemonCall::NoDaemon:
      if (attempt > 0 || (req.flags & LINKD_NO_AUTOSTART))
        return withoutDaemon(req, std::move(o));
      // A wheel on a machine without linkd: no daemon to start, and no
      // time spent trying on every call (ensureDaemon says so at once).
      if (std::string e = ensureDaemon(paths, daemonBinaryForLibrary());
          !e.empty())
        return withoutDaemon(req, failedWith(LINKD_NO_DAEMON, e));
      break;
    }
  }
  return withoutDaemon(req, std::move(o));
}

// Where this library was loaded from, resolved once per process (it cannot
// move while loaded; the no-daemon path asks on every call).
std::string libraryDirectory() {
  static const std::string dir = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void *>(&linkd_version), &info) ||
        !info.dli_fname)
      return std::string(".");
    char buf[4096];
    const char *real = realpath(info.dli_fname, buf);
    std::string p = real ? real : info.dli_fname;
    size_t slash = p.find_last_of('/');
    return slash == std::string::npos ? std::string(".") : p.substr(0, slash);
  }();
  return dir;
}

void copyTo(char *dst, size_t cap, const std::string &s) {
  std::snprintf(dst, cap, "%s", s.c_str());
}

} // namespace

// `name` installed with the library (<libdir>/../bin, <libdir>), else with
// the system's linkd (PATH: the .deb's /usr/bin), else "".
std::string besideLibraryOrOnPath(const std::string &name) {
  std::string dir = libraryDirectory();
  for (const std::string &candidate :
       {dir + "/../bin/" + name, dir + "/" + name})
    if (executableFile(candidate))
      return candidate;
  return programOnPath(name);
}

std::string daemonBinaryForLibrary() {
  if (const char *bin = std::getenv("LINKD_BIN"); bin && *bin)
    return bin;
  return besideLibraryOrOnPath("linkd");
}

// Not from LINKD_BIN: the fallback must work when that daemon cannot.
std::string lldBinaryForLibrary() {
  std::string found = besideLibraryOrOnPath("linkd-lld");
  return found.empty() ? libraryDirectory() + "/../bin/linkd-lld" : found;
}

} // namespace linkd::kernel

using namespace linkd::kernel;

extern "C" {

__attribute__((visibility("default"))) linkd_result *
linkd_link(const char *const *argv, size_t argc, const linkd_input *inputs,
           size_t input_count, const linkd_options *options) {
  Request req;
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

__attribute__((visibility("default"))) const char *
linkd_status_name(linkd_status status) {
  switch (status) {
  case LINKD_OK:
    return "LINKD_OK";
  case LINKD_LINK_FAILED:
    return "LINKD_LINK_FAILED";
  case LINKD_LINKER_CRASHED:
    return "LINKD_LINKER_CRASHED";
  case LINKD_BAD_ARGUMENT:
    return "LINKD_BAD_ARGUMENT";
  case LINKD_NO_DAEMON:
    return "LINKD_NO_DAEMON";
  case LINKD_NO_LINKER:
    return "LINKD_NO_LINKER";
  case LINKD_TIMEOUT:
    return "LINKD_TIMEOUT";
  case LINKD_IO_ERROR:
    return "LINKD_IO_ERROR";
  case LINKD_DAEMON_ERROR:
    return "LINKD_DAEMON_ERROR";
  }
  return "LINKD_UNKNOWN_STATUS";
}

__attribute__((visibility("default"))) const char *linkd_version(void) {
  return LINKD_VERSION;
}

__attribute__((visibility("default"))) int linkd_api_version(void) {
  return LINKD_API_VERSION;
}

} // extern "C"
