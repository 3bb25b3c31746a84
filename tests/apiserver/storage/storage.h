#pragma once
// Storage: the object store of kube-test-apiserver, modelled on etcd plus the
// apiserver watch cache.
//
// - One global resourceVersion counter (etcd revision): every committed write gets
//   the next RV, whatever its resource (R1).
// - Per resource, a bytewise-ordered map key -> current StoredObject (P9).
// - A global EventHistory ring of the last `history_size` events, each with the
//   previous object (W10). Every event with rv > compactedRv() is retained, so the
//   state at any RV >= compactedRv() can be rebuilt by rolling back from the current
//   state (Exact reads, continue tokens, R8/P7).
// - Watch queues: a watch registers atomically with its starting point, so no event
//   falls between its initial state and its stream.
//
// Thread safety: every public method is safe to call concurrently. Lock order:
// Storage::mu_ before WatchQueue::mu_; nothing else is called under mu_.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/apiserver/storage/object_codec.h"
#include "tests/apiserver/storage/resource_catalog.h"
#include "tests/apiserver/semantics.h"

namespace testapi {

enum class EventType { Added, Modified, Deleted };
const char* eventTypeName(EventType t);

struct Event {
  EventType type;
  uint64_t rv;
  const ServedResource* resource;
  StoredObjectPtr object;  // new state; for Deleted the last state at the deletion RV (W3)
  StoredObjectPtr prev;    // state before this event; null for Added
};
using EventPtr = std::shared_ptr<const Event>;

// One watch stream's bounded input. The storage pushes, the stream's thread pops.
class WatchQueue {
 public:
  explicit WatchQueue(size_t capacity) : capacity_(capacity) {}
  WatchQueue(const WatchQueue&) = delete;
  WatchQueue& operator=(const WatchQueue&) = delete;

  // Drops the event and closes the queue when it is full: the client is too slow and
  // its stream ends silently (W6); it resumes from its last RV.
  void push(EventPtr ev);
  // Waits until an event is available, the queue is closed or `deadline` passes.
  // Returns null on close/timeout; closed() tells which.
  EventPtr pop(std::chrono::steady_clock::time_point deadline);
  void close();
  // Closes the queue as a lost connection ends a stream (a restart, restart()): the
  // stream is cut, without its last chunk or close frame.
  void cut();
  bool wasCut() const;
  bool closed() const;
  bool empty() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventPtr> events_;  // size() <= capacity_
  size_t capacity_;
  bool closed_ = false;
  bool cut_ = false;
};
using WatchQueuePtr = std::shared_ptr<WatchQueue>;

struct StorageOptions {
  size_t history_size = 10000;  // events retained for watch resumption and Exact reads
  size_t watch_queue_capacity = 0;  // 0: history_size + 1000
};

class Storage {
 public:
  explicit Storage(const ResourceCatalog& catalog, StorageOptions opts = {});
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  uint64_t currentRv() const;
  // Events with rv > compactedRv() are all retained.
  uint64_t compactedRv() const;
  // The oldest RV a watch can resume from (W5): the later of the compaction and the last
  // restart(). Exact reads still reach back to compactedRv(), as they go to etcd.
  uint64_t watchWindowStartRv() const;
  // Blocks until currentRv() >= rv or the deadline passes (R7).
  bool waitForRv(uint64_t rv, std::chrono::steady_clock::time_point deadline) const;

  StoredObjectPtr get(const ServedResource& res, std::string_view ns, std::string_view name) const;

  struct Snapshot {
    uint64_t rv = 0;
    std::vector<StoredObjectPtr> items;  // storage-key order
  };
  // Objects of `res` in namespace `ns` ("" = all) at the current RV, or at `at_rv`
  // when given: nullopt when at_rv < compactedRv() (too old) or > currentRv().
  std::optional<Snapshot> list(const ServedResource& res, std::string_view ns,
                               std::optional<uint64_t> at_rv = std::nullopt) const;

  // Atomic read-modify-write of one object. `fn` sees the current object (or null)
  // and the RV a commit will get, and returns what to do.
  struct Mutation {
    enum class Action { Put, Remove, None } action = Action::None;
    StoredObjectPtr object;  // for Put: the new state (rv == next rv); for None: the answer
  };
  using MutateFn = std::function<Result<Mutation>(const StoredObjectPtr& current, uint64_t next_rv)>;
  // Returns the committed object (for Remove: the last state at the deletion RV).
  Result<StoredObjectPtr> mutate(const ServedResource& res, std::string_view ns, std::string_view name,
                                 const MutateFn& fn);
  // Replaces an object without an event and without its RV appearing in the history
  // (drift tests): the global RV still advances, watchers see nothing.
  bool silentUpdate(const ServedResource& res, std::string_view ns, std::string_view name,
                    const std::function<StoredObjectPtr(const StoredObject&, uint64_t rv)>& fn);

  // ---- watch ----
  struct WatchStart {
    WatchQueuePtr queue;
    std::vector<StoredObjectPtr> initial;  // synthetic ADDED state (key order), if requested
    uint64_t start_rv = 0;                  // RV the stream starts after
  };
  // initial_state: stream the current state first (W4/W9); otherwise replay the
  // retained events after from_rv. nullopt when from_rv is too old (W5).
  std::optional<WatchStart> watch(const ServedResource& res, std::string_view ns, bool initial_state,
                                  uint64_t from_rv);
  void unwatch(const ServedResource& res, const WatchQueuePtr& q);
  // The RV of `res`'s watch cache if `q` has nothing pending: a bookmark at it never
  // overtakes an undelivered event (pushes happen under the same lock), W7/W11.
  std::optional<uint64_t> idleRv(const ServedResource& res, const WatchQueue& q) const;
  // A consistent read of `res` (LIST or watch with RV unset): like the apiserver's progress
  // request to etcd, it brings `res`'s watch cache to the current revision.
  void progress(const ServedResource& res);

  // ---- control ----
  void compact();          // drops the whole history now
  size_t dropWatches();    // closes every open watch queue
  // A kube-apiserver restart as its watch cache sees it: every open watch queue is cut
  // (W6: the process exits under its streams), the revision moves one past the last
  // (the new process's own writes), and the rebuilt caches list at it, which is
  // returned: watches resume only from it on (their "too old resource version: N (M)"
  // names it as M), so not from the last RV any client saw; bookmarks of idle
  // resources move to it. The history stays for Exact reads.
  uint64_t restart();
  std::map<std::string, size_t> openWatchCounts() const;  // by resource
  size_t objectCount(const ServedResource& res) const;

 private:
  struct ResourceState {
    std::map<std::string, StoredObjectPtr> objects;  // bytewise key order (P9)
    std::set<WatchQueuePtr> watchers;
    // The RV kube-apiserver's watch cache of this resource is at: the resource's own last
    // event, or the revision a consistent read brought it to (its etcd progress request).
    // Bookmarks carry this, not the global RV: an idle resource's bookmarks stand still
    // while other resources are written, as the real apiserver's do.
    uint64_t cache_rv = 0;
  };
  ResourceState& stateLocked(const ServedResource& res);
  const ResourceState* stateLocked(const ServedResource& res) const;
  void appendEventLocked(EventPtr ev);

  const ResourceCatalog& catalog_;
  StorageOptions opts_;
  mutable std::mutex mu_;
  mutable std::condition_variable rv_cv_;  // notified whenever rv_ advances
  uint64_t rv_ = 1;
  uint64_t compacted_rv_ = 1;  // invariant: every event with rv > compacted_rv_ is in history_
  uint64_t restarted_rv_ = 0;  // the revision the watch caches were last rebuilt at (restart())
  std::deque<EventPtr> history_;  // increasing rv; size() <= opts_.history_size
  std::map<const ServedResource*, ResourceState> states_;
};

}  // namespace testapi
