#include "proxy/discovery/discovery_cache.h"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>

using proxy::DiscoveryCache;
using proxy::DiscoveryCacheOptions;
using proxy::DiscoveryDocument;
using proxy::DiscoveryEncoding;
using proxy::DiscoveryForm;
using proxy::DiscoveryKind;
using proxy::HeaderList;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<DiscoveryDocument> document(std::chrono::steady_clock::time_point fetched, uint64_t fingerprint,
                                            std::string body = "{}") {
  auto doc = std::make_shared<DiscoveryDocument>();
  doc->headers = {{"Content-Type", "application/json"}};
  doc->body = std::move(body);
  doc->fetched = fetched;
  doc->fingerprint = fingerprint;
  return doc;
}

}  // namespace

TEST_CASE("Discovery paths are the apiserver's discovery documents and /version, nothing else") {
  for (const char* path : {"/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1", "/version",
                           "/apis/example.com/v1"}) {
    CHECK_MESSAGE(DiscoveryCache::isDiscoveryPath(path), path);
  }
  // Resources, a trailing slash or an empty segment (other paths to the apiserver), and
  // other non-resource paths are not.
  for (const char* path : {"/", "", "/api/", "/apis/", "/api/v1/pods", "/apis/apps/v1/deployments", "/apis/apps/v1/",
                           "/api//v1", "/version/", "/healthz", "/openapi/v2", "/apisx", "/version/x"}) {
    CHECK_FALSE_MESSAGE(DiscoveryCache::isDiscoveryPath(path), path);
  }
}

TEST_CASE("A document answers while the CRDs and APIServices are as it was fetched at, within the TTL") {
  DiscoveryCache cache(DiscoveryCacheOptions{60s, 3s});
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  const std::string key = DiscoveryCache::key("/apis", DiscoveryForm{DiscoveryKind::AggregatedV2, DiscoveryEncoding::Json});
  CHECK(cache.find(key) == nullptr);
  cache.put(key, document(t0, 7));
  auto doc = cache.find(key);
  REQUIRE(doc != nullptr);
  CHECK(cache.valid(*doc, 7, t0 + 59s));
  CHECK_FALSE(cache.valid(*doc, 7, t0 + 60s));  // the TTL bounds what no watch shows
  CHECK_FALSE(cache.valid(*doc, 8, t0 + 1s));   // a CRD or APIService changed
  // Another form is another document (the apiserver negotiates the body per form).
  CHECK(cache.find(DiscoveryCache::key("/apis", DiscoveryForm{DiscoveryKind::AggregatedV2, DiscoveryEncoding::Protobuf})) ==
        nullptr);
  CHECK(cache.find(DiscoveryCache::key("/api", DiscoveryForm{DiscoveryKind::AggregatedV2, DiscoveryEncoding::Json})) ==
        nullptr);
}

TEST_CASE("After the inputs change, discovery waits until they have been still for the settle time") {
  DiscoveryCache cache(DiscoveryCacheOptions{60s, 3s});
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  CHECK(cache.settled(1, t0));  // the first state seen counts as still
  CHECK(cache.settled(1, t0 + 10s));
  CHECK_FALSE(cache.settled(2, t0 + 11s));  // changed: the apiserver's discovery may lag
  CHECK_FALSE(cache.settled(2, t0 + 13s));
  CHECK(cache.settled(2, t0 + 14s));
  CHECK_FALSE(cache.settled(3, t0 + 15s));
}

TEST_CASE("The documents kept are bounded; the oldest fetched goes first") {
  DiscoveryCacheOptions options{60s, 3s};
  options.max_documents = 3;
  DiscoveryCache cache(options);
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  const DiscoveryForm form;
  for (int i = 0; i < 5; ++i) cache.put(DiscoveryCache::key("/apis/g" + std::to_string(i), form), document(t0 + i * 1s, 1));
  CHECK(cache.size() == 3);
  CHECK(cache.find(DiscoveryCache::key("/apis/g0", form)) == nullptr);
  CHECK(cache.find(DiscoveryCache::key("/apis/g1", form)) == nullptr);
  CHECK(cache.find(DiscoveryCache::key("/apis/g4", form)) != nullptr);
}

TEST_CASE("A document keeps the fields that describe it, not the exchange's") {
  const HeaderList upstream = {{"Audit-Id", "a1"},
                               {"Cache-Control", "public"},
                               {"Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
                               {"Etag", "\"abc\""},
                               {"Vary", "Accept"},
                               {"X-Kubernetes-Pf-Flowschema-Uid", "f"},
                               {"X-Kubernetes-Pf-Prioritylevel-Uid", "p"},
                               {"Date", "Thu, 03 Dec 2026 12:00:00 GMT"},
                               {"Content-Length", "12"},
                               {"Connection", "keep-alive"}};
  const HeaderList kept = proxy::documentHeaders(upstream);
  const HeaderList expected = {{"Cache-Control", "public"},
                               {"Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
                               {"Etag", "\"abc\""},
                               {"Vary", "Accept"}};
  CHECK(kept == expected);
}

TEST_CASE("If-None-Match with the document's ETag is answered 304, as the apiserver compares it: exactly") {
  DiscoveryDocument doc;
  doc.headers = {{"Etag", "\"abc\""}};
  CHECK(proxy::notModified(doc, "\"abc\""));
  CHECK_FALSE(proxy::notModified(doc, "abc"));
  CHECK_FALSE(proxy::notModified(doc, "W/\"abc\""));
  CHECK_FALSE(proxy::notModified(doc, ""));
  DiscoveryDocument legacy;  // /api/v1 without aggregated discovery has no ETag
  CHECK_FALSE(proxy::notModified(legacy, ""));
}

TEST_CASE("The state fingerprint changes with an object's RV, key, addition or removal") {
  auto of = [](std::initializer_list<std::pair<const char*, uint64_t>> objects) {
    proxy::StateFingerprint f;
    for (const auto& [key, rv] : objects) f.add(key, rv);
    return f.value();
  };
  const uint64_t base = of({{"a", 1}, {"b", 2}});
  CHECK(base == of({{"a", 1}, {"b", 2}}));
  CHECK(base != of({{"a", 1}, {"b", 3}}));
  CHECK(base != of({{"a", 1}, {"c", 2}}));
  CHECK(base != of({{"a", 1}}));
  CHECK(base != of({{"a", 1}, {"b", 2}, {"c", 3}}));
  CHECK(of({{"ab", 1}}) != of({{"a", 1}, {"b", 1}}));
}

TEST_CASE("Only client-go's request timeout may come with a discovery GET answered from memory") {
  for (const char* query : {"", "timeout=32s", "timeout=1m0s", "timeout=500ms", "timeout=1.5h", "timeout=1h2m3s"}) {
    CHECK_MESSAGE(DiscoveryCache::answerIgnoresQuery(query), query);
  }
  for (const char* query : {"timeout=", "timeout=32", "timeout=-1s", "timeout=abc", "timeout=1.s", "timeout=32s&x=1",
                            "x=1", "timeout=32s%20", "timeout=32sx", "timeout=3 s"}) {
    CHECK_FALSE_MESSAGE(DiscoveryCache::answerIgnoresQuery(query), query);
  }
}
