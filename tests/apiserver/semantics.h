#pragma once
// Request semantics of kube-test-apiserver that are pure functions: list options,
// selectors, continue tokens, patches, Status builders. The HTTP layer and the
// storage call these; nothing here does I/O.
//
// Contract references are to kube-api-contract.md (E, R, P, S, W clauses).

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <rapidjson/document.h>

#include "tests/apiserver/api_types.h"

namespace testapi {

using Query = std::multimap<std::string, std::string>;  // decoded query parameters
using Labels = std::map<std::string, std::string>;
using Fields = std::map<std::string, std::string>;  // selectable field path -> value as matched

template <typename T>
using Result = std::variant<T, ApiError>;

// ---- E4 / R3 / R4 / R5 / R6 / W4 / W9: query decoding and validation ----
struct ListOptions {
  bool watch = false;
  std::string resource_version;        // raw, "" when unset
  bool has_resource_version = false;
  std::string resource_version_match;  // "", "Exact", "NotOlderThan"
  int64_t limit = 0;
  std::string continue_token;
  std::string label_selector;
  std::string field_selector;
  std::string shard_selector;  // KEP-5866, read only when the ShardedListAndWatch gate is on
  bool allow_watch_bookmarks = false;
  std::optional<bool> send_initial_events;  // absent vs false matters (W9)
  int64_t timeout_seconds = 0;
  bool has_timeout_seconds = false;
};
// Booleans as the apiserver's parameter codec decodes them (E4): only "0" and "false" in
// any case are false; not strconv.ParseBool ("f", "F", "no" are true).
bool parseQueryBool(std::string_view v);
// Parses and validates; errors are the apiserver's 400/422 Status exactly. `watch`: as if
// ?watch=true were sent.
Result<ListOptions> parseListOptions(const Query& q, bool watch);
// The handler's part of parseListOptions for a LIST (decoding and validation, no storage
// checks). The apiserver's handler converts the field selector's labels for the type
// next, and only storage checks the continue token and resourceVersion: with a bad
// selector and a bad RV/token, the selector error wins (S2/S5 before R5/R6/P3). LIST
// handlers call this, then ObjectFilter::make, then validateListStorage.
Result<ListOptions> parseListOptionsInHandler(const Query& q);
// storage.ValidateListOptions: continue token first, then continue+RV, then the RV.
std::optional<ApiError> validateListStorage(const ListOptions& o);
// The same split for a WATCH: the handler's decoding and validation, then (after
// ObjectFilter::make) the watch cache's resourceVersion parse, whose error is a bare 500
// (R6), so a bad field label wins over a bad RV as it does on a LIST. Validation and
// defaulting follow ?watch: on the deprecated /watch/ path without it, the LIST rules and
// no watch-list defaulting (W1, W4).
Result<ListOptions> parseWatchOptionsInHandler(const Query& q);
std::optional<ApiError> validateWatchStorage(const ListOptions& o);
// Parses a resourceVersion string as uint64; nullopt when malformed (R6).
std::optional<uint64_t> parseResourceVersion(std::string_view rv);

// ---- S1/S2: label selectors ----
class LabelSelector {
 public:
  virtual ~LabelSelector() = default;
  virtual bool matches(const Labels& labels) const = 0;
  virtual bool empty() const = 0;
};
Result<std::shared_ptr<const LabelSelector>> parseLabelSelector(std::string_view text);

// ---- S3-S6: field selectors ----
class FieldSelector {
 public:
  virtual ~FieldSelector() = default;
  virtual bool matches(const Fields& fields) const = 0;
  virtual bool empty() const = 0;
  // The value the selector requires for `field` with '=' / '==' ("" if none): lets a
  // caller narrow by metadata.name / metadata.namespace / spec.nodeName.
  virtual std::optional<std::string> requiredValue(std::string_view field) const = 0;
};
// Parses and checks every field against the type's supported set with the
// per-type error text of S5 (400 BadRequest).
Result<std::shared_ptr<const FieldSelector>> parseFieldSelector(const ResourceDef& def, std::string_view text);
// The selectable field set of an object (metadata.name, metadata.namespace and the
// type's own fields, S4/S6), computed once per stored version.
Fields extractFields(const ResourceDef& def, const rapidjson::Value& object);
Labels extractLabels(const rapidjson::Value& object);

// ---- P2/P3/P7: continue tokens ----
struct ContinueToken {
  int64_t rv = 0;
  // Decoded: the key relative to the list prefix without a leading '/', with the
  // trailing NUL ("pod-55\0", "load-0/cm-0\0"); "" starts at the beginning.
  std::string start;
};
// storage.EncodeContinue: `start` is written as given. The watch cache's pages pass
// "/" + relative key + NUL, etcd's answers the relative key + NUL (see continue_token.cpp).
std::string encodeContinue(int64_t rv, std::string_view start);
// storage.DecodeContinue; errors are the 400 "invalid continue token: ..." of P3.
Result<ContinueToken> decodeContinue(std::string_view token);

// ---- writes: patches ----
// content_type: application/merge-patch+json, application/json-patch+json,
// application/strategic-merge-patch+json (merge semantics with list replacement,
// plus merge-by-key for the well-known built-in lists), application/apply-patch+yaml.
// On success `target` holds the patched object.
Result<bool> applyPatch(const ResourceDef& def, std::string_view content_type, const rapidjson::Value& original,
                        std::string_view patch, rapidjson::Document& target);

// ---- Status builders (E2, R7, R8, X2) ----
ApiError notFound(const ResourceDef& def, std::string_view name);
ApiError alreadyExists(const ResourceDef& def, std::string_view name);
ApiError conflict(const ResourceDef& def, std::string_view name);
ApiError badRequest(std::string message);
// 504. The watch cache asks for a retry after 1 s (Retry-After); etcd's GetList passes
// 0, which leaves out both the header and details.retryAfterSeconds.
ApiError tooLargeResourceVersion(uint64_t requested, uint64_t current, int retry_after_seconds = 1);
ApiError expiredList();                                                    // R8 etcd text
ApiError expiredWatch(uint64_t requested, uint64_t oldest);                // W5 "too old resource version: N (M)"
ApiError notAcceptable(std::string_view accepted_list);
ApiError unsupportedMediaType(std::string_view accepted_list);

}  // namespace testapi
