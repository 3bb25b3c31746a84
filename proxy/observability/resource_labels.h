#pragma once
// ResourceLabels: the resource label of a request's metrics, bounded. The path is the
// client's to choose (issue 16, finding 2), so a label is a resource discovery lists, or
// one of the first kMaxUnknown distinct resource-like names, else "other". Thread-safe.

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "proxy/request_info.h"

namespace watch {
class InformerRegistry;
}

namespace proxy {

class ResourceLabels {
 public:
  // Names discovery does not list (or before it answered) beyond this many become "other".
  static constexpr size_t kMaxUnknown = 128;

  // The label for `info`: "" for a non-resource request. `registry` may be null (nothing
  // is known from discovery). The view lives as long as `info` or this object.
  std::string_view labelOf(const RequestInfo& info, const watch::InformerRegistry* registry);

 private:
  std::mutex mu_;
  std::unordered_set<std::string> unknown_;  // guarded by mu_
};

}  // namespace proxy
