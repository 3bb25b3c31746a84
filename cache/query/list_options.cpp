#include "cache/query/list_options.h"

#include "cache/query/query_values.h"

namespace cache {

namespace {

constexpr std::string_view kExact = "Exact";
constexpr std::string_view kNotOlderThan = "NotOlderThan";

// runtime.Convert_Slice_string_To_bool: "0" and "false" in any case are false; any
// other value, including the empty one of "?watch", is true.
bool queryBool(std::string_view value) { return !(value == "0" || goEqualFold(value, "false")); }

Status badRequest(std::string message) { return Status{Reason::BadRequest, std::move(message)}; }

// errors.NewInvalid(schema.GroupKind{"meta.k8s.io", "ListOptions"}, "", errs).
Status invalid(const std::vector<FieldError>& errs) {
  Status error{Reason::Invalid, "ListOptions.meta.k8s.io \"\" is invalid: " + aggregateErrors(errs)};
  error.details_group = "meta.k8s.io";
  error.details_kind = "ListOptions";
  for (const auto& e : errs) error.causes.push_back({std::string(e.causeType()), e.body(), e.field});
  return error;
}

// metainternalversion.SetListOptionsDefaults: a legacy watch from "now" (RV unset or
// "0", no sendInitialEvents, no resourceVersionMatch) becomes a watch-list.
void applyWatchListDefaults(ListOptions& o, std::string& match) {
  if (o.send_initial_events || !match.empty()) return;
  if (o.watch && (o.resource_version.empty() || o.resource_version == "0")) {
    o.send_initial_events = true;
    match = kNotOlderThan;
  }
}

// metainternalversion validation.ValidateListOptions (R4, W9).
std::vector<FieldError> validate(const ListOptions& o, std::string_view match, const ListOptionsConfig& config) {
  std::vector<FieldError> errs;
  const std::string field = "resourceVersionMatch";
  if (o.watch) {
    if (o.send_initial_events) {
      if (match != kNotOlderThan) {
        errs.push_back(FieldError::forbidden(field, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
      }
      if (!config.watch_list_enabled) {
        errs.push_back(FieldError::forbidden(
            "sendInitialEvents", "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"));
      }
    }
    if (!match.empty()) {
      if (!o.send_initial_events) {
        errs.push_back(FieldError::forbidden(field, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
      }
      if (match != kNotOlderThan) errs.push_back(FieldError::notSupported(field, match, {kNotOlderThan}));
      if (!o.continue_token.empty()) {
        errs.push_back(FieldError::forbidden(field, "resourceVersionMatch is forbidden when continue is provided"));
      }
    }
    return errs;
  }
  if (!match.empty()) {
    if (o.resource_version.empty()) {
      errs.push_back(FieldError::forbidden(field, "resourceVersionMatch is forbidden unless resourceVersion is provided"));
    }
    if (!o.continue_token.empty()) {
      errs.push_back(FieldError::forbidden(field, "resourceVersionMatch is forbidden when continue is provided"));
    }
    if (match != kExact && match != kNotOlderThan) {
      errs.push_back(FieldError::notSupported(field, match, {kExact, kNotOlderThan, ""}));
    }
    if (match == kExact && o.resource_version == "0") {
      errs.push_back(FieldError::forbidden(field, "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
    }
  }
  if (o.send_initial_events) {
    errs.push_back(FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  }
  return errs;
}

// The decoding step (E4, S2, S3): url.Values -> metav1.ListOptions -> internal ListOptions.
std::optional<Status> decode(const QueryValues& query, ListOptions& o, std::string& match) {
  o.label_selector_text = std::string(query.get("labelSelector").value_or(""));
  o.field_selector_text = std::string(query.get("fieldSelector").value_or(""));
  o.shard_selector_text = std::string(query.get("shardSelector").value_or(""));
  if (!o.shard_selector_text.empty()) o.shard_selector = ShardSelector::parse(o.shard_selector_text);
  o.watch = query.has("watch") && queryBool(*query.get("watch"));
  o.allow_watch_bookmarks = query.has("allowWatchBookmarks") && queryBool(*query.get("allowWatchBookmarks"));
  o.resource_version = std::string(query.get("resourceVersion").value_or(""));
  match = std::string(query.get("resourceVersionMatch").value_or(""));
  std::string error;
  if (auto timeout = query.get("timeoutSeconds")) {
    o.timeout_seconds = parseGoInt64(*timeout, &error);
    if (!o.timeout_seconds) return badRequest(std::move(error));
  }
  if (auto limit = query.get("limit")) {
    auto parsed = parseGoInt64(*limit, &error);
    if (!parsed) return badRequest(std::move(error));
    o.limit = *parsed;
  }
  o.continue_token = std::string(query.get("continue").value_or(""));
  if (auto send = query.get("sendInitialEvents")) o.send_initial_events = queryBool(*send);

  auto labels = LabelSelector::parse(o.label_selector_text);
  if (!labels) return badRequest(labels.error());
  o.label_selector = std::move(labels).value();
  auto fields = FieldSelector::parseSyntax(o.field_selector_text);
  if (!fields) return badRequest(fields.error());
  o.field_selector = std::move(fields).value();
  return std::nullopt;
}

}  // namespace

ListOptions::Result ListOptions::parse(std::string_view raw_query, const FieldSpec& spec, const ListOptionsConfig& config) {
  return parse(QueryValues::parse(raw_query), spec, config);
}

ListOptions::Result ListOptions::parse(const QueryValues& query, const FieldSpec& spec, const ListOptionsConfig& config) {
  ListOptions o;
  std::string match;
  if (auto error = decode(query, o, match)) return Result::failure(std::move(*error));

  if (config.watch_list_enabled) applyWatchListDefaults(o, match);
  if (auto errs = validate(o, match, config); !errs.empty()) return Result::failure(invalid(errs));
  o.resource_version_match = match == kExact          ? ResourceVersionMatch::Exact
                             : match == kNotOlderThan ? ResourceVersionMatch::NotOlderThan
                                                      : ResourceVersionMatch::Unset;

  auto bound = o.field_selector.bind(spec);
  if (!bound) return Result::failure(badRequest(bound.error()));
  o.field_selector = std::move(bound).value();

  if (o.watch || config.force_watch) {
    o.limit = 0;
    o.continue_token.clear();
    if (!o.resource_version.empty()) {
      o.parsed_resource_version = ResourceVersion::parse(o.resource_version);
      if (!o.parsed_resource_version) {
        return Result::failure(Status{Reason::Internal, ResourceVersion::invalidMessage(o.resource_version)});
      }
    }
    return o;
  }

  if (!o.continue_token.empty()) {
    auto token = ContinueToken::decode(o.continue_token);
    if (!token) return Result::failure(badRequest(token.error()));
    if (!o.resource_version.empty() && o.resource_version != "0") {
      return Result::failure(badRequest("specifying resource version is not allowed when using continue"));
    }
    o.continuation = std::move(token).value();
    return o;
  }
  if (!o.resource_version.empty()) {
    o.parsed_resource_version = ResourceVersion::parse(o.resource_version);
    if (!o.parsed_resource_version) {
      return Result::failure(badRequest(ResourceVersion::listBadRequestMessage(o.resource_version)));
    }
  }
  return o;
}

ListSemantics ListOptions::listSemantics() const {
  if (continuation) return continuation->atLatest() ? ListSemantics::Latest : ListSemantics::Exact;
  if (!parsed_resource_version) return ListSemantics::MostRecent;
  if (parsed_resource_version->isZero()) return ListSemantics::Any;
  switch (resource_version_match) {
    case ResourceVersionMatch::Exact: return ListSemantics::Exact;
    case ResourceVersionMatch::NotOlderThan: return ListSemantics::NotOlderThan;
    case ResourceVersionMatch::Unset: break;
  }
  // Legacy: a limit with RV=N asks for exactly N (R3).
  return limit > 0 ? ListSemantics::Exact : ListSemantics::NotOlderThan;
}

}  // namespace cache
