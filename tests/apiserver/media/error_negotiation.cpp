// Which Accept headers an error Status can be negotiated for. The apiserver writes
// every error through responsewriters.ErrorNegotiated, which negotiates with
// negotiation.DefaultEndpointRestrictions: no "as=" conversion is allowed there, so a
// client that accepts only conversions (a metadata informer's
// "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1") gets the
// WriteRawJSON fallback of WriteObjectNegotiated instead (api_server.cpp).
#include "tests/apiserver/media/media.h"

#include <map>

namespace testapi {
namespace {

struct AcceptClause {
  std::string type, subtype;
  std::map<std::string, std::string> params;  // "q" is not kept
};

// goautoneg's nextSplitElement: the text before the first `sep` and the rest after it.
std::pair<std::string_view, std::string_view> splitFirst(std::string_view s, char sep) {
  const size_t i = s.find(sep);
  if (i == std::string_view::npos) return {s, {}};
  return {s.substr(0, i), s.substr(i + 1)};
}

// strings.TrimFunc(s, r == ' '): spaces only, not tabs.
std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// goautoneg.ParseAccept without its q ordering: the question here is only whether any
// clause is acceptable, which does not depend on the order they are tried in.
std::vector<AcceptClause> parseAccept(std::string_view header) {
  std::vector<AcceptClause> clauses;
  std::string_view remaining = header;
  while (!remaining.empty()) {
    auto [raw_part, rest] = splitFirst(remaining, ',');
    remaining = rest;
    auto [media_range, params] = splitFirst(trimSpaces(raw_part), ';');
    auto [type, after_type] = splitFirst(media_range, '/');
    AcceptClause c;
    c.type = std::string(trimSpaces(type));
    if (after_type.empty()) {
      if (c.type != "*") continue;  // a bare type other than "*" is dropped
      c.subtype = c.type;           // "*" alone is "*/*"
    } else {
      auto [subtype, extra] = splitFirst(after_type, '/');
      if (!extra.empty()) continue;  // "a/b/c"
      c.subtype = std::string(trimSpaces(subtype));
    }
    while (!params.empty()) {
      auto [param, more] = splitFirst(params, ';');
      params = more;
      auto [key, after_key] = splitFirst(param, '=');
      if (after_key.empty()) continue;  // "k" and "k=" carry no parameter
      auto [value, extra] = splitFirst(after_key, '=');
      if (!extra.empty()) continue;  // "k=v=w"
      const std::string_view token = trimSpaces(key);
      if (token != "q") c.params[std::string(token)] = std::string(trimSpaces(value));
    }
    clauses.push_back(std::move(c));
  }
  return clauses;
}

// The apiserver's serializers for built-in and custom resources alike (CBOR is behind
// the CBORServingAndStorage gate, off by default); YAML has no stream framing.
struct ServedMediaType {
  std::string_view type, subtype;
  bool streams;
};
constexpr ServedMediaType kServed[] = {
    {"application", "json", true}, {"application", "yaml", false}, {"application", "vnd.kubernetes.protobuf", true}};

// acceptMediaTypeOptions with DefaultEndpointRestrictions.
bool acceptableWithoutConversion(const AcceptClause& c, const ServedMediaType& m) {
  bool convert = false;
  for (const auto& [key, value] : c.params) {
    if (key == "as" || key == "g" || key == "v") convert = true;
    // AllowsStreamSchema: only "watch", and only for a serializer that frames streams.
    if (key == "stream" && !value.empty() && (!m.streams || value != "watch")) return false;
    if (key == "sv" && !value.empty()) return false;  // AllowsServerVersion is always false
  }
  return !convert;  // AllowsMediaTypeTransform: gvk == nil
}

}  // namespace

namespace {

// The serializer the error negotiation picks, or null (WriteRawJSON).
const ServedMediaType* negotiatedForError(std::string_view accept) {
  if (accept.empty()) return &kServed[0];  // NegotiateMediaTypeOptions: the first serializer
  for (const AcceptClause& c : parseAccept(accept)) {
    for (const ServedMediaType& m : kServed) {
      const bool matches = (c.type == m.type && (c.subtype == m.subtype || c.subtype == "*")) ||
                           (c.type == "*" && c.subtype == "*");
      if (matches && acceptableWithoutConversion(c, m)) return &m;
    }
  }
  return nullptr;
}

}  // namespace

bool errorMediaTypeNegotiable(std::string_view accept) { return negotiatedForError(accept) != nullptr; }

bool errorNegotiatesProtobuf(std::string_view accept) {
  const ServedMediaType* m = negotiatedForError(accept);
  return m != nullptr && m->subtype == "vnd.kubernetes.protobuf";
}

}  // namespace testapi
