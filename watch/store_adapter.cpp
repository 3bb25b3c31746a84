#include "watch/store_adapter.h"

#include <string>
#include <utility>

namespace watch {
namespace {

// Everything the store refuses besides an RV regression is a bug on our side of the
// contract (the adapter checks RV order itself before calling), hence Internal.
StoreStatus fromStoreError(const cache::Status& status) {
  return {StoreStatus::Code::Internal, status.message};
}

StoreStatus wentBackwards(std::string_view what, uint64_t rv, uint64_t current) {
  return {StoreStatus::Code::ResourceVersionWentBackwards,
          std::string(what) + " resourceVersion " + std::to_string(rv) + " is not after the store's " +
              std::to_string(current)};
}

}  // namespace

StoreAdapter::StoreAdapter(cache::ThreadSafeStore& store, cache::ObjectMetaParser& parser,
                           WatchDispatcher* dispatcher)
    : store_(store), parser_(parser), dispatcher_(dispatcher) {}

StoreStatus StoreAdapter::replace(std::vector<RawObject>&& items, uint64_t list_rv) {
  // A list may repeat the RV the store already has (nothing changed upstream), but never
  // go below it: that would rewind what watchers have already been told.
  const uint64_t current = store_.currentRV();
  if (list_rv < current) return wentBackwards("list", list_rv, current);

  std::vector<cache::ObjectConstSharedPtr> objects;
  objects.reserve(items.size());
  for (RawObject& raw : items) {
    auto parsed = parser_.parseObject(std::string_view(raw));
    if (!parsed) return {StoreStatus::Code::InvalidObject, "list item: " + parsed.error().message};
    objects.push_back(std::move(*parsed));
    // The object now owns a copy of the bytes; release the raw ones early, because a
    // full list of a large resource would otherwise be held twice.
    RawObject().swap(raw);
  }
  items.clear();
  auto result = store_.replace(std::move(objects), list_rv);
  if (!result) return fromStoreError(result.error());
  if (dispatcher_ != nullptr) {
    dispatcher_->onEvents(*result);
    dispatcher_->onBookmark(list_rv);
  }
  return StoreStatus::okStatus();
}

StoreStatus StoreAdapter::apply(EventType type, RawObject&& object, uint64_t rv) {
  cache::EventType store_type;
  switch (type) {
    case EventType::Added: store_type = cache::EventType::Added; break;
    case EventType::Modified: store_type = cache::EventType::Modified; break;
    case EventType::Deleted: store_type = cache::EventType::Deleted; break;
    default: return {StoreStatus::Code::Internal, "only ADDED, MODIFIED and DELETED change the store"};
  }
  // Every event RV is unique and increasing (W4); an equal one would be applied twice.
  const uint64_t current = store_.currentRV();
  if (rv <= current) return wentBackwards(std::string(cache::wireName(store_type)) + " event", rv, current);

  auto parsed = parser_.parseObject(std::string_view(object));
  if (!parsed) return {StoreStatus::Code::InvalidObject, parsed.error().message};
  cache::ObjectConstSharedPtr parsed_object = std::move(*parsed);
  // The store takes the event RV from the object. A DELETED event carries the deletion RV
  // (W3); should the object's own differ, the event's RV is the one that orders history.
  if (parsed_object->resourceVersion() != rv) parsed_object = parsed_object->withResourceVersion(rv);

  auto result = store_.apply(store_type, std::move(parsed_object));
  if (!result) return fromStoreError(result.error());
  if (dispatcher_ != nullptr) dispatcher_->onEvents(std::span<const cache::WatchEvent>(&*result, 1));
  return StoreStatus::okStatus();
}

StoreStatus StoreAdapter::bookmark(uint64_t rv) {
  const uint64_t current = store_.currentRV();
  if (rv < current) return wentBackwards("bookmark", rv, current);
  auto result = store_.bookmark(rv);
  if (!result) return fromStoreError(result.error());
  if (dispatcher_ != nullptr) dispatcher_->onBookmark(rv);
  return StoreStatus::okStatus();
}

uint64_t StoreAdapter::resourceVersion() const { return store_.currentRV(); }

}  // namespace watch
