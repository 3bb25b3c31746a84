#include "proxy/reads/read_route.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "proxy/query_params.h"

namespace proxy {
namespace {

// The apiserver's transform parameters, and whether the range has any other that the
// cache does not render (charset is ignored by every serializer).
struct RangeParams {
  std::string_view as, g, v;
  bool other = false;
};

RangeParams rangeParams(const MediaRange& range) {
  RangeParams out;
  for (const auto& [key, value] : range.params) {
    if (key == "as") {
      out.as = value;
    } else if (key == "g") {
      out.g = value;
    } else if (key == "v") {
      out.v = value;
    } else if (key != "charset") {
      out.other = true;
    }
  }
  return out;  // a repeated key kept its last value, as goautoneg's map does
}

constexpr std::string_view kProtobufSubtype = "vnd.kubernetes.protobuf";

// goautoneg compares media types case-sensitively, and so does the apiserver.
bool isJsonRange(const MediaRange& range) {
  return range.is("application", "json") || range.is("application", "*") || range.is("*", "*");
}

bool knownNonJson(const MediaRange& range) {
  return range.is("application", "yaml") || range.is("application", "cbor");
}

}  // namespace

std::optional<ReadFormat> negotiateRead(const AcceptHeader& accept, bool is_list, cache::Encoding from) {
  const bool protobuf = from == cache::Encoding::Protobuf;
  if (accept.empty()) return protobuf ? std::nullopt : std::optional(ReadFormat::Json);
  for (const MediaRange* range : accept.byQuality()) {
    if (range->q <= 0) continue;
    const bool protobuf_range = range->is("application", kProtobufSubtype);
    // A JSON cache skips protobuf: a JSON fallback may follow (N1, Open choice 8).
    if (protobuf_range && !protobuf) continue;
    if (!protobuf_range) {
      if (knownNonJson(*range)) return std::nullopt;  // the apiserver would pick it
      if (!isJsonRange(*range)) continue;             // not acceptable; try the next range
      if (protobuf) return std::nullopt;              // the apiserver answers JSON here
    }
    const RangeParams params = rangeParams(*range);
    if (params.other) return std::nullopt;
    if (params.as.empty()) return protobuf ? ReadFormat::Protobuf : ReadFormat::Json;
    // Only meta.k8s.io/v1 transforms are rendered; v1beta1 and Table pass through.
    if (params.g != "meta.k8s.io" || params.v != "v1") return std::nullopt;
    if (params.as == "PartialObjectMetadataList" && is_list) {
      return protobuf ? ReadFormat::ProtobufPartialObjectMetadataList : ReadFormat::PartialObjectMetadataList;
    }
    if (params.as == "PartialObjectMetadata" && !is_list) {
      return protobuf ? ReadFormat::ProtobufPartialObjectMetadata : ReadFormat::PartialObjectMetadata;
    }
    return std::nullopt;  // Table, or a list/object mismatch the upstream answers with 406 (N4)
  }
  return std::nullopt;  // nothing acceptable: the upstream's 406
}

bool prefersProtobuf(const AcceptHeader& accept, bool is_list) {
  return negotiateRead(accept, is_list, cache::Encoding::Protobuf).has_value();
}

std::string_view storeNamespace(const RequestInfo& info, const watch::ApiResource& resource) {
  return resource.namespaced ? std::string_view(info.namespace_) : std::string_view{};
}

ReadRoute routeRead(const Request& req, const CachedFacts& facts) {
  const RequestInfo& info = req.info;
  auto upstream = [](std::string_view why) { return ReadRoute{false, ReadFormat::Json, why}; };
  const bool is_list = info.verb == "list";
  if (!info.is_resource_request || (info.verb != "get" && !is_list)) return upstream("not a read");
  if (!info.subresource.empty()) return upstream("subresource");
  // The registry refuses such a name with its own 400 ("Name parameter invalid") before
  // any lookup; the cache would say 404.
  if (!is_list && !isValidPathSegmentName(info.name)) {
    return upstream("name is not a path segment");
  }
  if (!facts.resource) return upstream("resource not cached");
  if (!facts.synced) return upstream("informer not synced");
  const watch::ApiResource& resource = *facts.resource;
  const bool namespaces_object = resource.group.empty() && resource.resource == "namespaces" && !is_list;
  if (resource.namespaced) {
    if (!is_list && info.namespace_.empty()) return upstream("namespaced object without namespace");
    if (!facts.namespace_scope.empty() && info.namespace_ != facts.namespace_scope) {
      return upstream("namespace outside the informer's scope");
    }
  } else if (!info.namespace_.empty() && !namespaces_object) {
    return upstream("cluster-scoped resource under a namespace");
  }
  // Pretty-printed JSON (N1) is a re-serialization the cache does not do.
  if (parseBoolParam(req.query.get("pretty"))) return upstream("pretty output");
  const std::string_view user_agent = req.userAgent();
  for (std::string_view prefix : {"curl", "Wget", "Mozilla/5.0"}) {
    if (user_agent.substr(0, prefix.size()) == prefix) return upstream("pretty output for this user agent");
  }
  const std::optional<ReadFormat> format = negotiateRead(req.accept, is_list, facts.encoding);
  if (!format) return upstream("media type not rendered by the cache");
  return ReadRoute{true, *format, {}};
}

}  // namespace proxy
