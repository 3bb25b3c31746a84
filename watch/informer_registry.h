#pragma once
// InformerRegistry: the serving side's only question to the informer manager: "is there
// a cache that can answer this request?" Implemented by the InformerManager; tests use a
// static registry.

#include <memory>
#include <string_view>

#include "cache/change_signal.h"
#include "cache/encoding.h"
#include "watch/cached_resource.h"

namespace watch {

class InformerRegistry {
 public:
  virtual ~InformerRegistry() = default;

  // The cache for group/version/resource that can answer a request scoped to
  // `namespace_name` ("" = all namespaces, or a cluster-scoped resource), or null: then
  // the request passes through to the upstream. The result may not have synced yet
  // (check hasSynced()). Never blocks: called on the io threads. May start an informer
  // on demand in the background (the request that triggered it passes through).
  // `encoding`: the cache in that encoding (a protobuf one exists only for built-in types).
  virtual std::shared_ptr<CachedResource> find(std::string_view group, std::string_view version,
                                               std::string_view resource, std::string_view namespace_name,
                                               cache::Encoding encoding = cache::Encoding::Json) = 0;
  // Like find(), but never starts an informer: for writes (read-your-writes waits only
  // for caches that already run; a write alone is no reason to start caching).
  virtual std::shared_ptr<CachedResource> findRunning(std::string_view group, std::string_view version,
                                                      std::string_view resource, std::string_view namespace_name,
                                                      cache::Encoding encoding = cache::Encoding::Json) {
    return find(group, version, resource, namespace_name, encoding);
  }
  // True when the resource can have a protobuf cache: a built-in type (the apiserver
  // serves custom resources in JSON only) that would be cached at all.
  virtual bool cacheableInProtobuf(std::string_view group, std::string_view version, std::string_view resource) {
    (void)group, (void)version, (void)resource;
    return false;
  }
  // True while the informer that would answer such a request is queued or has not synced
  // yet, so the request may wait for it (--cache-start-wait) instead of passing through.
  virtual bool starting(std::string_view group, std::string_view version, std::string_view resource,
                        std::string_view namespace_name, cache::Encoding encoding) {
    (void)group, (void)version, (void)resource, (void)namespace_name, (void)encoding;
    return false;
  }
  // Notified when informers start or stop (a request waiting for a cache that is starting
  // looks again); null when the registry never starts any.
  virtual const cache::ChangeSignal* informersChanged() const { return nullptr; }
  // True when discovery lists group/version/resource (cacheable or not is another
  // question). Metrics label only such resources: a path is the client's to choose.
  virtual bool known(std::string_view group, std::string_view version, std::string_view resource) const {
    (void)group, (void)version, (void)resource;
    return false;
  }
};

}  // namespace watch
