// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// HTTP tier in the bazel-remote layout: GET/PUT/HEAD <base>/cas/<sha256-hex>
// for blobs (the raw content, as bazel-remote and REAPI HTTP fronts expect)
// and <base>/ac/<key-hex> for action entries. Works with bazel-remote
// (--disable_http_ac_validation: our action entries are not REAPI
// ActionResults) and nginx WebDAV (create_full_put_path on).
//
// Timeouts: connecting is bounded by the connect timeout; after that a
// transfer is aborted when no byte moved for the (read) timeout, so a 130 MB
// blob may take as long as it needs while a server that accepts and never
// answers costs exactly one timeout.
#include "store/remote_backend.h"

#include <curl/curl.h>

#include <cstring>

#include <chrono>
#include <mutex>
#include <vector>

namespace linkd {
namespace {

using Clock = std::chrono::steady_clock;

struct Progress {
  Clock::time_point lastMove = Clock::now();
  curl_off_t last = -1;
  std::chrono::milliseconds idleLimit;
  bool timedOut = false;
};

int onProgress(void *p, curl_off_t dltotal, curl_off_t dlnow,
               curl_off_t ultotal, curl_off_t ulnow) {
  auto *pr = static_cast<Progress *>(p);
  curl_off_t moved = dlnow + ulnow;
  auto now = Clock::now();
  if (moved != pr->last) {
    pr->last = moved;
    pr->lastMove = now;
    return 0;
  }
  if (now - pr->lastMove > pr->idleLimit) {
    pr->timedOut = true;
    return 1; // abort
  }
  return 0;
}

size_t onWrite(char *data, size_t size, size_t n, void *out) {
  static_cast<std::string *>(out)->append(data, size * n);
  return size * n;
}

struct StreamSink {
  const std::function<bool(std::string_view)> *sink;
  long status = 0;
  CURL *handle;
  bool failed = false;
};

size_t onStream(char *data, size_t size, size_t n, void *p) {
  auto *s = static_cast<StreamSink *>(p);
  if (s->status == 0)
    curl_easy_getinfo(s->handle, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status != 200)
    return size * n; // an error page: not content
  if (!(*s->sink)({data, size * n})) {
    s->failed = true;
    return 0; // aborts the transfer
  }
  return size * n;
}

struct Upload {
  std::string_view data;
  size_t pos = 0;
};

size_t onRead(char *buf, size_t size, size_t n, void *in) {
  auto *u = static_cast<Upload *>(in);
  size_t take = std::min(size * n, u->data.size() - u->pos);
  std::memcpy(buf, u->data.data() + u->pos, take);
  u->pos += take;
  return take;
}

class HttpBackend final : public RemoteBackend {
public:
  explicit HttpBackend(RemoteTierConfig c) : cfg(std::move(c)) {
    base = cfg.scheme + "://" + cfg.host;
    if (cfg.port)
      base += ":" + std::to_string(cfg.port);
    base += cfg.path;
    if (!cfg.bearerToken.empty())
      headers = curl_slist_append(
          nullptr, ("Authorization: Bearer " + cfg.bearerToken).c_str());
  }
  ~HttpBackend() override {
    for (CURL *h : pool)
      curl_easy_cleanup(h);
    curl_slist_free_all(headers);
  }

  RemoteStatus getBlob(const Digest &d, uint64_t, std::string &out) override {
    return request("GET", "/cas/" + d.hex(), {}, &out);
  }
  RemoteStatus putBlob(const Digest &d, std::string_view data) override {
    return request("PUT", "/cas/" + d.hex(), data, nullptr);
  }
  RemoteStatus
  streamBlob(const Digest &d, uint64_t,
             const std::function<bool(std::string_view)> &sink) override {
    return request("GET", "/cas/" + d.hex(), {}, nullptr, &sink);
  }
  RemoteStatus hasBlob(const Digest &d, uint64_t) override {
    return request("HEAD", "/cas/" + d.hex(), {}, nullptr);
  }
  RemoteStatus getAction(const Digest &k, std::string &out) override {
    return request("GET", "/ac/" + k.hex(), {}, &out);
  }
  RemoteStatus putAction(const Digest &k, std::string_view v) override {
    return request("PUT", "/ac/" + k.hex(), v, nullptr);
  }

private:
  CURL *take() {
    std::lock_guard lock(mu);
    if (!pool.empty()) {
      CURL *h = pool.back();
      pool.pop_back();
      return h;
    }
    return curl_easy_init();
  }
  void give(CURL *h) {
    std::lock_guard lock(mu);
    if (pool.size() < 8)
      pool.push_back(h);
    else
      curl_easy_cleanup(h);
  }

  RemoteStatus
  request(const char *method, const std::string &path, std::string_view body,
          std::string *out,
          const std::function<bool(std::string_view)> *sink = nullptr) {
    CURL *h = take();
    if (!h)
      return RemoteStatus::Error;
    curl_easy_reset(h);
    std::string url = base + path;
    std::string discard;
    Upload up{body};
    Progress pr;
    pr.idleLimit = cfg.timeout;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(cfg.connectTimeout.count()));
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, onProgress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &pr);
    StreamSink stream{sink, 0, h};
    if (sink) {
      curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024); // fewer callbacks
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, onStream);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, &stream);
    } else {
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, onWrite);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, out ? out : &discard);
    }
    if (headers)
      curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (!cfg.user.empty()) {
      curl_easy_setopt(h, CURLOPT_USERNAME, cfg.user.c_str());
      curl_easy_setopt(h, CURLOPT_PASSWORD, cfg.password.c_str());
    }
    if (cfg.tlsInsecure) {
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    std::string m = method;
    if (m == "HEAD") {
      curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (m == "PUT") {
      curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h, CURLOPT_READFUNCTION, onRead);
      curl_easy_setopt(h, CURLOPT_READDATA, &up);
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
                       static_cast<curl_off_t>(body.size()));
    }
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    give(h);
    if (rc == CURLE_OPERATION_TIMEDOUT || pr.timedOut) {
      noteError(m + " " + path + ": timed out");
      return RemoteStatus::Timeout;
    }
    if (stream.failed)
      return RemoteStatus::Error;
    if (rc != CURLE_OK) {
      noteError(m + " " + path + ": " + curl_easy_strerror(rc));
      return RemoteStatus::Error;
    }
    if (status == 404)
      return RemoteStatus::Miss;
    if (status < 200 || status >= 300) {
      noteError(m + " " + path + ": HTTP " + std::to_string(status));
      return RemoteStatus::Error;
    }
    return m == "PUT" ? RemoteStatus::Stored : RemoteStatus::Hit;
  }

  RemoteTierConfig cfg;
  std::string base;
  curl_slist *headers = nullptr;
  std::mutex mu;
  std::vector<CURL *> pool;
};

} // namespace

std::unique_ptr<RemoteBackend> makeHttpBackend(const RemoteTierConfig &cfg) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::make_unique<HttpBackend>(cfg);
}

} // namespace linkd
