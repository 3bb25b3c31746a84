#pragma once
// StoreAdapter: the reflector's view (watch::ReflectorStore) of one resource's
// cache::ThreadSafeStore. It parses each raw object exactly once with the resource's
// ObjectParser, JSON or protobuf (watch events straight from their line or frame:
// applyEventLine), and translates the store's Result/Status answers into StoreOutcome,
// so the reflector can tell "upstream went backwards" (relist) from "bad bytes".
//
// Threading: like ReflectorStore, called by the reflector thread only (the parser is not
// thread-safe). The ThreadSafeStore stays readable from any thread meanwhile.

#include <cstdint>
#include <vector>

#include "cache/object_parser.h"
#include "cache/thread_safe_store.h"
#include "watch/reflector/reflector_store.h"
#include "watch/fanout/watch_dispatcher.h"

namespace watch {

class StoreAdapter final : public ReflectorStore {
 public:
  // All are borrowed and must outlive the adapter; `parser` is used by no one else.
  // `dispatcher`, when given, receives every successful write's events after the store
  // call returns, in store order.
  StoreAdapter(cache::ThreadSafeStore& store, cache::ObjectParser& parser, WatchDispatcher* dispatcher = nullptr);

  StoreOutcome replace(std::vector<RawObject>&& items, uint64_t list_rv) override;
  StoreOutcome apply(EventType type, RawObject&& object, uint64_t rv) override;
  LineApplied applyEventLine(std::string_view line, uint64_t after_rv) override;
  bool stageInitialLine(std::string_view line) override;
  void clearStaged() override { staged_.clear(); }
  StoreOutcome bookmark(uint64_t rv) override;
  void observeBookmarkObject(std::string_view object) override;
  uint64_t resourceVersion() const override;

 private:
  // Applies a parsed object event at `rv`, which the caller checked is after the store's.
  StoreOutcome applyParsed(cache::EventType type, cache::ObjectConstSharedPtr object, uint64_t rv);

  cache::ThreadSafeStore& store_;
  cache::ObjectParser& parser_;
  WatchDispatcher* dispatcher_;
  // Initial events parsed ahead of the replace() that applies them.
  std::vector<cache::ObjectConstSharedPtr> staged_;
};

}  // namespace watch
