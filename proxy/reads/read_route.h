#pragma once
// The decision "cache or upstream" for a GET or LIST, as a pure function of the request
// and what the cache knows about the resource. docs/routing.md is the same table in
// prose; the unit tests walk it row by row.
//
// The rule is conservative: the cache answers only requests whose answer it can render
// byte for byte like the apiserver (JSON, protobuf, PartialObjectMetadata[List] in
// either); everything else (Tables, YAML, protobuf without a protobuf cache, pretty output, subresources, uncached or unsynced
// resources, scopes the informer does not hold) passes through, and the upstream
// answers, including with its own 406 for an unacceptable Accept.

#include <optional>
#include <string_view>

#include "cache/encoding.h"
#include "proxy/media.h"
#include "proxy/request.h"
#include "watch/api_resource.h"

namespace proxy {

// On every answer to a resource request: "cache; rv=<cache RV>" when the cache
// answered, "upstream" when it passed through.
inline constexpr const char* kServedByHeader = "X-Kube-Cache-Proxy";
// Under --read-policy=cache, on RV-unset reads answered at once: at most how many seconds
// old the cache's knowledge is ("0.250").
inline constexpr const char* kStalenessHeader = "X-Kube-Cache-Proxy-Staleness";

// What the cache renders (N1, N2, N4).
enum class ReadFormat {
  Json,
  PartialObjectMetadata,
  PartialObjectMetadataList,
  Protobuf,  // from a protobuf cache
  ProtobufPartialObjectMetadata,
  ProtobufPartialObjectMetadataList,
};

inline bool isProtobuf(ReadFormat format) {
  return format == ReadFormat::Protobuf || format == ReadFormat::ProtobufPartialObjectMetadata ||
         format == ReadFormat::ProtobufPartialObjectMetadataList;
}

struct ReadRoute {
  bool from_cache = false;
  ReadFormat format = ReadFormat::Json;
  // Why the request passes through (empty when served from the cache): a short phrase
  // for debug logs and tests.
  std::string_view why;
};

// Facts about the informer that could serve the request; `resource` null = not cached.
struct CachedFacts {
  const watch::ApiResource* resource = nullptr;
  bool synced = false;
  std::string_view namespace_scope;  // "" = the informer holds every namespace
  // The encoding of the informer's store: a JSON cache answers JSON (also to a client that
  // prefers protobuf but accepts JSON), a protobuf cache only protobuf.
  cache::Encoding encoding = cache::Encoding::Json;
};

// The media type the cache would answer with for `accept` (N1, N4), or nullopt when the
// apiserver's choice is one the cache does not render (Table, YAML, protobuf without a
// JSON fallback, an unknown type: the upstream answers, 406 included).
// `from` is the encoding of the cache that would answer: JSON skips protobuf ranges (the
// apiserver answers a custom resource so, and a built-in one decodes to the same object);
// protobuf answers only when the apiserver's own choice is protobuf.
std::optional<ReadFormat> negotiateRead(const AcceptHeader& accept, bool is_list,
                                        cache::Encoding from = cache::Encoding::Json);
// True when the apiserver would answer `accept` in protobuf (its first acceptable range),
// so a protobuf cache of a built-in type is the one to ask.
bool prefersProtobuf(const AcceptHeader& accept, bool is_list);

// The route for a request whose RequestInfo verb is "get" or "list".
ReadRoute routeRead(const Request& req, const CachedFacts& facts);

// The namespace a request reads from the store: "" for cluster-scoped resources and
// all-namespace lists. GET /api/v1/namespaces/<n> is the cluster-scoped object <n>.
std::string_view storeNamespace(const RequestInfo& info, const watch::ApiResource& resource);

}  // namespace proxy
