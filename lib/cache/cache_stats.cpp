#include "cache/cache_stats.h"

#include "config/config.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace linkd {
namespace {

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

constexpr const char *kReasonPrefix = "uncacheable_reason.";
constexpr const char *kArchiveReasonPrefix = "archive_uncacheable_reason.";

std::string prefixFor(RequestKind kind) {
  return kind == RequestKind::Archive ? "archive_" : "";
}

} // namespace

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

void CacheStats::countNotStored() {
  std::lock_guard lock(mu);
  add("results_not_stored", 1);
}

void CacheStats::addCounter(const char *name, uint64_t n) {
  std::lock_guard lock(mu);
  add(name, n);
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
        "rewrites_stored", "cache_db_rebuilt"})
    o << jsonString(k) << ": " << get(k) << ", ";
  o << "\"evictions\": " << get("evictions") << ", ";
  o << "\"corrupt_entries\": " << get("corrupt_entries") << ", ";
  o << "\"store_bytes\": " << usage.bytes << ", ";
  o << "\"store_entries\": " << usage.entries << ", ";
  o << "\"store_max_bytes\": " << maxBytes << ", ";
  for (const auto &[k, v] : extra)
    o << jsonString(k) << ": " << v << ", ";
  for (const char *k :
       {"archive_requests", "archive_hits", "archive_misses",
        "archive_uncacheable", "archive_errors", "archive_cache_disabled"})
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
  reasons("archive_uncacheable_reasons", archiveUncacheableReasons);
  o << ", ";
  reasons("uncacheable_reasons", uncacheableReasons);
  o << "}";
  return o.str();
}

std::string
CacheStats::text(const StoreUsage &usage, uint64_t maxBytes,
                 const std::map<std::string, uint64_t> &extra) const {
  std::lock_guard lock(mu);
  std::ostringstream o;
  uint64_t req = get("requests");
  auto pct = [&](uint64_t n) {
    char buf[16];
    std::snprintf(
        buf, sizeof(buf), "%5.1f%%",
        req ? 100.0 * static_cast<double>(n) / static_cast<double>(req) : 0.0);
    return std::string(buf);
  };
  o << "link requests        " << req << "\n";
  o << "  hits               " << get("hits") << "  " << pct(get("hits"))
    << "\n";
  o << "  misses             " << get("misses") << "  " << pct(get("misses"))
    << "\n";
  o << "  uncacheable        " << get("uncacheable") << "  "
    << pct(get("uncacheable")) << "\n";
  for (const auto &[reason, n] : uncacheableReasons)
    o << "    " << reason << ": " << n << "\n";
  o << "  errors             " << get("errors") << "\n";
  o << "  cache off          " << get("cache_disabled") << "\n";
  uint64_t areq = get("archive_requests");
  auto apct = [&](uint64_t n) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%5.1f%%",
                  areq ? 100.0 * static_cast<double>(n) /
                             static_cast<double>(areq)
                       : 0.0);
    return std::string(buf);
  };
  o << "archive requests     " << areq << "\n";
  o << "  hits               " << get("archive_hits") << "  "
    << apct(get("archive_hits")) << "\n";
  o << "  misses             " << get("archive_misses") << "  "
    << apct(get("archive_misses")) << "\n";
  o << "  uncacheable        " << get("archive_uncacheable") << "  "
    << apct(get("archive_uncacheable")) << "\n";
  for (const auto &[reason, n] : archiveUncacheableReasons)
    o << "    " << reason << ": " << n << "\n";
  o << "  errors             " << get("archive_errors") << "\n";
  o << "  cache off          " << get("archive_cache_disabled") << "\n";
  o << "results stored       " << get("results_stored") << " (not stored "
    << get("results_not_stored") << ")\n";
  o << "bytes written        " << formatSize(get("bytes_written")) << "\n";
  o << "bytes read (hits)    " << formatSize(get("bytes_read")) << "\n";
  char saved[32];
  std::snprintf(saved, sizeof(saved), "%.3f s",
                static_cast<double>(get("time_saved_micros")) / 1e6);
  o << "time saved           " << saved << "\n";
  o << "store                " << formatSize(usage.bytes) << " of "
    << formatSize(maxBytes) << ", " << usage.entries << " entries\n";
  o << "rewritten inputs     " << get("rewrites_cached") << " from the cache, "
    << get("rewrites_stored") << " stored\n";
  o << "evictions            " << get("evictions") << "\n";
  o << "corrupt entries      " << get("corrupt_entries") << "\n";
  if (uint64_t n = get("cache_db_rebuilt"))
    o << "damaged databases    " << n << " (moved aside, rebuilt)\n";
  if (auto it = extra.find("held_inputs"); it != extra.end())
    o << "held input files     " << it->second << "\n";
  if (auto it = extra.find("watched_inputs"); it != extra.end())
    o << "watched input files  " << it->second << "\n";
  // The remote tiers' and the farm's counters, each under its heading.
  for (std::string_view prefix : {"remote_", "farm_"}) {
    bool first = true;
    for (const auto &[k, v] : extra) {
      if (!k.starts_with(prefix))
        continue;
      if (first)
        o << (prefix == "farm_" ? "farm\n" : "remote tiers\n");
      first = false;
      std::string name = k.substr(prefix.size());
      o << "  " << name
        << std::string(name.size() < 19 ? 19 - name.size() : 1, ' ') << v
        << "\n";
    }
  }
  return o.str();
}

} // namespace linkd
