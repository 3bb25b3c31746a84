#include "watch/fanout/watch_filter.h"

#include <string>
#include <utility>

namespace watch {

WatchFilter::WatchFilter(std::string namespace_name, cache::LabelSelector labels, cache::FieldSelector fields,
                         std::optional<cache::ShardSelector> shard)
    : namespace_(std::move(namespace_name)),
      labels_(std::move(labels)),
      fields_(std::move(fields)),
      shard_(std::move(shard)) {
  // A metadata.namespace= term narrows an all-namespaces watch like a namespaced path (W11).
  if (namespace_.empty()) {
    if (auto ns = fields_.requiredValue("metadata.namespace")) namespace_ = std::string(*ns);
  }
}

bool WatchFilter::matches(const cache::Object& object) const {
  const cache::ObjectMeta& meta = object.meta();
  if (!namespace_.empty() && meta.namespace_name != namespace_) return false;
  if (!labels_.empty() && !labels_.matches(meta.labels)) return false;
  if (!fields_.empty() && !fields_.matches(meta.fields, meta.name, meta.namespace_name)) return false;
  if (!shard_) return true;
  thread_local std::string buffer;  // a packed object's bytes up to its uid
  return shard_->matches(object.uid(buffer), meta.namespace_name);
}

std::optional<Delivery> WatchFilter::convert(const cache::WatchEvent& event) const {
  using cache::EventType;
  const bool was = event.prev_object && matches(*event.prev_object);
  if (event.type == EventType::Deleted) {
    // The event's object is the last state at the deletion RV (W3); it is what matched.
    if (event.object && matches(*event.object)) return Delivery{EventType::Deleted, DeliverySource::Object};
    return std::nullopt;
  }
  const bool now = event.object && matches(*event.object);
  if (now && was) return Delivery{EventType::Modified, DeliverySource::Object};
  if (now) return Delivery{EventType::Added, DeliverySource::Object};
  if (was) return Delivery{EventType::Deleted, DeliverySource::PreviousAtEvent};
  return std::nullopt;
}

IndexKey WatchFilter::indexKey() const {
  if (auto node = fields_.requiredValue("spec.nodeName")) return {IndexKey::Kind::NodeName, std::string(*node)};
  if (auto name = fields_.requiredValue("metadata.name")) return {IndexKey::Kind::Name, std::string(*name)};
  if (!namespace_.empty()) return {IndexKey::Kind::Namespace, namespace_};
  return {};
}

}  // namespace watch
