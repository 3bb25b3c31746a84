#include "watch/store_adapter.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cache/protobuf/protobuf_object.h"

namespace watch {
namespace {

// Everything the store refuses besides an RV regression is a bug on our side of the
// contract (the adapter checks RV order itself before calling), hence Internal.
StoreOutcome fromStoreError(const cache::Status& status) {
  return {StoreOutcome::Code::Internal, status.message};
}

StoreOutcome wentBackwards(std::string_view what, uint64_t rv, uint64_t current) {
  return {StoreOutcome::Code::ResourceVersionWentBackwards,
          std::string(what) + " resourceVersion " + std::to_string(rv) + " is not after the store's " +
              std::to_string(current)};
}

// Only these change the store; bookmarks and errors are the reflector's business.
bool changesObjects(EventType type) {
  return type == EventType::Added || type == EventType::Modified || type == EventType::Deleted;
}

}  // namespace

StoreAdapter::StoreAdapter(cache::ThreadSafeStore& store, cache::ObjectParser& parser,
                           WatchDispatcher* dispatcher)
    : store_(store), parser_(parser), dispatcher_(dispatcher) {}

StoreOutcome StoreAdapter::replace(std::vector<RawObject>&& items, uint64_t list_rv) {
  // A list may repeat the RV the store already has (nothing changed upstream), but never
  // go below it: that would rewind what watchers have already been told.
  const uint64_t current = store_.currentRV();
  if (list_rv < current) {
    staged_.clear();
    return wentBackwards("list", list_rv, current);
  }

  std::vector<cache::ObjectConstSharedPtr> objects = std::move(staged_);
  staged_.clear();
  objects.reserve(objects.size() + items.size());
  for (RawObject& raw : items) {
    auto parsed = parser_.parseObject(std::string_view(raw));
    if (!parsed) return {StoreOutcome::Code::InvalidObject, "list item: " + parsed.error().message};
    objects.push_back(std::move(*parsed));
    // The object now owns a copy of the bytes; release the raw ones early, because a
    // full list of a large resource would otherwise be held twice.
    RawObject().swap(raw);
  }
  items.clear();
  auto result = store_.replace(std::move(objects), list_rv);
  if (!result) return fromStoreError(result.error());
  if (dispatcher_ != nullptr) {
    // A changed state ends the watches from before it; an unchanged one is news of the
    // RV only, and the watches go on with a bookmark.
    if (result->changed()) {
      dispatcher_->onRelist(list_rv);
    } else {
      dispatcher_->onBookmark(list_rv);
    }
  }
  StoreOutcome out = StoreOutcome::applied();
  out.changed_objects = result->added + result->modified + result->deleted;
  return out;
}

StoreOutcome StoreAdapter::apply(EventType type, RawObject&& object, uint64_t rv) {
  if (!changesObjects(type)) return {StoreOutcome::Code::Internal, "only ADDED, MODIFIED and DELETED change the store"};
  // Every event RV is unique and increasing (W4); an equal one would be applied twice.
  const uint64_t current = store_.currentRV();
  if (rv <= current) return wentBackwards(std::string(cache::wireName(type)) + " event", rv, current);

  auto parsed = parser_.parseObject(std::string_view(object));
  if (!parsed) return {StoreOutcome::Code::InvalidObject, parsed.error().message};
  return applyParsed(type, std::move(*parsed), rv);
}

LineApplied StoreAdapter::applyEventLine(std::string_view line, uint64_t after_rv) {
  // BOOKMARK and ERROR lines carry what only the reflector's decoder reads (the W9
  // annotation, a Status), and they are rare: they are not worth a second parser.
  if (!parser_.objectEventType(line)) return {};
  // One pass over the line: envelope, object bytes and metadata together. The parser
  // copies the line once into its padded buffer, and the object's bytes once into it.
  auto parsed = parser_.parseWatchEvent(line);
  if (!parsed || !parsed->object) return {};  // the decoder's path reports what is wrong
  if (!changesObjects(parsed->type)) return {};
  LineApplied out{true, parsed->type, parsed->resource_version, {}};
  const uint64_t current = std::max(after_rv, store_.currentRV());
  if (out.resource_version <= current) {
    out.status = wentBackwards(std::string(cache::wireName(out.type)) + " event", out.resource_version, current);
    return out;
  }
  out.status = applyParsed(out.type, std::move(parsed->object), out.resource_version);
  return out;
}

bool StoreAdapter::stageInitialLine(std::string_view line) {
  if (parser_.objectEventType(line) != cache::EventType::Added) return false;
  auto parsed = parser_.parseWatchEvent(line);
  if (!parsed || !parsed->object || parsed->type != cache::EventType::Added) return false;
  staged_.push_back(std::move(parsed->object));
  return true;
}

StoreOutcome StoreAdapter::applyParsed(cache::EventType type, cache::ObjectConstSharedPtr object, uint64_t rv) {
  // The store takes the event RV from the object. A DELETED event carries the deletion RV
  // (W3); should the object's own differ, the event's RV is the one that orders history.
  if (object->resourceVersion() != rv) object = object->withResourceVersion(rv);
  auto result = store_.apply(type, std::move(object));
  if (!result) return fromStoreError(result.error());
  if (dispatcher_ != nullptr) dispatcher_->onEvents(std::span<const cache::WatchEvent>(&*result, 1));
  return StoreOutcome::applied();
}

StoreOutcome StoreAdapter::bookmark(uint64_t rv) {
  const uint64_t current = store_.currentRV();
  if (rv < current) return wentBackwards("bookmark", rv, current);
  auto result = store_.bookmark(rv);
  if (!result) return fromStoreError(result.error());
  if (dispatcher_ != nullptr) dispatcher_->onBookmark(rv);
  return StoreOutcome::applied();
}

void StoreAdapter::observeBookmarkObject(std::string_view object) {
  // The first usable one is kept: every bookmark of a type has the same shape.
  if (parser_.encoding() != cache::Encoding::Protobuf || dispatcher_ == nullptr || dispatcher_->bookmarkSample()) {
    return;
  }
  if (!cache::protobuf::bookmarkObject(object, 1, true)) return;
  dispatcher_->setBookmarkSample(std::string(object));
}

uint64_t StoreAdapter::resourceVersion() const { return store_.currentRV(); }

}  // namespace watch
