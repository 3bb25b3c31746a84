#include "proxy/status_negotiation.h"

#include <array>
#include <string>

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

// acceptMediaTypeOptions under DefaultEndpointRestrictions.
bool allowedByDefaultRestrictions(const MediaRange& clause, const Serializer& serializer) {
  // Any of as/g/v makes a conversion target, and AllowsMediaTypeTransform allows none.
  for (std::string_view key : {"as", "g", "v"}) {
    if (clause.param(key)) return false;
  }
  if (const std::string* stream = clause.param("stream"); stream && !stream->empty()) {
    if (!serializer.streams || *stream != "watch") return false;
  }
  if (const std::string* sv = clause.param("sv"); sv && !sv->empty()) return false;  // AllowsServerVersion: never
  return true;
}

bool matches(const MediaRange& clause, const Serializer& serializer) {
  if (clause.type == "*" && clause.subtype == "*") return true;
  return clause.type == serializer.type && (clause.subtype == serializer.subtype || clause.subtype == "*");
}

}  // namespace

StatusEncoding statusEncodingFor(const AcceptHeader& accept) {
  // NegotiateMediaTypeOptions: an empty header takes the first serializer; otherwise the
  // ranges in goautoneg's order, the first one a serializer accepts.
  if (accept.empty()) return StatusEncoding::Negotiated;
  for (const MediaRange* clause : accept.byQuality()) {
    for (const Serializer& serializer : kSerializers) {
      if (matches(*clause, serializer) && allowedByDefaultRestrictions(*clause, serializer)) {
        return serializer.subtype == "vnd.kubernetes.protobuf" ? StatusEncoding::Protobuf
                                                                : StatusEncoding::Negotiated;
      }
    }
  }
  return StatusEncoding::RawJson;
}

}  // namespace proxy
