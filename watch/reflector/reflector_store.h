#pragma once
// ReflectorStore: the subset of the resource's store that the reflector writes to
// (client-go's ReflectorStore). The reflector is the store's only writer and calls it from
// its own thread, one call at a time, in upstream order. Objects travel as raw JSON bytes
// exactly as upstream sent them; the store parses each one once.
//
// Failures are values. Any non-Ok answer makes the reflector count it and relist, so a
// store may refuse whatever breaks its invariants (e.g. a resourceVersion going backwards)
// without crashing the process.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "watch/reflector/watch_event_decoder.h"

namespace watch {

// One object's raw JSON.
using RawObject = std::string;

// What the store did with a list, an event or a bookmark, as the reflector needs it to
// choose its next step and counter. Not a failure vocabulary: nothing of it reaches a
// client (those speak cache::Status); every refusal ends in a relist, and the code only
// says which counter to add to (an RV going backwards, an object that cannot be keyed).
struct StoreOutcome {
  enum class Code {
    Ok,
    ResourceVersionWentBackwards,  // an event or bookmark older than what the store holds
    InvalidObject,                 // bytes the store could not parse or key
    Internal,
  };
  Code code = Code::Ok;
  std::string message;
  // replace(): objects added, modified or deleted by the list (0 for the first one).
  uint64_t changed_objects = 0;

  bool ok() const { return code == Code::Ok; }
  static StoreOutcome applied() { return {}; }
};

// What the store did with a whole watch line (ReflectorStore::applyEventLine).
struct LineApplied {
  // False: the store changed nothing and the reflector decodes the line itself.
  bool handled = false;
  EventType type = EventType::Added;
  uint64_t resource_version = 0;  // the event's RV, when handled
  StoreOutcome status;             // the outcome of applying it, when handled
};

class ReflectorStore {
 public:
  virtual ~ReflectorStore() = default;

  // Replaces the whole content with `items`, the state at `list_rv`, atomically: readers
  // see either the old or the new set, never a mix.
  virtual StoreOutcome replace(std::vector<RawObject>&& items, uint64_t list_rv) = 0;
  // One ADDED, MODIFIED or DELETED event at `rv` (for DELETED, the RV of the deletion).
  virtual StoreOutcome apply(EventType type, RawObject&& object, uint64_t rv) = 0;
  // The steady state's fast path: parses one ADDED/MODIFIED/DELETED watch line in a
  // single pass and applies it, provided its RV is after `after_rv` (else the answer is
  // ResourceVersionWentBackwards and nothing changes). Any other line (BOOKMARK, ERROR)
  // or one it cannot parse comes back unhandled with nothing changed; the reflector then
  // decodes it and calls apply() or bookmark(). By default nothing is handled.
  virtual LineApplied applyEventLine(std::string_view line, uint64_t after_rv) {
    (void)line;
    (void)after_rv;
    return {};
  }
  // Watch-list initial events (W9) may be parsed as they arrive instead of being held as
  // raw bytes until the end: stageInitialLine() parses one ADDED line into a staged set
  // and returns true, or returns false having staged nothing (the reflector then keeps
  // the decoded object itself). The next replace() applies the staged objects together
  // with its `items`; clearStaged() drops them when an attempt is abandoned. By default
  // nothing is staged.
  virtual bool stageInitialLine(std::string_view line) {
    (void)line;
    return false;
  }
  virtual void clearStaged() {}
  // The upstream has seen everything up to `rv`; no object changed.
  virtual StoreOutcome bookmark(uint64_t rv) = 0;
  // The object of a bookmark the upstream sent in protobuf: the shape of the type's empty
  // message, which the cache's own protobuf bookmarks copy. By default ignored.
  virtual void observeBookmarkObject(std::string_view object) { (void)object; }
  // The RV the store is synced to; 0 before the first replace.
  virtual uint64_t resourceVersion() const = 0;
};

}  // namespace watch
