#pragma once
// DiscoveryCache: the apiserver's discovery documents (/api, /apis, /api/v1,
// /apis/<group>, /apis/<group>/<version>) and /version, kept as the apiserver answered them
// (status 200, the headers that describe the document, the body bytes), one per path and
// negotiated form (proxy/discovery/discovery_form.h), never per Accept header. Clients
// rediscover often (kube-controller-manager's garbage collector and
// quota controllers every 30 s, kubectl whenever its disk cache misses a type), and each
// of those requests would otherwise go upstream.
//
// Freshness. The documents change when a CustomResourceDefinition or an APIService
// changes, or when the apiserver itself is replaced. The first two are watched: a document
// is valid only while the CRDs' and APIServices' caches hold the state it was fetched at
// (their `fingerprint`). The apiserver updates its discovery after the object changed
// (its discovery controllers run from a queue), so after a change the documents are
// neither served nor fetched until that state has been still for `settle`: meanwhile
// requests pass through and see whatever the apiserver says. `ttl` bounds what no watch
// shows (an upgrade, an aggregated server's own answer behind /apis/<group>/<version>).
//
// Plain code (no Asio): proxy/discovery/cached_discovery.cpp answers requests with it.
// Thread-safe.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/discovery/discovery_form.h"
#include "proxy/http/header_filter.h"

namespace proxy {

struct DiscoveryDocument {
  // False: the upstream answered this form's Accept with 406 (an aggregated version it does
  // not serve); the request's next form is tried, as the apiserver's negotiation would.
  bool served = true;
  HeaderList headers;  // what describes the document: Content-Type, ETag, Vary, Cache-Control
  std::string body;
  std::chrono::steady_clock::time_point fetched;
  uint64_t fingerprint = 0;  // of the CRDs' and APIServices' state it was fetched at
};
using DiscoveryDocumentPtr = std::shared_ptr<const DiscoveryDocument>;

struct DiscoveryCacheOptions {
  std::chrono::milliseconds ttl{60000};  // 0: discovery passes through
  std::chrono::milliseconds settle{3000};
  // Documents kept (the oldest fetched goes first): a path has at most 9 forms, and only
  // paths the upstream answers are kept, so this bounds a cluster of very many groups.
  size_t max_documents = 256;
};

class DiscoveryCache {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit DiscoveryCache(DiscoveryCacheOptions options = {}) : options_(options) {}
  DiscoveryCache(const DiscoveryCache&) = delete;
  DiscoveryCache& operator=(const DiscoveryCache&) = delete;

  bool enabled() const { return options_.ttl.count() > 0; }

  // True for the paths whose GET answers a discovery document or the version: "/api",
  // "/apis", "/api/v1", "/apis/<group>", "/apis/<group>/<version>", "/version" (a trailing
  // slash is another path to the apiserver, so it is not one of them).
  static bool isDiscoveryPath(std::string_view path);

  // True when a discovery GET with this query (after the "?") has the answer of one without:
  // none, or only client-go's request timeout ("timeout=32s", which kubectl sends) in the
  // form Go's time.Duration prints. Anything else, an invalid timeout included (the
  // apiserver's 400), passes through.
  static bool answerIgnoresQuery(std::string_view query);

  // The document's key: the decoded path and the form's name.
  static std::string key(std::string_view path, const DiscoveryForm& form);

  // Records the CRDs' and APIServices' state seen now; true when it has not changed for
  // `settle` (documents may be served and fetched). The first state seen counts as still.
  bool settled(uint64_t fingerprint, TimePoint now);

  // The document under `key`, valid or not (an invalid one may still answer while the
  // upstream cannot be reached), or null.
  DiscoveryDocumentPtr find(const std::string& key) const;
  // True when `doc` may answer: fetched at state `fingerprint`, within the TTL.
  bool valid(const DiscoveryDocument& doc, uint64_t fingerprint, TimePoint now) const;

  void put(const std::string& key, DiscoveryDocumentPtr doc);
  size_t size() const;

 private:
  const DiscoveryCacheOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, DiscoveryDocumentPtr, std::less<>> documents_;  // guarded by mu_
  std::optional<uint64_t> fingerprint_;                                 // guarded by mu_
  TimePoint still_since_{};                                             // guarded by mu_
};

// The headers of an upstream answer kept with its document: those that describe the
// document, not the exchange (Date, Audit-Id, Content-Length, priority-and-fairness UIDs,
// hop-by-hop fields and the encoding of the body are dropped).
HeaderList documentHeaders(const HeaderList& upstream);

// The apiserver's conditional discovery (aggregated discovery's ServeHTTPWithETag): 304
// when the request's first If-None-Match value is exactly the document's ETag.
bool notModified(const DiscoveryDocument& doc, std::string_view if_none_match);

// Order-sensitive 64-bit hash of (key, resourceVersion) pairs: the fingerprint of a
// cache's state that changes with any object added, changed or removed and not with
// bookmarks. FNV-1a.
class StateFingerprint {
 public:
  void add(std::string_view key, uint64_t resource_version);
  uint64_t value() const { return hash_; }

 private:
  void mix(const void* data, size_t size);
  uint64_t hash_ = 14695981039346656037ull;
};

}  // namespace proxy
