#include "proxy/reads/read_status.h"

#include <string>

#include "cache/selectors/field_error.h"

namespace proxy {

Status notFoundStatus(const watch::ApiResource& resource, std::string_view name) {
  Status status;
  status.reason = Reason::NotFound;
  const std::string qualified = resource.group.empty() ? resource.resource : resource.resource + "." + resource.group;
  // errors.NewNotFound: "%s %q not found".
  status.message = qualified + " " + cache::goQuote(name) + " not found";
  status.details_name = std::string(name);
  status.details_group = resource.group;
  status.details_kind = resource.resource;
  return status;
}

}  // namespace proxy
