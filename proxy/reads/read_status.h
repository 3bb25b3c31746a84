#pragma once
// The Status answers a cached GET/LIST gives instead of data, worded exactly like the
// apiserver's (contract E1, R4-R7, R10, P3, S2, S5).

#include <cstdint>
#include <string_view>

#include "proxy/api_status.h"
#include "watch/api_resource.h"

namespace proxy {

// 404: `pods "nope" not found` / `deployments.apps "nope" not found` (R10).
Status notFoundStatus(const watch::ApiResource& resource, std::string_view name);

// 504 after the bounded wait (R7).
using cache::tooLargeResourceVersionStatus;

}  // namespace proxy
