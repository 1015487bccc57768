// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// linkd's settings: defaults, then the config file, then environment
// variables (highest precedence).
//
// File: $LINKD_CONFIG, else $XDG_CONFIG_HOME/linkd/linkd.conf, else
// <home>/.config/linkd/linkd.conf (home: $HOME, else the password
// database; config/runtime_paths.h). Format: one `key = value` per line, `#`
// comments, blank lines ignored; unknown keys (with the nearest known one),
// bad values and an unreadable $LINKD_CONFIG are reported as warnings.
//
//   key            env                  default
//   cache          LINKD_NOCACHE=1 off  true
//   cache_dir      LINKD_CACHE_DIR      $XDG_CACHE_HOME/linkd or ~/.cache/linkd
//   max_size       LINKD_MAX_SIZE       10G   (suffixes K M G T, powers of
//   1024) base_dir       LINKD_BASE_DIR       (none) sloppiness
//   LINKD_SLOPPINESS     (none; comma-separated: coff_timestamp) idle_timeout
//   LINKD_IDLE_TIMEOUT   600   (seconds; 0 = never) jobs           LINKD_JOBS
//   number of cores log_level      LINKD_LOG            info remote
//   LINKD_REMOTE         (none; comma-separated tier URLs,
//                                        see docs/shared-cache.md)
//   remote_key_file LINKD_REMOTE_KEY_FILE (none; HMAC key for action entries;
//                  or the key itself in LINKD_REMOTE_KEY)
//   remote_timeout_ms          LINKD_REMOTE_TIMEOUT_MS          5000
//   remote_connect_timeout_ms  LINKD_REMOTE_CONNECT_TIMEOUT_MS  300
//   remote_breaker_seconds     LINKD_REMOTE_BREAKER_SECONDS     30
//   remote_instance_name LINKD_REMOTE_INSTANCE_NAME (none; REAPI instance
//                  for grpc:// tiers without a path)
//   remote_header  LINKD_REMOTE_HEADER  (none; NAME=VALUE sent with every
//                  REAPI call; repeatable, one per line in the variable)
//   remote_header_file LINKD_REMOTE_HEADER_FILE (none; NAME=VALUE lines)
//   remote_tls_ca / remote_tls_cert / remote_tls_key
//                  LINKD_REMOTE_TLS_CA / _CERT / _KEY (PEM files, grpcs://)
//   remote_executor LINKD_REMOTE_EXECUTOR (none; grpc(s):// REAPI cluster
//                  that cache misses may run on, docs/farm.md)
//   remote_linker  LINKD_REMOTE_LINKER  (none: linkd-lld is shipped as
//                  inputs; else its path on the cluster's workers)
//   remote_platform LINKD_REMOTE_PLATFORM (none; NAME=VALUE,... platform
//                  properties of the actions)
//   watch_inputs   LINKD_WATCH_INPUTS   true (inotify on held inputs)
//   incremental_verify LINKD_INCREMENTAL_VERIFY false (LLD links in full
//                  beside each incremental patch; docs/incremental.md)
//   incremental_slack LINKD_INCREMENTAL_SLACK none (room the full link of
//                  an incremental output gives each object's sections:
//                  P%+B, a percentage of each size plus B bytes)
//   farm           LINKD_FARM           (none; gRPC target of a link farm,
//                                        see docs/farm.md)
//   farm_policy    LINKD_FARM_POLICY    auto  (remote, local, auto)
//   farm_min_input LINKD_FARM_MIN_INPUT 64M   (auto: offload above this)
//   farm_ca / farm_cert / farm_key  LINKD_FARM_CA / _CERT / _KEY (PEM files)
//   farm_token_file LINKD_FARM_TOKEN_FILE (bearer token)
//   farm_tls_name  LINKD_FARM_TLS_NAME  (the name the nodes' certificates
//                  carry; default: the target's host, or its first address)
//   farm_insecure  LINKD_FARM_INSECURE  false (plaintext, for loopback)
//   farm_timeout_ms         LINKD_FARM_TIMEOUT_MS          600000
//   farm_connect_timeout_ms LINKD_FARM_CONNECT_TIMEOUT_MS  2000
//   log_format     LINKD_LOG_FORMAT     text  (json: one object a line)
//   metrics_listen LINKD_METRICS_LISTEN (none; HOST:PORT or PORT = loopback:
//                  Prometheus metrics over HTTP, docs/usage.md)
//   metrics_allow  LINKD_METRICS_ALLOW  (none; comma-separated addresses or
//                  CIDRs that may scrape besides loopback)
//   drain_timeout  LINKD_DRAIN_TIMEOUT  30  (seconds a stopping daemon or
//                  node lets running links finish)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace linkd {

struct Config {
  bool cacheEnabled = true;
  std::string cacheDir;
  uint64_t maxSize = 10ull << 30;
  std::string baseDir;
  std::set<std::string> sloppiness;
  bool watchInputs = true; // inotify on held inputs (cache/input_watch.h)
  // Incremental relinks: a full link beside each patch, compared with it.
  bool incrementalVerify = false;
  // Incremental relinks: the room a full link leaves (incremental_slack,
  // "P%+B"); both 0: the objects are linked as they are.
  uint64_t incrementalSlackPercent = 0;
  uint64_t incrementalSlackBytes = 0;
  uint64_t idleTimeoutSeconds = 600;
  unsigned jobs = 0; // 0: number of cores
  std::string logLevel = "info";
  std::string logFormat = "text";   // text (key=value) or json, a line each
  std::vector<std::string> remotes; // tier URLs, in lookup order
  std::string remoteKey;            // HMAC key (file content or env)
  uint64_t remoteTimeoutMs = 5000;
  uint64_t remoteConnectTimeoutMs = 300;
  uint64_t remoteBreakerSeconds = 30;
  // REAPI endpoints (grpc:// and grpcs:// tiers): the instance name a URL
  // without a path uses, TLS files, and headers sent with every call
  // (remote_header values, "NAME=VALUE" lines, accumulated from every
  // source; remote_header_file: more of them, read when the daemon starts,
  // so a secret stays out of the config file).
  std::string remoteInstanceName;
  std::string remoteTlsCa, remoteTlsCert, remoteTlsKey;
  std::vector<std::string> remoteHeaders;
  std::string remoteHeaderFile;
  // A Remote Execution API cluster as the offload target (grpc:// or
  // grpcs://; farm_policy and farm_min_input apply), the linkd-lld its
  // workers run, and the platform properties of its actions.
  std::string remoteExecutor;
  std::string remoteLinker;
  std::vector<std::pair<std::string, std::string>> remotePlatform;
  std::string farm;                // gRPC target; empty: no farm
  std::string farmPolicy = "auto"; // remote, local, auto
  uint64_t farmMinInput = 64ull << 20;
  std::string farmCa, farmCert, farmKey, farmTokenFile, farmTlsName;
  bool farmInsecure = false;
  uint64_t farmTimeoutMs = 600000;
  uint64_t farmConnectTimeoutMs = 2000;
  std::string metricsListen;             // empty: no metrics endpoint
  std::vector<std::string> metricsAllow; // peers besides loopback
  uint64_t drainTimeoutSeconds = 30;
  std::string sourceFile;            // the file read, if any
  std::vector<std::string> warnings; // unknown keys, bad values
  // Where each key's value came from: "FILE:LINE" or the environment
  // variable's name; a key absent here has its default.
  std::map<std::string, std::string> sources;
};

Config loadConfig();

// Every key with its effective value (as the file would spell it) and where
// it came from ("default", "FILE:LINE", "LINKD_..."), in the order of the
// table above. The remote key's value is never shown.
struct Setting {
  std::string key, value, source;
};
std::vector<Setting> listSettings(const Config &c);

// The environment variables that set a key (LINKD_CACHE_DIR, ...).
std::vector<std::string> settingVariables();
// The setting `var`=`value` makes, as listSettings would show it (source:
// `var`); nullopt for an unknown variable or a bad value.
std::optional<Setting> settingFromVariable(const std::string &var,
                                           const std::string &value);

// "10G" -> 10 GiB; nullopt if malformed.
std::optional<uint64_t> parseSize(const std::string &text);
std::string formatSize(uint64_t bytes);

} // namespace linkd
