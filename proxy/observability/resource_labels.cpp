#include "proxy/observability/resource_labels.h"

#include <algorithm>

#include "watch/informer_registry.h"

namespace proxy {

std::string_view ResourceLabels::labelOf(const RequestInfo& info, const watch::InformerRegistry* registry) {
  if (info.resource.empty()) return {};
  if (registry && registry->known(info.api_group, info.api_version, info.resource)) return info.resource;
  const bool resource_like = info.resource.size() <= 63 && std::all_of(info.resource.begin(), info.resource.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
  if (!resource_like) return "other";
  std::lock_guard lock(mu_);
  if (unknown_.count(info.resource) > 0) return info.resource;
  if (unknown_.size() >= kMaxUnknown) return "other";
  unknown_.insert(info.resource);
  return info.resource;
}

}  // namespace proxy
