#include "watch/api_resource.h"

#include "cache/query/query_values.h"

namespace watch {

std::string collectionPath(std::string_view group, std::string_view version, std::string_view resource,
                           std::string_view namespace_name) {
  std::string path = group.empty() ? "/api/" : "/apis/";
  if (!group.empty()) path.append(group).append(1, '/');
  path.append(version);
  if (!namespace_name.empty()) path.append("/namespaces/").append(namespace_name);
  path.append(1, '/').append(resource);
  // The names may come from a request, decoded: one with '/' would be read as more segments
  // by the upstream as by the proxy, one with CR LF or a space would break the request line.
  return cache::escapePath(path);
}

}  // namespace watch
