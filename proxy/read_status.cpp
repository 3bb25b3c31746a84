#include "proxy/read_status.h"

#include <string>

#include <fmt/format.h>

namespace proxy {

ApiStatus listOptionsStatus(const cache::ListOptionsError& error) {
  ApiStatus status;
  if (error.reason == "BadRequest") {
    status.reason = Reason::BadRequest;
  } else if (error.reason == "Invalid") {
    status.reason = Reason::Invalid;
  } else {
    status.reason = Reason::Internal;  // the bare 500 of R6
  }
  status.message = error.message;
  status.details_group = error.details_group;
  status.details_kind = error.details_kind;
  for (const cache::StatusCause& cause : error.causes) status.causes.push_back({cause.type, cause.message, cause.field});
  return status;
}

ApiStatus notFoundStatus(const watch::ApiResource& resource, std::string_view name) {
  ApiStatus status;
  status.reason = Reason::NotFound;
  const std::string qualified = resource.group.empty() ? resource.resource : resource.resource + "." + resource.group;
  status.message = fmt::format(R"({} "{}" not found)", qualified, name);
  status.details_name = std::string(name);
  status.details_group = resource.group;
  status.details_kind = resource.resource;
  return status;
}

ApiStatus tooLargeResourceVersionStatus(uint64_t requested, uint64_t current) {
  ApiStatus status;
  status.reason = Reason::Timeout;
  status.message = fmt::format("Timeout: Too large resource version: {}, current: {}", requested, current);
  status.causes.push_back({"ResourceVersionTooLarge", "Too large resource version", ""});
  status.retry_after_seconds = 1;
  return status;
}

}  // namespace proxy
