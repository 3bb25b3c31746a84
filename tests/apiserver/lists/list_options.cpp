// Query decoding (E4) and ListOptions validation (R4, R5, R6, W9) as the apiserver's
// list/watch handlers and storage layer apply them, in the same order: parameter
// decoding (400), watch-list defaulting, option validation (422), then the storage
// checks of continue token and resourceVersion (400).
#include "tests/apiserver/semantics.h"
#include "tests/apiserver/selectors/field_selector_rules.h"
#include "tests/apiserver/status/status_util.h"

#include <cctype>
#include <limits>

namespace testapi {

namespace {

const std::string* firstValue(const Query& q, const std::string& key) {
  auto it = q.find(key);  // multimap::find returns the first inserted value for the key
  return it == q.end() ? nullptr : &it->second;
}

Result<int64_t> parseIntParameter(const std::string& s) {
  std::string why;
  if (auto v = parseGoInt64(s, &why)) return *v;
  return badRequest("strconv.ParseInt: parsing " + goQuote(s) + ": " + why);
}

// The versioner's error text (AS api_object_versioner.go): a field error on
// "resourceVersion" wrapping the strconv error.
std::string resourceVersionErrorText(std::string_view rv, const std::string& why) {
  return FieldError::invalid("resourceVersion", rv,
                             "strconv.ParseUint: parsing " + goQuote(rv) + ": " + why)
      .error();
}

// metainternalversion.SetListOptionsDefaults with WatchList on (1.34+): a watch that
// asks for no particular start becomes a consistent watch-list (W4).
void applyWatchListDefaults(ListOptions& o) {
  if (!o.watch) return;
  if (o.resource_version != "" && o.resource_version != "0") return;
  if (o.send_initial_events.has_value() || !o.resource_version_match.empty()) return;
  o.send_initial_events = true;
  o.resource_version_match = "NotOlderThan";
}

std::vector<FieldError> validateList(const ListOptions& o) {
  std::vector<FieldError> errs;
  const std::string& match = o.resource_version_match;
  if (!match.empty()) {
    if (o.resource_version.empty())
      errs.push_back(FieldError::forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden unless resourceVersion is provided"));
    if (!o.continue_token.empty())
      errs.push_back(FieldError::forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden when continue is provided"));
    if (match != "Exact" && match != "NotOlderThan")
      errs.push_back(FieldError::notSupported("resourceVersionMatch", match, {"Exact", "NotOlderThan", ""}));
    if (match == "Exact" && o.resource_version == "0")
      errs.push_back(FieldError::forbidden(
          "resourceVersionMatch", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
  }
  if (o.send_initial_events.has_value())
    errs.push_back(FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  return errs;
}

std::vector<FieldError> validateWatch(const ListOptions& o) {
  std::vector<FieldError> errs;
  const std::string& match = o.resource_version_match;
  if (o.send_initial_events.has_value() && match != "NotOlderThan")
    errs.push_back(FieldError::forbidden("resourceVersionMatch",
                                         "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
  if (!match.empty()) {
    if (!o.send_initial_events.has_value())
      errs.push_back(FieldError::forbidden(
          "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
    if (match != "NotOlderThan")
      errs.push_back(FieldError::notSupported("resourceVersionMatch", match, {"NotOlderThan"}));
    if (!o.continue_token.empty())
      errs.push_back(FieldError::forbidden("resourceVersionMatch",
                                           "resourceVersionMatch is forbidden when continue is provided"));
  }
  return errs;
}

}  // namespace

std::optional<int64_t> parseGoInt64(std::string_view s, std::string* why) {
  size_t i = 0;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) {
    if (why) *why = "invalid syntax";
    return std::nullopt;
  }
  auto magnitude = parseGoUint64(s.substr(i), why);
  if (!magnitude && why && *why == "invalid syntax") return std::nullopt;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (!magnitude || *magnitude > limit) {
    if (why) *why = "value out of range";
    return std::nullopt;
  }
  if (negative) return static_cast<int64_t>(0 - *magnitude);
  return static_cast<int64_t>(*magnitude);
}

std::optional<uint64_t> parseGoUint64(std::string_view s, std::string* why) {
  if (s.empty()) {
    if (why) *why = "invalid syntax";
    return std::nullopt;
  }
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') {
      if (why) *why = "invalid syntax";
      return std::nullopt;
    }
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      // Go reports the first problem it meets while scanning left to right.
      if (why) *why = "value out of range";
      return std::nullopt;
    }
    v = v * 10 + digit;
  }
  return v;
}

bool parseQueryBool(std::string_view v) {
  if (v == "0") return false;
  if (v.size() != 5) return true;
  static constexpr std::string_view kFalse = "false";
  for (size_t i = 0; i < 5; ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != kFalse[i]) return true;
  }
  return false;
}

std::optional<uint64_t> parseResourceVersion(std::string_view rv) {
  if (rv.empty()) return uint64_t{0};  // the versioner treats "" like "0"
  return parseGoUint64(rv, nullptr);
}

// storage.ValidateListOptions: continue token first, then continue+RV, then the RV.
std::optional<ApiError> validateListStorage(const ListOptions& o) {
  if (!o.continue_token.empty()) {
    auto token = decodeContinue(o.continue_token);
    if (auto* err = std::get_if<ApiError>(&token)) return *err;
    if (!o.resource_version.empty() && o.resource_version != "0")
      return badRequest("specifying resource version is not allowed when using continue");
    return std::nullopt;
  }
  std::string why;
  if (!o.resource_version.empty() && !parseGoUint64(o.resource_version, &why))
    return badRequest("invalid resource version: " + resourceVersionErrorText(o.resource_version, why));
  return std::nullopt;
}

namespace {

// Decoding and validation, as the handler does them; `watch` stands for ?watch=true.
// Both follow ?watch even on the deprecated /watch/ path, which is served as a watch
// regardless (ListResource's forceWatch): there, without ?watch=true, the LIST rules
// apply and no watch-list defaulting happens (W1, W4).
Result<ListOptions> decodeAndValidate(const Query& q, bool watch) {
  ListOptions o;
  if (const auto* v = firstValue(q, "watch")) watch = watch || parseQueryBool(*v);
  o.watch = watch;
  if (const auto* v = firstValue(q, "resourceVersion")) {
    o.resource_version = *v;
    o.has_resource_version = true;
  }
  if (const auto* v = firstValue(q, "resourceVersionMatch")) o.resource_version_match = *v;
  if (const auto* v = firstValue(q, "continue")) o.continue_token = *v;
  if (const auto* v = firstValue(q, "labelSelector")) o.label_selector = *v;
  if (const auto* v = firstValue(q, "fieldSelector")) o.field_selector = *v;
  if (const auto* v = firstValue(q, "shardSelector")) o.shard_selector = *v;
  if (const auto* v = firstValue(q, "allowWatchBookmarks")) o.allow_watch_bookmarks = parseQueryBool(*v);
  if (const auto* v = firstValue(q, "sendInitialEvents")) o.send_initial_events = parseQueryBool(*v);
  if (const auto* v = firstValue(q, "timeoutSeconds")) {
    auto parsed = parseIntParameter(*v);
    if (auto* err = std::get_if<ApiError>(&parsed)) return *err;
    o.timeout_seconds = std::get<int64_t>(parsed);
    o.has_timeout_seconds = true;
  }
  if (const auto* v = firstValue(q, "limit")) {
    auto parsed = parseIntParameter(*v);
    if (auto* err = std::get_if<ApiError>(&parsed)) return *err;
    o.limit = std::get<int64_t>(parsed);
  }
  // Selectors are parsed when the versioned options convert to internal ones, after
  // every integer; the per-type field label check comes later (parseFieldSelector).
  if (!o.label_selector.empty()) {
    auto parsed = parseLabelSelector(o.label_selector);
    if (auto* err = std::get_if<ApiError>(&parsed)) return *err;
  }
  if (auto err = checkFieldSelectorSyntax(o.field_selector)) return *err;

  applyWatchListDefaults(o);
  auto errs = o.watch ? validateWatch(o) : validateList(o);
  if (!errs.empty()) return invalid("meta.k8s.io", "ListOptions", "", errs);
  return o;
}

}  // namespace

Result<ListOptions> parseListOptionsInHandler(const Query& q) { return decodeAndValidate(q, false); }

Result<ListOptions> parseWatchOptionsInHandler(const Query& q) { return decodeAndValidate(q, false); }

std::optional<ApiError> validateWatchStorage(const ListOptions& o) {
  if (o.resource_version.empty()) return std::nullopt;
  // R6 quirk: the cache does not convert the versioner error into a Status, so a watch
  // with a malformed RV is a bare 500.
  std::string why;
  if (parseGoUint64(o.resource_version, &why)) return std::nullopt;
  ApiError e;
  e.code = 500;
  e.message = resourceVersionErrorText(o.resource_version, why);
  return e;
}

Result<ListOptions> parseListOptions(const Query& q, bool watch) {
  auto decoded = decodeAndValidate(q, watch);
  if (std::holds_alternative<ApiError>(decoded)) return decoded;
  ListOptions& o = std::get<ListOptions>(decoded);
  if (auto err = o.watch ? validateWatchStorage(o) : validateListStorage(o)) return *err;
  return o;
}

}  // namespace testapi
