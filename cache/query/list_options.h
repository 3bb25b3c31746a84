#pragma once
// LIST and WATCH query parameters, decoded and validated in the apiserver's order so
// that every rejection is the one upstream would give for the same request:
//   1. decoding (E4): timeoutSeconds, limit -> 400 with strconv's text; then
//      labelSelector (S2) and fieldSelector syntax (S3) -> 400
//   2. watch-list defaulting (W4), when the WatchList gate is on
//   3. option validation (R4, W9) -> 422 Invalid with one cause per field error
//   4. field label conversion for the resource (S4-S6) -> 400
//   5. LIST only: continue token (P3), continue + resourceVersion (R5), malformed
//      resourceVersion (R6) -> 400. WATCH: malformed resourceVersion -> bare 500 (R6).
// limit and continue are ignored on watches (W1) after validation has seen them.
//
// ListOptions is a plain value; parse() is a pure function.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/query/continue_token.h"
#include "cache/selectors/field_error.h"
#include "cache/selectors/field_selector.h"
#include "cache/selectors/label_selector.h"
#include "cache/selectors/shard_selector.h"
#include "cache/resource_version.h"
#include "cache/selectors/selectable_fields.h"
#include "cache/query/query_values.h"
#include "cache/status.h"

namespace cache {

enum class ResourceVersionMatch { Unset, NotOlderThan, Exact };

// What a LIST must return according to the R3 table (P7 for rv -1 tokens).
enum class ListSemantics {
  MostRecent,    // RV unset: consistent read (C1)
  Any,           // RV "0": any cached state; limit is ignored by the cache (P5)
  NotOlderThan,  // list RV >= requested RV
  Exact,         // list RV == requested RV (or the token's RV), else 410
  Latest,        // continue token with rv -1: continue at the latest RV
};

struct ListOptionsConfig {
  // Mirrors the apiserver's WatchList feature gate. Off: sendInitialEvents is refused
  // with 422 (clients fall back to LIST+WATCH, W9) and legacy watches are not defaulted.
  bool watch_list_enabled = false;
  // The deprecated /watch/ path (ListResource's forceWatch): served as a watch, though
  // defaulting and validation still follow ?watch, so without ?watch=true it is checked
  // by the LIST rules and stays a legacy watch (W1, W4).
  bool force_watch = false;
};

struct ListOptions {
  bool watch = false;  // ?watch as decoded; a forced watch (force_watch) may have it false
  bool allow_watch_bookmarks = false;
  std::optional<bool> send_initial_events;  // present (even "false") vs absent matters
  std::string resource_version;             // as sent; "" = unset
  ResourceVersionMatch resource_version_match = ResourceVersionMatch::Unset;
  std::optional<int64_t> timeout_seconds;
  int64_t limit = 0;  // <= 0 = unlimited; always 0 on watches
  std::string continue_token;               // as sent; always empty on watches
  std::optional<ContinueToken> continuation;  // decoded continue_token (LIST)
  // Parsed resource_version when set and not consumed by a continue token ("0" -> 0).
  std::optional<ResourceVersion> parsed_resource_version;
  std::string label_selector_text;  // as sent, for forwarding upstream
  std::string field_selector_text;
  LabelSelector label_selector;
  FieldSelector field_selector;  // bound to the resource's FieldSpec
  // shardSelector (KEP-5866) as sent, and parsed when it is in the grammar the proxy reads
  // (cache/selectors/shard_selector.h); whether it applies at all is the upstream's
  // ShardedListAndWatch gate, which the serving side learns (ignoreShardSelector()).
  std::string shard_selector_text;
  std::optional<ShardSelector> shard_selector;

  using Result = ParseResult<ListOptions, Status>;

  // `raw_query` is the URL query without '?', still percent-encoded.
  // From a request's query, decoded once (QueryValues::parse).
  static Result parse(const QueryValues& query, const FieldSpec& spec, const ListOptionsConfig& config = {});
  // The same from the raw query text (tests and fuzz targets).
  static Result parse(std::string_view raw_query, const FieldSpec& spec, const ListOptionsConfig& config = {});

  bool hasSelectors() const {
    return !label_selector.empty() || !field_selector.empty() || (shard_selector && !shard_selector->empty());
  }
  bool hasShardSelector() const { return !shard_selector_text.empty(); }
  // The upstream's gate is off: it ignores the parameter, and so does the answer.
  void ignoreShardSelector() {
    shard_selector_text.clear();
    shard_selector.reset();
  }
  // LIST only: which state the answer must reflect (R3).
  ListSemantics listSemantics() const;
};

}  // namespace cache
