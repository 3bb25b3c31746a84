#pragma once
// WatchFilter: which objects one downstream watch selects (W10, W11): its namespace, label
// selector, field selector and shard selector (KEP-5866), and how a store event looks through it. Each change is
// judged against both the new and the previous object, as the apiserver's
// convertToWatchEvent does: entering the selection is ADDED, leaving it is DELETED with
// the previous content at the change's RV.
//
// Immutable after construction; shared by the watcher and the dispatcher's index.

#include <optional>
#include <string>
#include <string_view>

#include "cache/event_history.h"
#include "cache/selectors/field_selector.h"
#include "cache/selectors/label_selector.h"
#include "cache/selectors/shard_selector.h"
#include "cache/object.h"

namespace watch {

// Where the object a watcher sends comes from.
enum class DeliverySource {
  Object,          // the event's object as stored
  PreviousAtEvent  // the previous object with metadata.resourceVersion set to the event's RV
};

struct Delivery {
  cache::EventType type = cache::EventType::Added;
  DeliverySource source = DeliverySource::Object;
};

// The field whose exact value a watch requires, used to index it in the dispatcher.
struct IndexKey {
  enum class Kind { All, Namespace, NodeName, Name } kind = Kind::All;
  std::string value;
};

class WatchFilter {
 public:
  WatchFilter() = default;
  // `namespace_name` is the request path's namespace ("" = all namespaces).
  // `shard`, when set, is applied as the apiserver's cacher applies it: an object outside
  // the shard is never sent. Its inputs (UID, namespace) never change, so no object moves
  // into or out of a shard and no transition events arise from it.
  WatchFilter(std::string namespace_name, cache::LabelSelector labels, cache::FieldSelector fields,
              std::optional<cache::ShardSelector> shard = std::nullopt);

  bool matches(const cache::Object& object) const;
  // What this watch sends for `event`, or nullopt when it sends nothing.
  std::optional<Delivery> convert(const cache::WatchEvent& event) const;
  // The namespace every selected object is in ("" = any), from the path or a
  // metadata.namespace= field selector.
  const std::string& namespaceScope() const { return namespace_; }
  // The shard selector, when the watch has one (null otherwise).
  const cache::ShardSelector* shard() const { return shard_ ? &*shard_ : nullptr; }
  // The most selective exact value, for the dispatcher's index (spec.nodeName first).
  IndexKey indexKey() const;

 private:
  std::string namespace_;
  cache::LabelSelector labels_;
  cache::FieldSelector fields_;
  std::optional<cache::ShardSelector> shard_;
};

}  // namespace watch
