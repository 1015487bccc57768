// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "cache/cache_stats.h"

#include "config/config.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

namespace linkd {
namespace {

// The kinds of miss explanations (link_cache.h), with their labels.
constexpr std::pair<const char *, const char *> kMissKinds[] = {
    {"argv", "an option"},
    {"outside_base_dir", "a path outside the base dir"},
    {"pwd", "PWD"},
    {"env", "an environment variable"},
    {"cwd", "the working directory"},
    {"base_dir", "the base dir"},
    {"other", "versions, umask, colour"},
    {"input", "an input's content"},
    {"embedded_name", "a name in the stored output"},
    {"required_name", "a name the stored result requires"},
    {"new_output", "a new output"}};

constexpr const char *kReasonPrefix = "uncacheable_reason.";
constexpr const char *kArchiveReasonPrefix = "archive_uncacheable_reason.";
constexpr const char *kNotStoredPrefix = "not_stored_reason.";
constexpr const char *kIncrementalFallbackPrefix = "incremental_fallback_";

// "skipped_breaker_open" -> "skipped breaker open".
std::string label(std::string name) {
  for (char &c : name)
    if (c == '_')
      c = ' ';
  return name;
}

void line(std::ostringstream &o, int indent, const std::string &name,
          const std::string &value) {
  std::string head = std::string(indent, ' ') + name;
  o << head << std::string(head.size() < 21 ? 21 - head.size() : 1, ' ')
    << value << "\n";
}

std::string prefixFor(RequestKind kind) {
  return kind == RequestKind::Archive ? "archive_" : "";
}

} // namespace

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

uint64_t CacheStats::get(const std::string &name) const {
  auto it = counters.find(name);
  return it == counters.end() ? 0 : it->second;
}

void CacheStats::add(const std::string &name, uint64_t n) {
  counters[name] += n;
}

// One request of `kind` with `outcome` ("hits", "misses", ...).
void CacheStats::count(RequestKind kind, const char *outcome) {
  add(prefixFor(kind) + "requests", 1);
  add(prefixFor(kind) + outcome, 1);
}

void CacheStats::load() {
  std::lock_guard lock(mu);
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.rfind('=');
    if (eq == std::string::npos)
      continue;
    std::string key = line.substr(0, eq);
    uint64_t v = std::strtoull(line.c_str() + eq + 1, nullptr, 10);
    if (key.rfind(kReasonPrefix, 0) == 0)
      uncacheableReasons[key.substr(std::string(kReasonPrefix).size())] = v;
    else if (key.rfind(kArchiveReasonPrefix, 0) == 0)
      archiveUncacheableReasons[key.substr(
          std::string(kArchiveReasonPrefix).size())] = v;
    else
      counters[key] = v;
  }
}

void CacheStats::save() {
  std::ostringstream out;
  {
    std::lock_guard lock(mu);
    for (const auto &[k, v] : counters)
      out << k << "=" << v << "\n";
    for (const auto &[k, v] : uncacheableReasons)
      out << kReasonPrefix << k << "=" << v << "\n";
    for (const auto &[k, v] : archiveUncacheableReasons)
      out << kArchiveReasonPrefix << k << "=" << v << "\n";
  }
  std::string tmp = file + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << out.str();
    if (!f)
      return;
  }
  std::rename(tmp.c_str(), file.c_str());
}

void CacheStats::zero() {
  {
    std::lock_guard lock(mu);
    counters.clear();
    uncacheableReasons.clear();
    archiveUncacheableReasons.clear();
  }
  save();
}

void CacheStats::countHit(uint64_t savedMicros, uint64_t bytesRead,
                          RequestKind kind) {
  std::lock_guard lock(mu);
  count(kind, "hits");
  add("time_saved_micros", savedMicros);
  add("bytes_read", bytesRead);
}

void CacheStats::countMiss(RequestKind kind) {
  std::lock_guard lock(mu);
  count(kind, "misses");
}

void CacheStats::countUncacheable(const std::string &reason, RequestKind kind) {
  std::lock_guard lock(mu);
  count(kind, "uncacheable");
  (kind == RequestKind::Archive ? archiveUncacheableReasons
                                : uncacheableReasons)[reason] += 1;
}

void CacheStats::countError(RequestKind kind) {
  std::lock_guard lock(mu);
  count(kind, "errors");
}

void CacheStats::countDisabled(RequestKind kind) {
  std::lock_guard lock(mu);
  count(kind, "cache_disabled");
}

void CacheStats::countStored(uint64_t bytes) {
  std::lock_guard lock(mu);
  add("results_stored", 1);
  add("bytes_written", bytes);
}

void CacheStats::countNotStored(const std::string &reason) {
  // The reason's kind, without the file it names ("input changed during the
  // link: a.o" -> "input changed during the link"): counted by kind.
  std::string kind = reason.substr(0, reason.find(": "));
  std::lock_guard lock(mu);
  add("results_not_stored", 1);
  add(kNotStoredPrefix + (kind.empty() ? std::string("unknown") : kind), 1);
}

void CacheStats::addCounter(const char *name, uint64_t n) {
  std::lock_guard lock(mu);
  add(name, n);
}

void CacheStats::noteMiss(const std::string &output, const std::string &why) {
  std::lock_guard lock(mu);
  lastMiss =
      (output.empty() ? std::string("(no output)") : output) + ": " + why;
}

void CacheStats::raiseCounter(const char *name, uint64_t n) {
  std::lock_guard lock(mu);
  if (get(name) < n)
    counters[name] = n;
}

CacheStats::Snapshot CacheStats::snapshot() const {
  std::lock_guard lock(mu);
  return {counters, uncacheableReasons, archiveUncacheableReasons};
}

void CacheStats::countCorrupt() {
  std::lock_guard lock(mu);
  add("corrupt_hits", 1);
}

std::string
CacheStats::json(const StoreUsage &usage, uint64_t maxBytes,
                 const std::map<std::string, uint64_t> &extra) const {
  std::lock_guard lock(mu);
  std::ostringstream o;
  o << "{";
  for (const char *k :
       {"requests", "hits", "misses", "uncacheable", "errors", "cache_disabled",
        "results_stored", "results_not_stored", "bytes_read", "bytes_written",
        "time_saved_micros", "corrupt_hits", "rewrites_cached",
        "rewrites_stored", "cache_db_rebuilt", "audit_records_stored"})
    o << jsonString(k) << ": " << get(k) << ", ";
  o << "\"evictions\": " << get("evictions") << ", ";
  o << "\"corrupt_entries\": " << get("corrupt_entries") << ", ";
  o << "\"store_bytes\": " << usage.bytes << ", ";
  o << "\"store_entries\": " << usage.entries << ", ";
  o << "\"store_max_bytes\": " << maxBytes << ", ";
  for (const auto &[k, v] : extra)
    o << jsonString(k) << ": " << v << ", ";
  // Content keys (docs/cache.md): the verification's cost and why misses
  // missed.
  for (const char *k : {"name_checks", "name_check_micros", "name_check_cpu_micros",
                        "name_check_bytes",
                        "results_requiring_names"})
    o << jsonString(k) << ": " << get(k) << ", ";
  for (const auto &[k, label] : kMissKinds)
    o << jsonString(std::string("miss_explained_") + k) << ": "
      << get(std::string("miss_explained_") + k) << ", ";
  o << jsonString("last_miss") << ": " << jsonString(lastMiss) << ", ";
  for (const char *k :
       {"archive_requests", "archive_hits", "archive_misses",
        "archive_uncacheable", "archive_errors", "archive_cache_disabled"})
    o << jsonString(k) << ": " << get(k) << ", ";
  for (const char *k :
       {"kernel_links", "kernel_hits", "kernel_misses", "kernel_uncacheable",
        "kernel_cache_disabled", "kernel_errors", "kernel_blobs_uploaded",
        "kernel_blobs_present", "kernel_peak_concurrent"})
    o << jsonString(k) << ": " << get(k) << ", ";
  auto reasons = [&](const char *name,
                     const std::map<std::string, uint64_t> &m) {
    o << jsonString(name) << ": {";
    bool first = true;
    for (const auto &[reason, n] : m) {
      o << (first ? "" : ", ") << jsonString(reason) << ": " << n;
      first = false;
    }
    o << "}";
  };
  // Incremental relinks (docs/incremental.md).
  for (const char *k :
       {"incremental_links", "incremental_patches", "incremental_full_links",
        "incremental_verified", "incremental_verify_differences",
        "incremental_patch_micros", "incremental_saved_micros"})
    o << jsonString(k) << ": " << get(k) << ", ";
  std::map<std::string, uint64_t> fallbacks;
  for (const auto &[k, v] : counters)
    if (k.starts_with(kIncrementalFallbackPrefix))
      fallbacks[k.substr(std::string_view(kIncrementalFallbackPrefix).size())] =
          v;
  reasons("incremental_fallbacks", fallbacks);
  o << ", ";
  reasons("archive_uncacheable_reasons", archiveUncacheableReasons);
  o << ", ";
  reasons("uncacheable_reasons", uncacheableReasons);
  o << "}";
  return o.str();
}

std::string CacheStats::text(const StoreUsage &usage, uint64_t maxBytes,
                             const std::map<std::string, uint64_t> &extra,
                             bool all) const {
  std::lock_guard lock(mu);
  std::ostringstream o;
  auto pct = [](uint64_t n, uint64_t of) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%5.1f%%",
                  of ? 100.0 * static_cast<double>(n) / static_cast<double>(of)
                     : 0.0);
    return std::string(buf);
  };
  // One kind of request: its total, outcomes and uncacheable reasons.
  auto requests = [&](const char *heading, const std::string &prefix,
                      const std::map<std::string, uint64_t> &reasons) {
    uint64_t req = get(prefix + "requests");
    line(o, 0, heading, std::to_string(req));
    for (auto [name, key] : {std::pair{"hits", "hits"},
                             {"misses", "misses"},
                             {"uncacheable", "uncacheable"}}) {
      uint64_t n = get(prefix + key);
      line(o, 2, name, std::to_string(n) + "  " + pct(n, req));
      if (std::string_view(key) == "uncacheable")
        for (const auto &[reason, r] : reasons)
          o << "    " << reason << ": " << r << "\n";
    }
    if (all || get(prefix + "errors"))
      line(o, 2, "errors", std::to_string(get(prefix + "errors")));
    if (all || get(prefix + "cache_disabled"))
      line(o, 2, "cache off", std::to_string(get(prefix + "cache_disabled")));
  };
  requests("link requests", "", uncacheableReasons);
  if (all || get("archive_requests"))
    requests("archive requests", "archive_", archiveUncacheableReasons);
  if (uint64_t kreq = get("kernel_links")) // liblinkd (docs/kernels.md)
    o << "kernel links         " << kreq << " (hits " << get("kernel_hits")
      << ", misses " << get("kernel_misses") << ", uncacheable "
      << get("kernel_uncacheable") << ", errors " << get("kernel_errors")
      << ", inputs uploaded " << get("kernel_blobs_uploaded") << ")\n";
  // Why misses missed: what differed from the nearest stored link of the
  // same output (link_cache.h explainMiss), and the last one in full.
  bool explained = false;
  for (const auto &[k, label] : kMissKinds)
    explained = explained || get(std::string("miss_explained_") + k);
  if (all || explained) {
    o << "misses explained\n";
    for (const auto &[k, label] : kMissKinds)
      if (uint64_t n = get(std::string("miss_explained_") + k); n || all)
        line(o, 2, label, std::to_string(n));
    if (!lastMiss.empty())
      o << "  last: " << lastMiss << "\n";
  }
  if (uint64_t n = get("incremental_links"); n || all) {
    char saved[32];
    std::snprintf(saved, sizeof(saved), "%.3f s",
                  static_cast<double>(get("incremental_saved_micros")) / 1e6);
    o << "incremental links    " << n << " (patched "
      << get("incremental_patches") << ", in full "
      << get("incremental_full_links") << ", verified "
      << get("incremental_verified") << ", differences "
      << get("incremental_verify_differences") << ", time saved " << saved
      << ")\n";
    for (const auto &[k, v] : counters)
      if (k.starts_with(kIncrementalFallbackPrefix))
        o << "    in full, "
          << k.substr(std::string_view(kIncrementalFallbackPrefix).size())
          << ": " << v << "\n";
  }
  line(o, 0, "results stored", std::to_string(get("results_stored")));
  if (all || get("results_not_stored")) {
    line(o, 2, "not stored", std::to_string(get("results_not_stored")));
    for (const auto &[k, v] : counters)
      if (k.starts_with(kNotStoredPrefix))
        o << "    " << k.substr(std::string_view(kNotStoredPrefix).size())
          << ": " << v << "\n";
  }
  line(o, 0, "bytes written", formatSize(get("bytes_written")));
  line(o, 0, "bytes read (hits)", formatSize(get("bytes_read")));
  char saved[32];
  std::snprintf(saved, sizeof(saved), "%.3f s",
                static_cast<double>(get("time_saved_micros")) / 1e6);
  line(o, 0, "time saved", saved);
  line(o, 0, "store",
       formatSize(usage.bytes) + " of " + formatSize(maxBytes) + ", " +
           std::to_string(usage.entries) + " entries");
  if (all || get("rewrites_cached") || get("rewrites_stored"))
    line(o, 0, "rewritten inputs",
         std::to_string(get("rewrites_cached")) + " from the cache, " +
             std::to_string(get("rewrites_stored")) + " stored");
  line(o, 0, "evictions", std::to_string(get("evictions")));
  if (all || get("corrupt_entries") || get("corrupt_hits"))
    line(o, 0, "corrupt entries", std::to_string(get("corrupt_entries")));
  if (uint64_t n = get("cache_db_rebuilt"))
    line(o, 0, "damaged databases", std::to_string(n) + " (moved aside, rebuilt)");
  if (auto it = extra.find("held_inputs"); it != extra.end())
    line(o, 0, "held input files", std::to_string(it->second));
  if (auto it = extra.find("watched_inputs"); it != extra.end())
    line(o, 0, "watched input files", std::to_string(it->second));
  // The remote tiers' and the farm's counters, each under its heading, when
  // they were used (or --all).
  for (std::string_view prefix : {"remote_", "farm_"}) {
    bool used = false;
    for (const auto &[k, v] : extra)
      used = used || (k.starts_with(prefix) && (v || all));
    if (!used)
      continue;
    o << (prefix == "farm_" ? "farm\n" : "remote tiers\n");
    for (const auto &[k, v] : extra)
      if (k.starts_with(prefix))
        line(o, 2, label(k.substr(prefix.size())), std::to_string(v));
  }
  return o.str();
}

} // namespace linkd
