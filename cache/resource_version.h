#pragma once
// resourceVersion as the apiserver's versioner reads it (contract R1, R6): the decimal
// etcd revision as a uint64. On the wire RVs stay opaque strings that are passed
// through byte for byte; this type is for comparing and for validating requests.
// "" (unset) and "0" (any) are request-level special cases handled by ListOptions.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cache {

class ResourceVersion {
 public:
  constexpr ResourceVersion() = default;
  constexpr explicit ResourceVersion(uint64_t value) : value_(value) {}

  // strconv.ParseUint(s, 10, 64): decimal digits only, no sign, no spaces; "" is
  // invalid (callers treat "" as unset before calling this).
  static std::optional<ResourceVersion> parse(std::string_view s);
  // Go's error for an unparsable `s`, e.g. `strconv.ParseUint: parsing "abc": invalid syntax`;
  // empty if `s` parses.
  static std::string parseError(std::string_view s);
  // The versioner's error: `resourceVersion: Invalid value: "abc": strconv.ParseUint: ...`.
  // Upstream returns it bare (500) for GET/WATCH served by the cache (R6 quirk).
  static std::string invalidMessage(std::string_view s);
  // The 400 BadRequest message for LIST: `invalid resource version: ` + invalidMessage(s).
  static std::string listBadRequestMessage(std::string_view s);

  constexpr uint64_t value() const { return value_; }
  constexpr bool isZero() const { return value_ == 0; }
  std::string toString() const { return std::to_string(value_); }

  constexpr auto operator<=>(const ResourceVersion&) const = default;

 private:
  uint64_t value_ = 0;
};

}  // namespace cache
