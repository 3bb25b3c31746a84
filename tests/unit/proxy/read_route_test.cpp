#include "parse_request_info.h"
#include "proxy/reads/read_route.h"

#include <doctest/doctest.h>

#include "cache/selectors/selectable_fields.h"

using namespace proxy;

namespace {

watch::ApiResource pods() {
  watch::ApiResource r;
  r.version = "v1";
  r.resource = "pods";
  r.kind = "Pod";
  r.list_kind = "PodList";
  r.namespaced = true;
  r.field_spec = cache::FieldSpec::forBuiltin("", "v1", "pods", true);
  return r;
}

watch::ApiResource namespaces() {
  watch::ApiResource r;
  r.version = "v1";
  r.resource = "namespaces";
  r.kind = "Namespace";
  r.namespaced = false;
  r.field_spec = cache::FieldSpec::forBuiltin("", "v1", "namespaces", false);
  return r;
}

ReadRoute route(std::string_view method, std::string_view target, const watch::ApiResource* resource,
                std::string_view accept = "application/json", std::string_view user_agent = "kubectl/v1.32",
                bool synced = true, std::string_view scope = "",
                cache::Encoding encoding = cache::Encoding::Json) {
  HeaderList headers = {{"Accept", std::string(accept)}, {"User-Agent", std::string(user_agent)}};
  const proxy::Request req = proxy::Request::make(std::string(method), std::string(target), std::move(headers), "");
  return routeRead(req, CachedFacts{resource, synced, scope, encoding});
}

ReadRoute protobufRoute(std::string_view target, const watch::ApiResource* resource, std::string_view accept) {
  return route("GET", target, resource, accept, "kube-controller-manager/v1.37.2", true, "", cache::Encoding::Protobuf);
}

constexpr std::string_view kTableAccept =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
constexpr std::string_view kMetadataListAccept =
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

}  // namespace

TEST_CASE("GET and LIST of a cached, synced resource in JSON are served from the cache") {
  const auto p = pods();
  CHECK(route("GET", "/api/v1/pods", &p).from_cache);
  CHECK(route("GET", "/api/v1/namespaces/default/pods?limit=500&resourceVersion=0", &p).from_cache);
  CHECK(route("GET", "/api/v1/namespaces/default/pods/web-0", &p).from_cache);
  CHECK(route("GET", "/api/v1/pods", &p, "").from_cache);
  CHECK(route("GET", "/api/v1/pods", &p, "*/*").from_cache);
  CHECK(route("GET", "/api/v1/pods", &p, "application/json, */*;q=0.8").from_cache);
}

TEST_CASE("Writes, subresources, watches and uncached or unsynced resources pass through") {
  const auto p = pods();
  CHECK_FALSE(route("POST", "/api/v1/namespaces/default/pods", &p).from_cache);
  CHECK_FALSE(route("GET", "/api/v1/namespaces/default/pods/web-0/log", &p).from_cache);
  CHECK_FALSE(route("GET", "/api/v1/namespaces/default/pods/web-0/status", &p).from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods?watch=true", &p).from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", nullptr).from_cache);
  CHECK(route("GET", "/api/v1/pods", nullptr).why == "resource not cached");
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/json", "kubectl", false).from_cache);
}

TEST_CASE("Encoded paths are read decoded; names the registry refuses pass through for its 400") {
  const auto p = pods();
  CHECK(route("GET", "/api/v1/namespaces/default/pods/web%2D0", &p).from_cache);
  CHECK(route("GET", "/api/v1/namespaces/default/pods/web%2F0", &p).why == "subresource");
  for (const char* target : {"/api/v1/namespaces/default/pods/a%25b", "/api/v1/namespaces/default/pods/%2E%2E",
                             "/api/v1/namespaces/default/pods/."}) {
    CAPTURE(target);
    CHECK(route("GET", target, &p).why == "name is not a path segment");
  }
  CHECK(route("GET", "/api/v1/namespaces/default/pods/web%zz", &p).why == "not a read");
}

TEST_CASE("Scopes the informer cannot answer pass through") {
  const auto p = pods();
  const auto n = namespaces();
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/json", "x", true, "team-a").from_cache);
  CHECK(route("GET", "/api/v1/namespaces/team-a/pods", &p, "application/json", "x", true, "team-a").from_cache);
  CHECK_FALSE(route("GET", "/api/v1/namespaces/team-b/pods", &p, "application/json", "x", true, "team-a").from_cache);
  CHECK_FALSE(route("GET", "/api/v1/namespaces/default/namespaces", &n).from_cache);
  SUBCASE("the namespace object is cluster-scoped") {
    const RequestInfo info = parseRequestInfo("GET", "/api/v1/namespaces/kube-system");
    CHECK(route("GET", "/api/v1/namespaces/kube-system", &n).from_cache);
    CHECK(storeNamespace(info, n).empty());
  }
}

TEST_CASE("Table, YAML, protobuf-only and unknown media types pass through so the upstream negotiates (N1, N3)") {
  const auto p = pods();
  CHECK_FALSE(route("GET", "/api/v1/pods?limit=500", &p, kTableAccept).from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/yaml").from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/vnd.kubernetes.protobuf").from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "text/html").from_cache);
  CHECK(route("GET", "/api/v1/pods", &p, "application/vnd.kubernetes.protobuf, application/json").from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/json;q=0.5, application/yaml").from_cache);
}

TEST_CASE("PartialObjectMetadata(List) is rendered from the cache; a list/object mismatch passes through (N4)") {
  const auto p = pods();
  ReadRoute list = route("GET", "/api/v1/pods", &p, kMetadataListAccept);
  CHECK(list.from_cache);
  CHECK(list.format == ReadFormat::PartialObjectMetadataList);
  ReadRoute get = route("GET", "/api/v1/namespaces/default/pods/a", &p,
                        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  CHECK(get.from_cache);
  CHECK(get.format == ReadFormat::PartialObjectMetadata);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").from_cache);
  CHECK_FALSE(route("GET", "/api/v1/namespaces/default/pods/a", &p,
                    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
                  .from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1")
                  .from_cache);
}

TEST_CASE("Pretty-printed answers pass through (N1)") {
  const auto p = pods();
  CHECK_FALSE(route("GET", "/api/v1/pods?pretty=true", &p).from_cache);
  CHECK(route("GET", "/api/v1/pods?pretty=false", &p).from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/json", "curl/7.88.1").from_cache);
  CHECK_FALSE(route("GET", "/api/v1/pods", &p, "application/json", "Mozilla/5.0 (X11)").from_cache);
}

TEST_CASE("A protobuf cache answers what the apiserver would answer in protobuf, and nothing else (N1, N2, N4)") {
  const auto p = pods();
  constexpr std::string_view kGoClient = "application/vnd.kubernetes.protobuf, */*";
  ReadRoute list = protobufRoute("/api/v1/pods?limit=500", &p, kGoClient);
  CHECK(list.from_cache);
  CHECK(list.format == ReadFormat::Protobuf);
  CHECK(protobufRoute("/api/v1/namespaces/default/pods/a", &p, "application/vnd.kubernetes.protobuf").format ==
        ReadFormat::Protobuf);
  // client-go's metadata informers.
  ReadRoute metadata_list = protobufRoute("/api/v1/pods", &p, kMetadataListAccept);
  CHECK(metadata_list.from_cache);
  CHECK(metadata_list.format == ReadFormat::ProtobufPartialObjectMetadataList);
  ReadRoute metadata_get = protobufRoute(
      "/api/v1/namespaces/default/pods/a", &p,
      "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  CHECK(metadata_get.format == ReadFormat::ProtobufPartialObjectMetadata);
  // The apiserver's choice is JSON (or a Table): not the protobuf cache's to answer.
  CHECK_FALSE(protobufRoute("/api/v1/pods", &p, "application/json").from_cache);
  CHECK_FALSE(protobufRoute("/api/v1/pods", &p, "*/*").from_cache);
  CHECK_FALSE(protobufRoute("/api/v1/pods", &p, "").from_cache);
  CHECK_FALSE(protobufRoute("/api/v1/pods", &p, "application/json, application/vnd.kubernetes.protobuf").from_cache);
  CHECK_FALSE(protobufRoute("/api/v1/pods", &p, "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io")
                  .from_cache);
  // prefersProtobuf tells the caller which cache to ask.
  CHECK(prefersProtobuf(proxy::AcceptHeader::parse(kGoClient), true));
  CHECK(prefersProtobuf(proxy::AcceptHeader::parse(kMetadataListAccept), true));
  CHECK_FALSE(prefersProtobuf(proxy::AcceptHeader::parse(kMetadataListAccept), false));  // a list transform on a GET
  CHECK_FALSE(prefersProtobuf(proxy::AcceptHeader::parse("application/json"), false));
  CHECK_FALSE(prefersProtobuf(proxy::AcceptHeader::parse("application/vnd.kubernetes.protobuf;q=0, application/json"), false));
  // A JSON cache still answers a protobuf-first client that accepts JSON (its old behaviour).
  CHECK(route("GET", "/api/v1/pods", &p, kGoClient).format == ReadFormat::Json);
}
