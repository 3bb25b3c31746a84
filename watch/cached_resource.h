#pragma once
// CachedResource: one running informer as the serving side sees it: the store to read,
// what the resource is, and the dispatcher that fans its events out to downstream
// watches. The informer manager owns the reflector that writes it.
//
// Holders: a request being served keeps the shared_ptr for as long as it reads; a
// downstream watch keeps it for the watch's whole life. While anything but the manager
// holds it, the informer is "in use" and is never stopped for idleness.
//
// Thread-safe: every method may be called from any thread.

#include <memory>
#include <string>

#include "cache/clock.h"
#include "cache/encoding.h"
#include "cache/thread_safe_store.h"
#include "watch/api_resource.h"

namespace watch {

class WatchDispatcher;
class FreshnessProofs;
class ProbeFlights;

// Shared from itself: work that outlives the request that started it (a freshness probe
// others joined) keeps it alive.
class CachedResource : public std::enable_shared_from_this<CachedResource> {
 public:
  virtual ~CachedResource() = default;

  virtual const ApiResource& resource() const = 0;
  // "" when the informer holds the whole collection; else the one namespace it holds (the
  // per-namespace fallback when a cluster-wide list is forbidden). Such an informer can
  // answer only requests scoped to that namespace.
  virtual const std::string& namespaceScope() const = 0;
  virtual const cache::ThreadSafeStore& store() const = 0;
  // The encoding the store's objects are in; a request is answered only from a cache in
  // the encoding it negotiated.
  virtual cache::Encoding encoding() const { return cache::Encoding::Json; }
  // The first full state reached the store (client-go HasSynced). Before that, requests
  // pass through to the upstream.
  virtual bool hasSynced() const = 0;
  virtual WatchDispatcher& dispatcher() = 0;
  virtual const WatchDispatcher& dispatcher() const = 0;
  // Records downstream interest (resets the idle timer).
  virtual void markUsed() = 0;
  // Freshness beyond the store's RV, and the probes that prove it (watch/freshness.h).
  virtual FreshnessProofs& freshness() const = 0;
  virtual ProbeFlights& probes() const = 0;
  // The clock the store, the dispatcher and the freshness bookkeeping read: deadlines and
  // ages computed against their time points must read it too.
  virtual const cache::Clock& clock() const = 0;
};

}  // namespace watch
