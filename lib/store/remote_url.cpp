// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "store/remote_backend.h"

#include <cstdlib>
#include <fstream>

namespace linkd {
namespace {

std::string decodePercent(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool applyQuery(RemoteTierConfig &c, const std::string &query,
                std::string *error) {
  size_t pos = 0;
  while (pos < query.size()) {
    size_t amp = query.find('&', pos);
    std::string item = query.substr(pos, amp == std::string::npos
                                              ? std::string::npos
                                              : amp - pos);
    pos = amp == std::string::npos ? query.size() : amp + 1;
    size_t eq = item.find('=');
    std::string k = item.substr(0, eq);
    std::string v = eq == std::string::npos ? "" : decodePercent(item.substr(eq + 1));
    if (k == "mode") {
      if (v == "read-write" || v == "rw")
        c.mode = TierMode::ReadWrite;
      else if (v == "read-only" || v == "ro")
        c.mode = TierMode::ReadOnly;
      else if (v == "write-only" || v == "wo")
        c.mode = TierMode::WriteOnly;
      else {
        *error = "unknown mode '" + v + "' (read-write, read-only, write-only)";
        return false;
      }
    } else if (k == "prefix") {
      c.keyPrefix = v;
    } else if (k == "ttl") {
      c.ttlSeconds = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "db") {
      c.db = std::atoi(v.c_str());
    } else if (k == "token_file") {
      std::ifstream in(v);
      if (!std::getline(in, c.bearerToken)) {
        *error = "cannot read token_file " + v;
        return false;
      }
    } else if (k == "insecure") {
      c.tlsInsecure = v == "1" || v == "true";
    } else if (!k.empty()) {
      *error = "unknown parameter '" + k + "'";
      return false;
    }
  }
  return true;
}

} // namespace

std::string RemoteTierConfig::displayName() const {
  if (scheme == "redis+unix")
    return scheme + "://" + path;
  std::string s = scheme + "://" + host;
  if (port)
    s += ":" + std::to_string(port);
  if (scheme == "redis")
    s += "/" + std::to_string(db);
  else
    s += path;
  return s;
}

std::optional<RemoteTierConfig> parseRemoteUrl(const std::string &url,
                                               std::string *error) {
  std::string err;
  RemoteTierConfig c;
  c.url = url;
  size_t sep = url.find("://");
  if (sep == std::string::npos) {
    *error = "remote '" + url + "': expected scheme://...";
    return std::nullopt;
  }
  c.scheme = url.substr(0, sep);
  std::string rest = url.substr(sep + 3);
  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (c.scheme == "redis+unix") {
    c.path = rest;
  } else if (c.scheme == "redis" || c.scheme == "http" || c.scheme == "https") {
    size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    std::string path = slash == std::string::npos ? "" : rest.substr(slash);
    if (size_t at = authority.rfind('@'); at != std::string::npos) {
      std::string cred = authority.substr(0, at);
      authority = authority.substr(at + 1);
      size_t colon = cred.find(':');
      c.user = decodePercent(cred.substr(0, colon));
      if (colon != std::string::npos)
        c.password = decodePercent(cred.substr(colon + 1));
    }
    if (size_t colon = authority.rfind(':');
        colon != std::string::npos && authority.find(']') == std::string::npos) {
      c.port = std::atoi(authority.substr(colon + 1).c_str());
      authority = authority.substr(0, colon);
    }
    c.host = authority;
    if (c.host.empty()) {
      *error = "remote '" + c.displayName() + "': no host";
      return std::nullopt;
    }
    if (c.scheme == "redis") {
      if (!c.port)
        c.port = 6379;
      if (path.size() > 1)
        c.db = std::atoi(path.c_str() + 1);
    } else {
      while (!path.empty() && path.back() == '/')
        path.pop_back();
      c.path = path;
    }
  } else if (c.scheme == "grpc" || c.scheme == "grpcs") {
    // REAPI: the path is the instance name; no credentials in the URL (they
    // are headers: remote_header, remote_header_file).
    size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    if (authority.find('@') != std::string::npos) {
      *error = "remote '" + url +
               "': credentials go in remote_header or remote_header_file";
      return std::nullopt;
    }
    if (size_t colon = authority.rfind(':');
        colon != std::string::npos &&
        authority.find(']') == std::string::npos) {
      c.port = std::atoi(authority.substr(colon + 1).c_str());
      authority = authority.substr(0, colon);
    } else if (size_t close = authority.find("]:");
               close != std::string::npos) {
      c.port = std::atoi(authority.substr(close + 2).c_str());
      authority = authority.substr(0, close + 1);
    }
    if (!c.port && c.scheme == "grpcs")
      c.port = 443;
    c.host = authority;
    if (c.host.empty() || c.port <= 0 || c.port > 65535) {
      *error = "remote '" + url + "': expected " + c.scheme + "://host:port";
      return std::nullopt;
    }
    if (slash != std::string::npos) {
      c.path = rest.substr(slash);
      while (!c.path.empty() && c.path.back() == '/')
        c.path.pop_back();
    }
  } else {
    *error = "remote '" + url + "': unknown scheme '" + c.scheme +
             "' (redis, redis+unix, http, https, grpc, grpcs)";
    return std::nullopt;
  }
  if (!applyQuery(c, query, &err)) {
    *error = "remote '" + c.displayName() + "': " + err;
    return std::nullopt;
  }
  return c;
}

} // namespace linkd
