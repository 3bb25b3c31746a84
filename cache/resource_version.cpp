#include "cache/resource_version.h"

#include "cache/selectors/field_error.h"

namespace cache {

std::optional<ResourceVersion> ResourceVersion::parse(std::string_view s) {
  if (auto value = parseGoUint64(s)) return ResourceVersion(*value);
  return std::nullopt;
}

std::string ResourceVersion::parseError(std::string_view s) {
  std::string error;
  parseGoUint64(s, &error);
  return error;
}

std::string ResourceVersion::invalidMessage(std::string_view s) {
  return FieldError::invalid("resourceVersion", s, parseError(s)).message();
}

std::string ResourceVersion::listBadRequestMessage(std::string_view s) {
  return "invalid resource version: " + invalidMessage(s);
}

}  // namespace cache
