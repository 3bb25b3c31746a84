#include "proxy/discovery/discovery_form.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace proxy;

namespace {

constexpr DiscoveryForm kLegacyJson{DiscoveryKind::Legacy, DiscoveryEncoding::Json};
constexpr DiscoveryForm kLegacyProtobuf{DiscoveryKind::Legacy, DiscoveryEncoding::Protobuf};
constexpr DiscoveryForm kV2Json{DiscoveryKind::AggregatedV2, DiscoveryEncoding::Json};
constexpr DiscoveryForm kV2Protobuf{DiscoveryKind::AggregatedV2, DiscoveryEncoding::Protobuf};
constexpr DiscoveryForm kV2Beta1Json{DiscoveryKind::AggregatedV2Beta1, DiscoveryEncoding::Json};
constexpr DiscoveryForm kV2Beta1Protobuf{DiscoveryKind::AggregatedV2Beta1, DiscoveryEncoding::Protobuf};

// What client-go's discovery client sends (aggregated first, legacy JSON as the fallback).
constexpr const char* kKubectlJson =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
constexpr const char* kComponentsProtobuf =
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json;q=0.9";

std::vector<DiscoveryForm> forms(std::string_view path, std::string_view accept, std::string_view user_agent = "") {
  return discoveryForms(path, AcceptHeader::parse(accept), user_agent);
}

}  // namespace

TEST_CASE("Discovery clients' Accept headers name the forms the apiserver tries, in its order") {
  CHECK(forms("/apis", kKubectlJson) == std::vector{kV2Json, kV2Beta1Json, kLegacyJson});
  CHECK(forms("/api", kComponentsProtobuf) ==
        std::vector{kV2Protobuf, kV2Beta1Protobuf, kV2Json, kV2Beta1Json, kLegacyJson});
  CHECK(forms("/apis", "application/json") == std::vector{kLegacyJson});
  CHECK(forms("/apis", "application/vnd.kubernetes.protobuf, application/json") ==
        std::vector{kLegacyProtobuf, kLegacyJson});
  CHECK(forms("/apis", "") == std::vector{kLegacyJson});
  // */* is tried against JSON, YAML and protobuf in turn.
  CHECK(forms("/apis", "*/*").size() == 3);
  CHECK(forms("/apis", "*/*").front() == kLegacyJson);
}

TEST_CASE("Accept headers of distinct bytes and one meaning are one form (issue 36, finding 1)") {
  const std::string padded = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;pad=" +
                             std::string(900 * 1024, 'x');
  CHECK(forms("/apis", padded) == std::vector{kV2Json});
  CHECK(forms("/apis", "application/json;charset=utf-8;x=1") == std::vector{kLegacyJson});
  CHECK(forms("/apis", "  application/json  ;  q=0.5") == std::vector{kLegacyJson});
  // The aggregated clause wins wherever it stands, as the apiserver's wrapper decides.
  CHECK(forms("/apis", "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
            .front() == kV2Json);
}

TEST_CASE("Only /api and /apis have aggregated discovery; /version is JSON only") {
  CHECK(forms("/apis/apps/v1", kKubectlJson) == std::vector{kLegacyJson});
  CHECK(forms("/api/v1", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").empty());
  CHECK(forms("/version", kKubectlJson) == std::vector{DiscoveryForm{DiscoveryKind::Version, DiscoveryEncoding::Json}});
  CHECK(forms("/version", "").size() == 1);
  CHECK(forms("/version", "application/vnd.kubernetes.protobuf").empty());  // the upstream's 406
}

TEST_CASE("What a form cannot say passes through") {
  CHECK(forms("/apis", "application/json", "curl/8.1").empty());  // pretty for curl, browsers, wget
  CHECK(forms("/apis", "application/json;pretty=1").empty());
  CHECK(forms("/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer").empty());
  // v2beta1 has no profile: it is ignored there.
  CHECK(forms("/apis", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList;profile=x") ==
        std::vector{kV2Beta1Json});
  CHECK(forms("/apis", "application/cbor, application/json").empty());
  CHECK(forms("/apis", "application/*").empty());  // go-restful's route refuses it first
  CHECK(forms("/apis", "text/html").empty());
  std::string many;
  for (int i = 0; i < 13; ++i) many += "application/json;x=" + std::to_string(i) + ",";
  CHECK(forms("/apis", many).empty());  // more clauses than Go sorts by insertion
}

TEST_CASE("Clause parameters refuse a serializer as the apiserver's acceptMediaTypeOptions does") {
  CHECK(forms("/apis", "application/json;stream=watch") == std::vector{kLegacyJson});
  CHECK(forms("/apis", "application/yaml;stream=watch, application/json") == std::vector{kLegacyJson});
  CHECK(forms("/apis", "application/json;sv=v1, application/vnd.kubernetes.protobuf") == std::vector{kLegacyProtobuf});
  CHECK(forms("/apis", "application/json;as=Table;g=meta.k8s.io;v=v1").empty());
}

TEST_CASE("Each form asks the upstream for itself alone") {
  CHECK(kV2Protobuf.accept() == "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  CHECK(kLegacyJson.accept() == "application/json");
  CHECK(kV2Beta1Json.name() == "v2beta1/json");
  for (const DiscoveryForm form : {kLegacyJson, kLegacyProtobuf, kV2Json, kV2Protobuf, kV2Beta1Json, kV2Beta1Protobuf}) {
    CHECK(forms("/apis", form.accept()) == std::vector{form});
  }
}
