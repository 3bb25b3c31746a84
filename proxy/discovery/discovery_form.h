#pragma once
// DiscoveryForm: which document a discovery GET asks for, as kube-apiserver negotiates it
// from the Accept header: the kind (legacy APIVersions/APIGroupList/APIResourceList, or
// aggregated discovery apidiscovery.k8s.io/v2 or v2beta1) and the encoding (JSON, YAML,
// protobuf). The discovery cache keeps one document per path and form, fetched with the
// form's own Accept, never per Accept header: the header is the client's to choose (issue
// 36, finding 1: 260 distinct 900 KB headers kept 225 MiB and cost 260 upstream fetches),
// and kube-apiserver keeps nothing per Accept either.
//
// The apiserver's negotiation (apiserver pkg/endpoints/discovery/aggregated/wrapper.go,
// handlers/negotiation): on /api and /apis, the first Accept clause (goautoneg's order)
// that names an aggregated discovery version its serializers accept wins, wherever it
// stands; otherwise the first clause without a transform (as, g, v) names the legacy
// document's encoding. Its serializers are tried in the order JSON, YAML, protobuf for each
// clause. Other discovery paths have the legacy document only; /version is JSON only.
//
// Plain code; thread-safe (no state).

#include <cstdint>
#include <string_view>
#include <vector>

#include "proxy/media.h"

namespace proxy {

enum class DiscoveryKind : uint8_t { Legacy, AggregatedV2, AggregatedV2Beta1, Version };
enum class DiscoveryEncoding : uint8_t { Json, Yaml, Protobuf };

struct DiscoveryForm {
  DiscoveryKind kind = DiscoveryKind::Legacy;
  DiscoveryEncoding encoding = DiscoveryEncoding::Json;

  bool operator==(const DiscoveryForm&) const = default;
  // The Accept header that asks the upstream for exactly this form (one clause).
  std::string_view accept() const;
  // A short name for keys and logs: "legacy/json", "v2/protobuf", "version/json".
  std::string_view name() const;
};

// The forms a GET of discovery path `path` (DiscoveryCache::isDiscoveryPath) accepts, in the
// order the apiserver would try them, without repeats. An aggregated form is tried only
// when the upstream serves it (v2beta1 is gone from 1.35 on, v2 is missing before 1.30): the
// caller asks the upstream for it and goes on to the next when the answer is 406. Empty,
// or a list the upstream refuses to the end, means the request passes through: nothing is
// acceptable (the apiserver's 406), or the answer would depend on more than the form
// (pretty output for the User-Agent or a `pretty=1` parameter, a discovery `profile`, CBOR,
// more clauses than Go's sort orders the way AcceptHeader::byQuality does).
std::vector<DiscoveryForm> discoveryForms(std::string_view path, const AcceptHeader& accept,
                                          std::string_view user_agent);

}  // namespace proxy
