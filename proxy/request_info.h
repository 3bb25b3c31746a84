#pragma once
// RequestInfo: what a request means in Kubernetes terms, derived from method, path
// and query exactly as kube-apiserver's RequestInfoFactory does, so that metrics
// labels (and later the cache router) agree with the apiserver's own audit view.
//
// Grammar (resource requests; everything else is a non-resource request such as
// /healthz, /version, /api, /apis/apps/v1, /openapi/v3):
//   /api/{version}[/watch]/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]
//   /apis/{group}/{version}[/watch]/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]
// The deprecated /watch/ prefix forces verb "watch". A GET without a name is
// "list", or "watch" when the watch query parameter is true (contract E4);
// a DELETE without a name is "deletecollection". A fieldSelector
// metadata.name=<n> on a list/watch fills `name` like the apiserver does.

#include <string>
#include <string_view>
#include <vector>

#include "cache/query/query_values.h"

namespace proxy {

struct RequestInfo {
  bool is_resource_request = false;
  std::string path;         // the request path, without the query
  // Resource requests: get, list, watch, create, update, patch, delete,
  // deletecollection ("" for other methods). Non-resource requests: the
  // lower-cased method ("get", "post", ...).
  std::string verb;
  // The deprecated /watch/ path prefix: a watch whatever ?watch says (W1).
  bool watch_prefix = false;
  std::string api_prefix;   // "api" or "apis"
  std::string api_group;    // "" for the core group
  std::string api_version;
  std::string namespace_;   // "" for cluster-scoped requests
  std::string resource;     // plural, e.g. "pods"
  std::string subresource;  // e.g. "status", "log", "exec"
  std::string name;
  std::vector<std::string> parts;  // path segments starting at the resource
  // The first fieldSelector and labelSelector values of a list, watch or
  // deletecollection not named by a /watch/ path prefix: what the apiserver authorizes
  // with (RequestInfo.FieldSelector and LabelSelector, AuthorizeWithSelectors).
  std::string field_selector;
  std::string label_selector;

  // Parses `target` (path plus optional "?query", whose values `query` holds). Never
  // fails: a path it cannot interpret as a resource is a non-resource request.
  static RequestInfo parse(std::string_view method, std::string_view target, const cache::QueryValues& query);
};

// apimachinery path.IsValidPathSegmentName: a name usable as one path segment (not "."
// or "..", no '/' or '%'); the registry refuses any other name with 400 before a lookup.
bool isValidPathSegmentName(std::string_view name);

}  // namespace proxy
