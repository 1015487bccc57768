// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// linkd: the daemon binary. Its subcommands, in the order a reader meets
// them: serve (the daemon), status, stop, stats, config and cache (talk to
// it, or read what it would use when none runs), link (the one-shot
// local link), rewrite (symbol/COMDAT rewriting) and audit (duplicated
// runtime state across a program's modules), all handed to
// linkd-lld, the binary that holds LLVM.
#include "config/config.h"
#include "config/runtime_paths.h"
#include "daemon/linkd/control.h"
#include "daemon/linkd/farm_client/farm_client.h"
#include "daemon/linkd/serve.h"
#include "metrics/peer_allow.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char *kUsage = R"(usage: linkd <command> [options]

commands:
  serve [--socket PATH] [--jobs N] [--idle-timeout SECONDS] [--log-level L]
        run the daemon in the foreground (clients start it automatically)
      farm node (docs/farm.md): --listen HOST:PORT --token-file F
        [--tls-cert F --tls-key F [--client-ca F]] [--insecure]
        [--max-request-bytes N] [--max-paths N] [--max-path-bytes N]
        [--max-links-per-token N] [--link-timeout S] [--stall-timeout S]
      metrics (daemon or node): --metrics-listen [HOST:]PORT
        [--metrics-allow CIDR,...]  Prometheus text at /metrics
  farm-health [--json]  load of the farm node(s) LINKD_FARM names
  status [--json]     show the running daemon's state
  stop                stop the daemon after running links finish
  stats [--json] [--zero] [--all]
                      cache counters and store usage (--zero resets them;
                      --all: every counter, also of tiers not in use)
  config              the effective settings and where each comes from
                      (the running daemon's, or those a daemon would start
                      with), then any mistakes in the config file
  cache clear|trim    empty the cache / evict to the size cap and tidy up
  metrics             the daemon's Prometheus metrics, once (for
                      node_exporter's textfile collector)
  link --flavor F [--argv0 NAME] -- ARGS...
        link once in this process with the embedded LLD (what clients do
        when no daemon can be reached); F is elf, coff, macho or wasm
  rewrite [--match PREFIX] [--export-prefix P] [--import-prefix P]
          [--internal-prefix P] [--rename OLD=NEW]... [--rename-file F]
          [--runtime FILE...] [--kernel FILE...] [--input FILE...]
          --out-dir DIR [--dry-run] [--table-out FILE]
        rename symbols and COMDATs in objects and archives (docs/rewrite.md)
  audit PROGRAM [MODULE...] [--search DIR]... [--json] [--allow FILE]
        find runtime state duplicated across the modules the program loads
        (docs/audit.md); exit 1 when found
  version, -V, --version
                      print linkd's and LLD's versions
  help, -h, --help    print this text

environment: LINKD_SOCKET, LINKD_CONFIG, LINKD_CACHE_DIR, LINKD_MAX_SIZE,
LINKD_BASE_DIR, LINKD_JOBS, LINKD_IDLE_TIMEOUT, LINKD_LOG, LINKD_STATE_DIR,
LINKD_FARM, LINKD_FARM_POLICY, LINKD_FARM_CA, LINKD_FARM_TOKEN_FILE,
LINKD_METRICS_LISTEN, LINKD_METRICS_ALLOW, LINKD_DRAIN_TIMEOUT
(see docs/usage.md, docs/cache.md and docs/farm.md)
)";

int usageError(const std::string &msg) {
  std::fprintf(stderr, "linkd: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

std::vector<std::string> splitList(const std::string &csv) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= csv.size()) {
    size_t comma = csv.find(',', pos);
    std::string item = csv.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty())
      out.push_back(item);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return out;
}

bool parseUnsigned(const char *s, long long &out) {
  char *end = nullptr;
  out = std::strtoll(s, &end, 10);
  return end && *end == '\0' && out >= 0;
}

int cmdServe(int argc, char **argv) {
  linkd::ServeOptions opts;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    long long n = 0;
    if (a == "--insecure") {
      opts.insecure = true;
      continue;
    }
    if (i + 1 >= argc)
      return usageError("missing value for " + std::string(a));
    const char *v = argv[++i];
    if (a == "--socket")
      opts.socketPath = v;
    else if (a == "--jobs" && parseUnsigned(v, n) && n > 0)
      opts.jobs = static_cast<unsigned>(n);
    else if (a == "--idle-timeout" && parseUnsigned(v, n))
      opts.idleTimeoutSeconds = n;
    else if (a == "--log-level")
      opts.logLevel = v;
    else if (a == "--listen")
      opts.listen = v;
    else if (a == "--tls-cert")
      opts.tlsCert = v;
    else if (a == "--tls-key")
      opts.tlsKey = v;
    else if (a == "--client-ca")
      opts.clientCa = v;
    else if (a == "--token-file")
      opts.tokenFile = v;
    else if (a == "--max-request-bytes") {
      auto size = linkd::parseSize(v);
      if (!size || *size == 0)
        return usageError("bad value for --max-request-bytes");
      opts.maxRequestBytes = *size;
    } else if (a == "--max-path-bytes") {
      auto size = linkd::parseSize(v);
      if (!size || *size == 0)
        return usageError("bad value for --max-path-bytes");
      opts.maxPathBytes = *size;
    } else if (a == "--max-paths" && parseUnsigned(v, n) && n > 0)
      opts.maxPaths = static_cast<uint64_t>(n);
    else if (a == "--max-links-per-token" && parseUnsigned(v, n) && n > 0)
      opts.maxLinksPerToken = static_cast<unsigned>(n);
    else if (a == "--link-timeout" && parseUnsigned(v, n) && n > 0)
      opts.linkTimeoutSeconds = static_cast<uint64_t>(n);
    else if (a == "--stall-timeout" && parseUnsigned(v, n) && n > 0)
      opts.stallTimeoutSeconds = static_cast<uint64_t>(n);
    else if (a == "--metrics-listen")
      opts.metricsListen = v;
    else if (a == "--metrics-allow") {
      std::string err;
      opts.metricsAllow = splitList(v);
      if (!linkd::PeerAllowList::parse(opts.metricsAllow, &err))
        return usageError("--metrics-allow: " + err);
    } else
      return usageError("bad serve option " + std::string(a) + " " + v);
  }
  return linkd::serve(opts);
}

// `linkd link` and `linkd rewrite` are implemented by linkd-lld, the binary
// that contains LLVM: exec it with the same arguments.
int execLinkdLld(int argc, char **argv) {
  std::string lld = linkd::executableDirectory() + "/linkd-lld";
  std::vector<char *> args(argv, argv + argc);
  args[0] = const_cast<char *>(lld.c_str());
  args.push_back(nullptr);
  execv(lld.c_str(), args.data());
  std::fprintf(stderr, "linkd: cannot run %s: %s\n", lld.c_str(),
               std::strerror(errno));
  return 1;
}

// LLD's version, from linkd-lld (this binary does not contain LLD).
std::string lldVersion() {
  std::string cmd = linkd::executableDirectory() + "/linkd-lld version";
  std::string out;
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof(buf), p))
      out += buf;
    pclose(p);
  }
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usageError("missing command");
  std::string_view cmd = argv[1];
  if (cmd == "serve")
    return cmdServe(argc, argv);
  if (cmd == "rewrite")
    if (auto rc = linkd::rewriteThroughDaemon(argc, argv))
      return *rc;
  if (cmd == "link" || cmd == "rewrite" || cmd == "audit")
    return execLinkdLld(argc, argv);
  if (cmd == "status")
    return linkd::printStatus(argc > 2 && std::strcmp(argv[2], "--json") == 0);
  if (cmd == "stop")
    return linkd::stopDaemon();
  if (cmd == "stats") {
    linkd::StatsOptions opts;
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "--json") == 0)
        opts.json = true;
      else if (std::strcmp(argv[i], "--zero") == 0)
        opts.zero = true;
      else if (std::strcmp(argv[i], "--all") == 0)
        opts.all = true;
      else
        return usageError("bad stats option " + std::string(argv[i]));
    }
    return linkd::printStats(opts);
  }
  if (cmd == "farm-health")
    return linkd::printFarmHealth(argc > 2 &&
                                  std::strcmp(argv[2], "--json") == 0);
  if (cmd == "cache") {
    if (argc == 3 && std::strcmp(argv[2], "--help") != 0)
      return linkd::cacheControl(argv[2]);
    std::fputs("usage: linkd cache clear|trim\n"
               "  clear  remove every entry\n"
               "  trim   evict to the size cap (max_size) and tidy up\n",
               argc == 2 || argc == 3 ? stdout : stderr);
    return argc == 2 || argc == 3 ? 0 : 2;
  }
  if (cmd == "config")
    return linkd::printConfig(argc, argv);
  if (cmd == "metrics") {
    if (argc > 2)
      return usageError("metrics takes no options");
    return linkd::printMetrics();
  }
  if (cmd == "version" || cmd == "--version" || cmd == "-V") {
    std::printf("linkd %s\n%s\n", LINKD_VERSION, lldVersion().c_str());
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return usageError("unknown command " + std::string(cmd));
}
