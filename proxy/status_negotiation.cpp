#include "proxy/status_negotiation.h"

#include <array>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace proxy {
namespace {

// The apiserver's serializers (built-in types and custom resources offer the same
// three), in its order. CBOR joins them only with the CBORServingAndStorage gate, alpha
// and off by default in 1.37.
struct Serializer {
  std::string_view type;
  std::string_view subtype;
  bool streams;  // has a StreamSerializer (watch framing)
};
constexpr std::array<Serializer, 3> kSerializers = {{
    {"application", "json", true},
    {"application", "yaml", false},
    {"application", "vnd.kubernetes.protobuf", true},
}};

// goautoneg's nextSplitElement: the text before the first `sep` and the text after it.
std::pair<std::string_view, std::string_view> splitOnce(std::string_view s, char sep) {
  const size_t at = s.find(sep);
  if (at == std::string_view::npos) return {s, {}};
  return {s.substr(0, at), s.substr(at + 1)};
}

// goautoneg trims spaces only, not tabs.
std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// One Accept entry as goautoneg.ParseAccept reads it. Params is a Go map: a repeated key
// keeps its last value. "q" is not a param; the quality plays no part here (no entry
// is refused for q=0, and only whether some entry passes matters, not which).
struct Clause {
  std::string_view type;
  std::string_view subtype;
  std::vector<std::pair<std::string_view, std::string_view>> params;

  const std::string_view* param(std::string_view key) const {
    const std::string_view* found = nullptr;
    for (const auto& [k, v] : params) {
      if (k == key) found = &v;
    }
    return found;
  }
};

// goautoneg.ParseAccept, unsorted. Malformed entries are dropped as it drops them.
std::vector<Clause> parseAccept(std::string_view header) {
  std::vector<Clause> clauses;
  std::string_view remaining = header;
  while (!remaining.empty()) {
    std::string_view part;
    std::tie(part, remaining) = splitOnce(remaining, ',');
    part = trimSpaces(part);
    auto [media_range, params] = splitOnce(part, ';');
    auto [type, rest] = splitOnce(media_range, '/');
    Clause clause;
    clause.type = trimSpaces(type);
    if (rest.empty()) {
      if (clause.type != "*") continue;  // "text" alone is dropped; "*" means "*/*"
      clause.subtype = "*";
    } else {
      auto [subtype, extra] = splitOnce(rest, '/');
      if (!extra.empty()) continue;  // "a/b/c"
      clause.subtype = trimSpaces(subtype);
    }
    while (!params.empty()) {
      std::string_view param;
      std::tie(param, params) = splitOnce(params, ';');
      auto [key, value] = splitOnce(param, '=');
      if (value.empty()) continue;                                 // "k" or "k="
      if (value.find('=') != std::string_view::npos) continue;     // "k=v=w"
      key = trimSpaces(key);
      if (key != "q") clause.params.emplace_back(key, trimSpaces(value));
    }
    clauses.push_back(std::move(clause));
  }
  return clauses;
}

// acceptMediaTypeOptions under DefaultEndpointRestrictions.
bool allowedByDefaultRestrictions(const Clause& clause, const Serializer& serializer) {
  // Any of as/g/v makes a conversion target, and AllowsMediaTypeTransform allows none.
  for (std::string_view key : {"as", "g", "v"}) {
    if (clause.param(key)) return false;
  }
  if (const std::string_view* stream = clause.param("stream"); stream && !stream->empty()) {
    if (!serializer.streams || *stream != "watch") return false;
  }
  if (const std::string_view* sv = clause.param("sv"); sv && !sv->empty()) return false;  // AllowsServerVersion: never
  return true;
}

bool matches(const Clause& clause, const Serializer& serializer) {
  if (clause.type == "*" && clause.subtype == "*") return true;
  return clause.type == serializer.type && (clause.subtype == serializer.subtype || clause.subtype == "*");
}

}  // namespace

StatusEncoding statusEncodingFor(std::string_view accept) {
  // net/http hands handlers the value without surrounding spaces and tabs.
  while (!accept.empty() && (accept.front() == ' ' || accept.front() == '\t')) accept.remove_prefix(1);
  while (!accept.empty() && (accept.back() == ' ' || accept.back() == '\t')) accept.remove_suffix(1);
  // NegotiateMediaTypeOptions: an empty header takes the first serializer.
  if (accept.empty()) return StatusEncoding::Negotiated;
  for (const Clause& clause : parseAccept(accept)) {
    for (const Serializer& serializer : kSerializers) {
      if (matches(clause, serializer) && allowedByDefaultRestrictions(clause, serializer)) {
        return serializer.subtype == "vnd.kubernetes.protobuf" ? StatusEncoding::Protobuf
                                                                : StatusEncoding::Negotiated;
      }
    }
  }
  return StatusEncoding::RawJson;
}

}  // namespace proxy
