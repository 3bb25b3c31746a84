#include "proxy/read_route.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "proxy/query_params.h"

namespace proxy {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// One media range of an Accept header (goautoneg.Accept).
struct MediaRange {
  std::string type;     // "application/json", "*/*"
  std::string as, g, v;  // the apiserver's transform parameters
  bool other_params = false;
  double q = 1.0;
};

std::vector<MediaRange> parseAccept(std::string_view accept) {
  std::vector<MediaRange> out;
  while (!accept.empty()) {
    const size_t comma = accept.find(',');
    std::string_view clause = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    MediaRange range;
    const size_t semi = clause.find(';');
    range.type = lower(trim(clause.substr(0, semi)));
    if (range.type.empty()) continue;
    std::string_view params = semi == std::string_view::npos ? std::string_view{} : clause.substr(semi + 1);
    while (!params.empty()) {
      const size_t next = params.find(';');
      std::string_view param = params.substr(0, next);
      params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
      const size_t eq = param.find('=');
      const std::string key = lower(trim(param.substr(0, eq)));
      const std::string_view value = eq == std::string_view::npos ? std::string_view{} : trim(param.substr(eq + 1));
      if (key == "q") {
        range.q = std::atof(std::string(value).c_str());
      } else if (key == "as") {
        range.as = value;
      } else if (key == "g") {
        range.g = value;
      } else if (key == "v") {
        range.v = value;
      } else if (!key.empty() && key != "charset") {
        range.other_params = true;
      }
    }
    out.push_back(std::move(range));
  }
  // Highest quality first; equal quality keeps the client's order.
  std::stable_sort(out.begin(), out.end(), [](const MediaRange& a, const MediaRange& b) { return a.q > b.q; });
  return out;
}

constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";

bool isJsonRange(const std::string& type) {
  return type == "application/json" || type == "application/*" || type == "*/*";
}

bool knownNonJson(const std::string& type) {
  return type == "application/yaml" || type == "application/cbor";
}

}  // namespace

std::optional<ReadFormat> negotiateRead(std::string_view accept, bool is_list, cache::Encoding from) {
  const bool protobuf = from == cache::Encoding::Protobuf;
  if (trim(accept).empty()) return protobuf ? std::nullopt : std::optional(ReadFormat::Json);
  for (const MediaRange& range : parseAccept(accept)) {
    if (range.q <= 0) continue;
    const bool protobuf_range = range.type == kProtobufMediaType;
    // A JSON cache skips protobuf: a JSON fallback may follow (N1, Open choice 8).
    if (protobuf_range && !protobuf) continue;
    if (!protobuf_range) {
      if (knownNonJson(range.type)) return std::nullopt;  // the apiserver would pick it
      if (!isJsonRange(range.type)) continue;             // not acceptable; try the next range
      if (protobuf) return std::nullopt;                  // the apiserver answers JSON here
    }
    if (range.other_params) return std::nullopt;
    if (range.as.empty()) return protobuf ? ReadFormat::Protobuf : ReadFormat::Json;
    // Only meta.k8s.io/v1 transforms are rendered; v1beta1 and Table pass through.
    if (range.g != "meta.k8s.io" || range.v != "v1") return std::nullopt;
    if (range.as == "PartialObjectMetadataList" && is_list) {
      return protobuf ? ReadFormat::ProtobufPartialObjectMetadataList : ReadFormat::PartialObjectMetadataList;
    }
    if (range.as == "PartialObjectMetadata" && !is_list) {
      return protobuf ? ReadFormat::ProtobufPartialObjectMetadata : ReadFormat::PartialObjectMetadata;
    }
    return std::nullopt;  // Table, or a list/object mismatch the upstream answers with 406 (N4)
  }
  return std::nullopt;  // nothing acceptable: the upstream's 406
}

bool prefersProtobuf(std::string_view accept, bool is_list) {
  return negotiateRead(accept, is_list, cache::Encoding::Protobuf).has_value();
}

std::string_view storeNamespace(const RequestInfo& info, const watch::ApiResource& resource) {
  return resource.namespaced ? std::string_view(info.namespace_) : std::string_view{};
}

ReadRoute routeRead(const RequestInfo& info, const cache::QueryValues& query, std::string_view accept,
                    std::string_view user_agent, const CachedFacts& facts) {
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
  if (parseBoolParam(query.get("pretty"))) return upstream("pretty output");
  for (std::string_view prefix : {"curl", "Wget", "Mozilla/5.0"}) {
    if (user_agent.substr(0, prefix.size()) == prefix) return upstream("pretty output for this user agent");
  }
  const std::optional<ReadFormat> format = negotiateRead(accept, is_list, facts.encoding);
  if (!format) return upstream("media type not rendered by the cache");
  return ReadRoute{true, *format, {}};
}

}  // namespace proxy
