#pragma once
// RequestInfo: a Kubernetes API URL split into verb, group/version/resource,
// namespace, name and subresource, the way the apiserver's RequestInfoFactory does.

#include <string>
#include <string_view>

#include "tests/apiserver/http/http_types.h"

namespace testapi {

struct RequestInfo {
  bool is_resource_request = false;
  std::string verb;  // get list watch create update patch delete deletecollection
  std::string api_prefix;  // "api" or "apis"
  std::string group;
  std::string version;
  std::string ns;
  std::string resource;
  std::string name;
  std::string subresource;
  bool watch_prefix = false;  // the deprecated /watch/ path form (W1)
};

// Fills is_resource_request only for paths with a resource segment; discovery paths
// (/api, /apis/apps/v1) leave it false with group/version set.
RequestInfo parseRequestInfo(const HttpRequest& req);

}  // namespace testapi
