// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "config/config.h"
#include "config/near_miss.h"
#include "config/runtime_paths.h"
#include "metrics/peer_allow.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace linkd {
namespace {

// `url` with the password of its user part shown as "***" (redis://u:p@h,
// http://u:p@h/...): `linkd config` and the daemon's Info reply print the
// settings, the log prints tiers by their display names.
std::string withoutPassword(const std::string &url) {
  size_t sep = url.find("://");
  if (sep == std::string::npos)
    return url;
  size_t authorityEnd = url.find_first_of("/?", sep + 3);
  std::string authority = url.substr(sep + 3, authorityEnd == std::string::npos
                                                  ? std::string::npos
                                                  : authorityEnd - sep - 3);
  size_t at = authority.rfind('@');
  size_t colon = authority.find(':');
  if (at == std::string::npos || colon == std::string::npos || colon > at)
    return url;
  return url.substr(0, sep + 3 + colon + 1) + "***" + url.substr(sep + 3 + at);
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

const char *env(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::optional<bool> parseBool(const std::string &v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on")
    return true;
  if (v == "false" || v == "0" || v == "no" || v == "off")
    return false;
  return std::nullopt;
}

std::optional<uint64_t> parseUnsigned(const std::string &v) {
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])))
    return std::nullopt;
  char *end = nullptr;
  unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (!end || *end != '\0')
    return std::nullopt;
  return n;
}

// incremental_slack: "none" (or "0", "off"), "P%", "B" or "P%+B": a
// percentage of each section's size (at most 1000) plus B bytes (at most
// 1 MiB).
std::optional<std::pair<uint64_t, uint64_t>> parseSlack(const std::string &v) {
  if (v == "none" || v == "off" || v == "0")
    return std::pair<uint64_t, uint64_t>{0, 0};
  uint64_t percent = 0, bytes = 0;
  std::string rest = v;
  if (size_t pc = v.find('%'); pc != std::string::npos) {
    auto p = parseUnsigned(v.substr(0, pc));
    if (!p || *p > 1000)
      return std::nullopt;
    percent = *p;
    rest = v.substr(pc + 1);
    if (rest.empty())
      return std::pair{percent, bytes};
    if (rest[0] != '+')
      return std::nullopt;
    rest = rest.substr(1);
  }
  auto b = parseUnsigned(rest);
  if (!b || *b > (1u << 20))
    return std::nullopt;
  return std::pair{percent, *b};
}

std::string formatSlack(uint64_t percent, uint64_t bytes) {
  if (percent == 0 && bytes == 0)
    return "none";
  if (percent == 0)
    return std::to_string(bytes);
  return std::to_string(percent) + "%" +
         (bytes ? "+" + std::to_string(bytes) : "");
}

std::set<std::string> parseList(const std::string &v) {
  std::set<std::string> out;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    std::string item = trim(v.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (!item.empty())
      out.insert(item);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return out;
}

// The keys, each with the variable that overrides it (cache: LINKD_NOCACHE,
// handled apart).
struct KeyInfo {
  const char *key;
  const char *env;
  std::string (*show)(const Config &); // the value as the file spells it
};

std::string flag(bool b) { return b ? "true" : "false"; }
std::string number(uint64_t n) { return std::to_string(n); }
std::string sizeText(uint64_t n);
std::string join(const std::vector<std::string> &items);

const KeyInfo kKeys[] = {
    {"cache", nullptr,
     [](const Config &c) -> std::string { return flag(c.cacheEnabled); }},
    {"cache_dir", "LINKD_CACHE_DIR",
     [](const Config &c) -> std::string { return c.cacheDir; }},
    {"max_size", "LINKD_MAX_SIZE",
     [](const Config &c) -> std::string { return sizeText(c.maxSize); }},
    {"base_dir", "LINKD_BASE_DIR",
     [](const Config &c) -> std::string { return c.baseDir; }},
    {"sloppiness", "LINKD_SLOPPINESS",
     [](const Config &c) -> std::string {
       return join({c.sloppiness.begin(), c.sloppiness.end()});
     }},
    {"watch_inputs", "LINKD_WATCH_INPUTS",
     [](const Config &c) -> std::string { return flag(c.watchInputs); }},
    {"incremental_verify", "LINKD_INCREMENTAL_VERIFY",
     [](const Config &c) -> std::string { return flag(c.incrementalVerify); }},
    {"incremental_slack", "LINKD_INCREMENTAL_SLACK",
     [](const Config &c) -> std::string {
       return formatSlack(c.incrementalSlackPercent, c.incrementalSlackBytes);
     }},
    {"idle_timeout", "LINKD_IDLE_TIMEOUT",
     [](const Config &c) -> std::string {
       return number(c.idleTimeoutSeconds);
     }},
    {"jobs", "LINKD_JOBS",
     [](const Config &c) -> std::string { return number(c.jobs); }},
    {"log_level", "LINKD_LOG",
     [](const Config &c) -> std::string { return c.logLevel; }},
    {"log_format", "LINKD_LOG_FORMAT",
     [](const Config &c) -> std::string { return c.logFormat; }},
    {"remote", "LINKD_REMOTE",
     [](const Config &c) -> std::string {
       std::vector<std::string> shown;
       shown.reserve(c.remotes.size());
       for (const std::string &url : c.remotes)
         shown.push_back(withoutPassword(url));
       return join(shown);
     }},
    {"remote_key_file", "LINKD_REMOTE_KEY_FILE",
     [](const Config &c) -> std::string {
       return c.remoteKey.empty() ? "" : "(set)";
     }},
    {"remote_key", "LINKD_REMOTE_KEY",
     [](const Config &c) -> std::string {
       return c.remoteKey.empty() ? "" : "(set)";
     }},
    {"remote_timeout_ms", "LINKD_REMOTE_TIMEOUT_MS",
     [](const Config &c) -> std::string { return number(c.remoteTimeoutMs); }},
    {"remote_connect_timeout_ms", "LINKD_REMOTE_CONNECT_TIMEOUT_MS",
     [](const Config &c) -> std::string {
       return number(c.remoteConnectTimeoutMs);
     }},
    {"remote_breaker_seconds", "LINKD_REMOTE_BREAKER_SECONDS",
     [](const Config &c) -> std::string {
       return number(c.remoteBreakerSeconds);
     }},
    {"remote_instance_name", "LINKD_REMOTE_INSTANCE_NAME",
     [](const Config &c) -> std::string { return c.remoteInstanceName; }},
    {"remote_header", "LINKD_REMOTE_HEADER",
     [](const Config &c) -> std::string {
       // Names only: values are credentials.
       std::vector<std::string> names;
       names.reserve(c.remoteHeaders.size());
       for (const std::string &h : c.remoteHeaders)
         names.push_back(h.substr(0, h.find_first_of("=:")) + "=(set)");
       return join(names);
     }},
    {"remote_header_file", "LINKD_REMOTE_HEADER_FILE",
     [](const Config &c) -> std::string { return c.remoteHeaderFile; }},
    {"remote_tls_ca", "LINKD_REMOTE_TLS_CA",
     [](const Config &c) -> std::string { return c.remoteTlsCa; }},
    {"remote_tls_cert", "LINKD_REMOTE_TLS_CERT",
     [](const Config &c) -> std::string { return c.remoteTlsCert; }},
    {"remote_tls_key", "LINKD_REMOTE_TLS_KEY",
     [](const Config &c) -> std::string { return c.remoteTlsKey; }},
    {"remote_executor", "LINKD_REMOTE_EXECUTOR",
     [](const Config &c) -> std::string { return c.remoteExecutor; }},
    {"remote_linker", "LINKD_REMOTE_LINKER",
     [](const Config &c) -> std::string { return c.remoteLinker; }},
    {"remote_platform", "LINKD_REMOTE_PLATFORM",
     [](const Config &c) -> std::string {
       std::vector<std::string> items;
       items.reserve(c.remotePlatform.size());
       for (const auto &[name, value] : c.remotePlatform)
         items.push_back(name + "=" + value);
       return join(items);
     }},
    {"farm", "LINKD_FARM",
     [](const Config &c) -> std::string { return c.farm; }},
    {"farm_policy", "LINKD_FARM_POLICY",
     [](const Config &c) -> std::string { return c.farmPolicy; }},
    {"farm_min_input", "LINKD_FARM_MIN_INPUT",
     [](const Config &c) -> std::string { return sizeText(c.farmMinInput); }},
    {"farm_ca", "LINKD_FARM_CA",
     [](const Config &c) -> std::string { return c.farmCa; }},
    {"farm_cert", "LINKD_FARM_CERT",
     [](const Config &c) -> std::string { return c.farmCert; }},
    {"farm_key", "LINKD_FARM_KEY",
     [](const Config &c) -> std::string { return c.farmKey; }},
    {"farm_token_file", "LINKD_FARM_TOKEN_FILE",
     [](const Config &c) -> std::string { return c.farmTokenFile; }},
    {"farm_tls_name", "LINKD_FARM_TLS_NAME",
     [](const Config &c) -> std::string { return c.farmTlsName; }},
    {"farm_insecure", "LINKD_FARM_INSECURE",
     [](const Config &c) -> std::string { return flag(c.farmInsecure); }},
    {"farm_timeout_ms", "LINKD_FARM_TIMEOUT_MS",
     [](const Config &c) -> std::string { return number(c.farmTimeoutMs); }},
    {"farm_connect_timeout_ms", "LINKD_FARM_CONNECT_TIMEOUT_MS",
     [](const Config &c) -> std::string {
       return number(c.farmConnectTimeoutMs);
     }},
    {"metrics_listen", "LINKD_METRICS_LISTEN",
     [](const Config &c) -> std::string { return c.metricsListen; }},
    {"metrics_allow", "LINKD_METRICS_ALLOW",
     [](const Config &c) -> std::string { return join(c.metricsAllow); }},
    {"drain_timeout", "LINKD_DRAIN_TIMEOUT",
     [](const Config &c) -> std::string {
       return number(c.drainTimeoutSeconds);
     }},
};

std::string unknownKey(const std::string &key) {
  std::vector<std::string> known;
  for (const KeyInfo &k : kKeys)
    known.emplace_back(k.key);
  std::string msg = "unknown key '" + key + "'";
  if (auto near = nearestName(key, known))
    msg += " (did you mean " + *near + "?)";
  return msg;
}

void applyValue(Config &c, const std::string &key, const std::string &value,
                const std::string &where);

// Sets `key` from `where` (FILE:LINE or a variable's name) and records that
// as its source, unless the value is bad (then it keeps what it had).
void apply(Config &c, const std::string &key, const std::string &value,
           const std::string &where) {
  size_t warningsBefore = c.warnings.size();
  applyValue(c, key, value, where);
  if (c.warnings.size() == warningsBefore)
    c.sources[key] = where;
}

void applyValue(Config &c, const std::string &key, const std::string &value,
                const std::string &where) {
  auto bad = [&] {
    c.warnings.push_back(where + ": bad value for " + key + ": '" + value +
                         "'");
  };
  if (key == "cache") {
    if (auto b = parseBool(value))
      c.cacheEnabled = *b;
    else
      bad();
  } else if (key == "cache_dir") {
    c.cacheDir = value;
  } else if (key == "max_size") {
    if (auto n = parseSize(value))
      c.maxSize = *n;
    else
      bad();
  } else if (key == "base_dir") {
    c.baseDir = value;
  } else if (key == "sloppiness") {
    c.sloppiness = parseList(value);
    for (const std::string &s : c.sloppiness)
      if (s != "coff_timestamp")
        c.warnings.push_back(where + ": unknown sloppiness '" + s + "'");
  } else if (key == "watch_inputs") {
    if (auto b = parseBool(value))
      c.watchInputs = *b;
    else
      bad();
  } else if (key == "incremental_verify") {
    if (auto b = parseBool(value))
      c.incrementalVerify = *b;
    else
      bad();
  } else if (key == "incremental_slack") {
    if (auto slack = parseSlack(value)) {
      c.incrementalSlackPercent = slack->first;
      c.incrementalSlackBytes = slack->second;
    } else {
      bad();
    }
  } else if (key == "idle_timeout") {
    if (auto n = parseUnsigned(value))
      c.idleTimeoutSeconds = *n;
    else
      bad();
  } else if (key == "jobs") {
    if (auto n = parseUnsigned(value); n && *n > 0)
      c.jobs = static_cast<unsigned>(*n);
    else
      bad();
  } else if (key == "log_level") {
    c.logLevel = value;
  } else if (key == "log_format") {
    if (value == "text" || value == "json")
      c.logFormat = value;
    else
      bad();
  } else if (key == "remote") {
    // In the order given: tiers are tried in it.
    c.remotes.clear();
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t comma = value.find(',', pos);
      std::string item = trim(value.substr(
          pos, comma == std::string::npos ? std::string::npos : comma - pos));
      if (!item.empty())
        c.remotes.push_back(item);
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
  } else if (key == "remote_key_file") {
    std::ifstream in(value);
    std::string k;
    if (in && std::getline(in, k) && !trim(k).empty())
      c.remoteKey = trim(k);
    else
      c.warnings.push_back(where + ": cannot read remote_key_file " + value);
  } else if (key == "remote_key") {
    c.remoteKey = value;
  } else if (key == "remote_timeout_ms" || key == "remote_connect_timeout_ms" ||
             key == "remote_breaker_seconds") {
    auto n = parseUnsigned(value);
    if (!n)
      bad();
    else if (key == "remote_timeout_ms")
      c.remoteTimeoutMs = *n;
    else if (key == "remote_connect_timeout_ms")
      c.remoteConnectTimeoutMs = *n;
    else
      c.remoteBreakerSeconds = *n;
  } else if (key == "remote_instance_name") {
    c.remoteInstanceName = value;
  } else if (key == "remote_header") {
    // Accumulates (Bazel's --remote_header does): one per line.
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t nl = value.find('\n', pos);
      std::string item = trim(value.substr(
          pos, nl == std::string::npos ? std::string::npos : nl - pos));
      if (!item.empty() && item.find_first_of("=:") == std::string::npos)
        c.warnings.push_back(where + ": bad value for remote_header: '" +
                             item.substr(0, 40) + "' (expected NAME=VALUE)");
      else if (!item.empty())
        c.remoteHeaders.push_back(item);
      if (nl == std::string::npos)
        break;
      pos = nl + 1;
    }
  } else if (key == "remote_header_file") {
    c.remoteHeaderFile = value;
  } else if (key == "remote_tls_ca") {
    c.remoteTlsCa = value;
  } else if (key == "remote_tls_cert") {
    c.remoteTlsCert = value;
  } else if (key == "remote_tls_key") {
    c.remoteTlsKey = value;
  } else if (key == "remote_executor") {
    if (value.empty() || value.starts_with("grpc://") ||
        value.starts_with("grpcs://"))
      c.remoteExecutor = value;
    else
      c.warnings.push_back(where + ": bad value for remote_executor: '" +
                           value +
                           "' (expected grpc://host:port or "
                           "grpcs://host[:port])");
  } else if (key == "remote_linker") {
    c.remoteLinker = value;
  } else if (key == "remote_platform") {
    // NAME=VALUE,NAME=VALUE (Bazel's exec_properties); sorted by name, as
    // REAPI wants them.
    std::vector<std::pair<std::string, std::string>> props;
    bool ok = true;
    size_t pos = 0;
    while (pos <= value.size()) {
      size_t comma = value.find(',', pos);
      std::string item = trim(value.substr(
          pos, comma == std::string::npos ? std::string::npos : comma - pos));
      if (size_t eq = item.find('=');
          !item.empty() && (eq == 0 || eq == std::string::npos))
        ok = false;
      else if (!item.empty())
        props.emplace_back(trim(item.substr(0, item.find('='))),
                           trim(item.substr(item.find('=') + 1)));
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
    std::sort(props.begin(), props.end());
    if (ok)
      c.remotePlatform = props;
    else
      bad();
  } else if (key == "farm") {
    c.farm = value;
  } else if (key == "farm_policy") {
    if (value == "remote" || value == "local" || value == "auto")
      c.farmPolicy = value;
    else
      bad();
  } else if (key == "farm_min_input") {
    if (auto n = parseSize(value))
      c.farmMinInput = *n;
    else
      bad();
  } else if (key == "farm_ca") {
    c.farmCa = value;
  } else if (key == "farm_cert") {
    c.farmCert = value;
  } else if (key == "farm_key") {
    c.farmKey = value;
  } else if (key == "farm_tls_name") {
    c.farmTlsName = value;
  } else if (key == "farm_token_file") {
    c.farmTokenFile = value;
  } else if (key == "farm_insecure") {
    if (auto b = parseBool(value))
      c.farmInsecure = *b;
    else
      bad();
  } else if (key == "farm_timeout_ms" || key == "farm_connect_timeout_ms") {
    auto n = parseUnsigned(value);
    if (!n || *n == 0)
      bad();
    else if (key == "farm_timeout_ms")
      c.farmTimeoutMs = *n;
    else
      c.farmConnectTimeoutMs = *n;
  } else if (key == "metrics_listen") {
    c.metricsListen = value;
  } else if (key == "metrics_allow") {
    std::set<std::string> items = parseList(value);
    std::string err;
    if (PeerAllowList::parse({items.begin(), items.end()}, &err))
      c.metricsAllow.assign(items.begin(), items.end());
    else
      c.warnings.push_back(where + ": bad value for metrics_allow: " + err);
  } else if (key == "drain_timeout") {
    if (auto n = parseUnsigned(value))
      c.drainTimeoutSeconds = *n;
    else
      bad();
  } else {
    c.warnings.push_back(where + ": " + unknownKey(key));
  }
}

std::string configPath() {
  if (const char *p = env("LINKD_CONFIG"))
    return p;
  if (const char *x = env("XDG_CONFIG_HOME"))
    return std::string(x) + "/linkd/linkd.conf";
  if (std::string h = homeDirectory(); !h.empty())
    return h + "/.config/linkd/linkd.conf";
  return {};
}

std::string defaultCacheDir() {
  if (const char *x = env("XDG_CACHE_HOME"))
    return std::string(x) + "/linkd";
  if (std::string h = homeDirectory(); !h.empty())
    return h + "/.cache/linkd";
  return "/tmp/linkd-cache";
}

} // namespace

std::optional<uint64_t> parseSize(const std::string &text) {
  std::string t = trim(text);
  if (t.empty())
    return std::nullopt;
  uint64_t mult = 1;
  char last =
      static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
  if (last == 'B' && t.size() > 1) {
    t.pop_back();
    last =
        static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
  }
  const std::string units = "KMGT";
  if (size_t u = units.find(last); u != std::string::npos) {
    for (size_t i = 0; i <= u; ++i)
      mult *= 1024;
    t.pop_back();
  }
  auto n = parseUnsigned(trim(t));
  if (!n)
    return std::nullopt;
  return *n * mult;
}

std::string formatSize(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

Config loadConfig() {
  Config c;
  c.cacheDir = defaultCacheDir();
  std::string path = configPath();
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in && env("LINKD_CONFIG"))
      c.warnings.push_back("LINKD_CONFIG: cannot read " + path + ": " +
                           std::strerror(errno));
    if (in) {
      c.sourceFile = path;
      std::string line;
      int lineNo = 0;
      while (std::getline(in, line)) {
        ++lineNo;
        std::string t = trim(line);
        if (t.empty() || t[0] == '#')
          continue;
        size_t eq = t.find('=');
        std::string where = path + ":" + std::to_string(lineNo);
        if (eq == std::string::npos) {
          c.warnings.push_back(where + ": expected key = value");
          continue;
        }
        apply(c, trim(t.substr(0, eq)), trim(t.substr(eq + 1)), where);
      }
    }
  }
  for (const KeyInfo &k : kKeys)
    if (const char *v = k.env ? env(k.env) : nullptr)
      apply(c, k.key, v, k.env);
  if (const char *v = env("LINKD_NOCACHE"); v && std::string(v) != "0") {
    c.cacheEnabled = false;
    c.sources["cache"] = "LINKD_NOCACHE";
  }
  if (c.jobs == 0)
    c.jobs = std::max(1u, std::thread::hardware_concurrency());
  return c;
}

namespace {

std::string join(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &i : items)
    out += (out.empty() ? "" : ",") + i;
  return out;
}

// A size as the file would spell it: "10G" rather than 10737418240.
std::string sizeText(uint64_t n) {
  for (const char *u : {"T", "G", "M", "K"}) {
    uint64_t unit = 1ull << (10 * (std::string("KMGT").find(*u) + 1));
    if (n && n % unit == 0)
      return number(n / unit) + u;
  }
  return number(n);
}

std::string valueOf(const Config &c, std::string_view key) {
  for (const KeyInfo &k : kKeys)
    if (key == k.key)
      return k.show(c);
  return {};
}

} // namespace

std::vector<std::string> settingVariables() {
  std::vector<std::string> out;
  for (const KeyInfo &k : kKeys)
    if (k.env)
      out.emplace_back(k.env);
  return out;
}

std::optional<Setting> settingFromVariable(const std::string &var,
                                           const std::string &value) {
  for (const KeyInfo &k : kKeys) {
    if (!k.env || var != k.env)
      continue;
    Config c;
    apply(c, k.key, value, var);
    if (!c.warnings.empty())
      return std::nullopt;
    return Setting{k.key, valueOf(c, k.key), var};
  }
  return std::nullopt;
}

std::vector<Setting> listSettings(const Config &c) {
  std::vector<Setting> out;
  for (const KeyInfo &k : kKeys) {
    auto it = c.sources.find(k.key);
    out.push_back({k.key, valueOf(c, k.key),
                   it == c.sources.end() ? "default" : it->second});
  }
  return out;
}

} // namespace linkd
