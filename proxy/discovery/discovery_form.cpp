#include "proxy/discovery/discovery_form.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <optional>
#include <string>

namespace proxy {
namespace {

// Go's sort.Sort orders up to 12 elements by insertion sort, which byQuality() repeats step
// for step; longer lists are pdqsort's, whose order under goautoneg's Less (no strict weak
// ordering) only the apiserver knows.
constexpr size_t kMaxClauses = 12;

struct Serializer {
  DiscoveryEncoding encoding;
  std::string_view subtype;  // of "application/..."
  bool streams;              // has a StreamSerializer (stream=watch is accepted)
};
// The apiserver's SupportedMediaTypes, in its order.
constexpr std::array<Serializer, 3> kSerializers = {Serializer{DiscoveryEncoding::Json, "json", true},
                                                    Serializer{DiscoveryEncoding::Yaml, "yaml", false},
                                                    Serializer{DiscoveryEncoding::Protobuf, "vnd.kubernetes.protobuf", true}};

// What a clause asks of one serializer (acceptMediaTypeOptions): refused, or the
// transform it names and whether the answer would depend on more than the form.
struct ClauseOptions {
  bool acceptable = false;
  const std::string* as = nullptr;
  const std::string* g = nullptr;
  const std::string* v = nullptr;
  bool pretty = false;
  bool profile = false;

  bool converts() const { return as || g || v; }
  std::optional<DiscoveryKind> aggregated() const {
    if (!as || !g || !v || *as != "APIGroupDiscoveryList" || *g != "apidiscovery.k8s.io") return std::nullopt;
    if (*v == "v2") return DiscoveryKind::AggregatedV2;
    if (*v == "v2beta1") return DiscoveryKind::AggregatedV2Beta1;
    return std::nullopt;
  }
};

ClauseOptions clauseOptions(const MediaRange& clause, const Serializer& serializer) {
  ClauseOptions out;
  const std::string* stream = clause.param("stream");
  if (stream && !stream->empty() && (!serializer.streams || *stream != "watch")) return out;
  const std::string* server_version = clause.param("sv");
  if (server_version && !server_version->empty()) return out;  // no endpoint here allows one
  out.as = clause.param("as");
  out.g = clause.param("g");
  out.v = clause.param("v");
  const std::string* pretty = clause.param("pretty");
  out.pretty = pretty && *pretty == "1";
  out.profile = clause.param("profile") != nullptr;
  out.acceptable = true;
  return out;
}

bool matches(const MediaRange& clause, const Serializer& serializer) {
  if (clause.type == "*" && clause.subtype == "*") return true;
  return clause.type == "application" && (clause.subtype == "*" || clause.subtype == serializer.subtype);
}

// go-restful's Route.matchesAccept, which the apiserver's discovery routes pass first: some
// comma-separated entry, parameters cut and spaces trimmed, is */* or a produced type.
bool restfulAccepts(std::string_view header, std::initializer_list<std::string_view> produces) {
  if (header.empty()) return true;  // go-restful reads it as */*
  while (true) {
    const size_t comma = header.find(',');
    std::string_view entry = header.substr(0, comma);
    entry = entry.substr(0, entry.find(';'));
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (entry == "*/*" || std::find(produces.begin(), produces.end(), entry) != produces.end()) return true;
    if (comma == std::string_view::npos) return false;
    header.remove_prefix(comma + 1);
  }
}

bool prettyForUserAgent(std::string_view user_agent) {
  for (std::string_view prefix : {"curl", "Wget", "Mozilla/5.0"}) {
    if (user_agent.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

void addOnce(std::vector<DiscoveryForm>& forms, DiscoveryForm form) {
  if (std::find(forms.begin(), forms.end(), form) == forms.end()) forms.push_back(form);
}

// Appends the forms of one negotiation pass (aggregated or legacy) in the apiserver's order;
// false when a clause it would reach asks for what the cache does not model, so nothing
// after it may be tried either.
bool negotiationPass(const std::vector<const MediaRange*>& clauses, bool aggregated, std::vector<DiscoveryForm>& forms) {
  for (const MediaRange* clause : clauses) {
    // An apiserver with CBOR serving on would answer it; one without skips it.
    if (clause->is("application", "cbor")) return false;
    for (const Serializer& serializer : kSerializers) {
      if (!matches(*clause, serializer)) continue;
      const ClauseOptions options = clauseOptions(*clause, serializer);
      if (!options.acceptable) continue;
      std::optional<DiscoveryKind> kind;
      if (aggregated) {
        kind = options.aggregated();
      } else if (!options.converts()) {
        kind = DiscoveryKind::Legacy;
      }
      if (!kind) continue;
      // Pretty output, and v2's peer-aggregation profile, are not part of the form.
      if (options.pretty || (options.profile && *kind == DiscoveryKind::AggregatedV2)) return false;
      addOnce(forms, DiscoveryForm{*kind, serializer.encoding});
    }
  }
  return true;
}

}  // namespace

std::string_view DiscoveryForm::accept() const {
  static constexpr std::array<std::string_view, 3> kLegacy = {"application/json", "application/yaml",
                                                              "application/vnd.kubernetes.protobuf"};
  static constexpr std::array<std::string_view, 3> kV2 = {
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
      "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
      "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"};
  static constexpr std::array<std::string_view, 3> kV2Beta1 = {
      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
      "application/yaml;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
      "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"};
  const auto at = static_cast<size_t>(encoding);
  switch (kind) {
    case DiscoveryKind::AggregatedV2: return kV2[at];
    case DiscoveryKind::AggregatedV2Beta1: return kV2Beta1[at];
    case DiscoveryKind::Legacy:
    case DiscoveryKind::Version: break;
  }
  return kLegacy[at];
}

std::string_view DiscoveryForm::name() const {
  static constexpr std::array<std::array<std::string_view, 3>, 4> kNames = {{
      {"legacy/json", "legacy/yaml", "legacy/protobuf"},
      {"v2/json", "v2/yaml", "v2/protobuf"},
      {"v2beta1/json", "v2beta1/yaml", "v2beta1/protobuf"},
      {"version/json", "version/yaml", "version/protobuf"},
  }};
  return kNames[static_cast<size_t>(kind)][static_cast<size_t>(encoding)];
}

std::vector<DiscoveryForm> discoveryForms(std::string_view path, const AcceptHeader& accept,
                                          std::string_view user_agent) {
  const std::string_view header = accept.raw();
  std::vector<DiscoveryForm> forms;
  if (path == "/version") {
    // A go-restful route producing JSON; its handler writes indented JSON whatever was asked.
    if (restfulAccepts(header, {"application/json"})) forms.push_back({DiscoveryKind::Version, DiscoveryEncoding::Json});
    return forms;
  }
  if (!restfulAccepts(header, {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"})) {
    return forms;
  }
  if (prettyForUserAgent(user_agent)) return forms;
  // No Accept: the first serializer, and no transform.
  if (accept.empty()) return {DiscoveryForm{DiscoveryKind::Legacy, DiscoveryEncoding::Json}};
  if (accept.ranges().size() > kMaxClauses) return forms;
  const std::vector<const MediaRange*> clauses = accept.byQuality();
  if ((path == "/api" || path == "/apis") && !negotiationPass(clauses, true, forms)) return forms;
  negotiationPass(clauses, false, forms);
  return forms;
}

}  // namespace proxy
