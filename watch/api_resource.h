#pragma once
// ApiResource: what discovery says about one resource of one group version, the facts
// the cache needs to store it and to answer for it like the apiserver (kind for list
// envelopes, namespaced-ness for keys and paths, verbs for "can it be cached").
// Built-ins and custom resources alike come from the upstream's discovery, never from a
// table of built-ins (CRDs must work).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cache/selectors/selectable_fields.h"

namespace watch {

struct ApiResource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, "pods"
  std::string kind;      // "Pod"
  std::string list_kind; // "PodList"
  bool namespaced = true;
  std::vector<std::string> verbs;
  // A custom resource (served by the apiextensions server): its list items carry
  // kind/apiVersion (L1) and its field selectors come from the CRD (S6).
  bool custom = false;
  // The fields a field selector may name for this resource (S4-S6); never null once the
  // resource is cached.
  std::shared_ptr<const cache::FieldSpec> field_spec;

  // "v1" or "apps/v1".
  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  // kube-apiserver keeps no watch cache of events (its default --watch-cache-sizes sets
  // them to 0): their lists are etcd's, which honour a limit at RV=0 and write continue
  // keys relative to the prefix with its slash ("ns/name\u0000", not "/ns/name\u0000").
  bool upstreamWatchCached() const {
    return !(resource == "events" && (group.empty() || group == "events.k8s.io"));
  }
  // "pods" or "deployments.apps": the spelling of --cache and log lines.
  std::string displayName() const { return group.empty() ? resource : resource + "." + group; }
};

// The collection's path on the upstream: "/api/v1/namespaces/<namespace>/pods",
// "/apis/apps/v1/deployments" ("" namespace: all), escaped as Go's URL.EscapedPath escapes a
// path client-go sends (issue 36, finding 4). The one builder of such paths, for informers
// and freshness probes alike.
std::string collectionPath(std::string_view group, std::string_view version, std::string_view resource,
                           std::string_view namespace_name);

}  // namespace watch
