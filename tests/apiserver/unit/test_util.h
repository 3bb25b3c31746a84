#pragma once
// Small accessors for Result<T> in tests.
#include <doctest/doctest.h>

#include <variant>

#include "tests/apiserver/semantics.h"

namespace testapi::test {

template <typename T>
const ApiError& errorOf(const Result<T>& r) {
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

template <typename T>
const T& valueOf(const Result<T>& r) {
  if (auto* e = std::get_if<ApiError>(&r)) FAIL_CHECK("unexpected error: " << e->toJson());
  REQUIRE(std::holds_alternative<T>(r));
  return std::get<T>(r);
}

inline ResourceDef coreDef(std::string resource, std::string kind, bool namespaced = true) {
  ResourceDef d;
  d.version = "v1";
  d.resource = std::move(resource);
  d.kind = kind;
  d.list_kind = kind + "List";
  d.namespaced = namespaced;
  return d;
}

inline ResourceDef groupDef(std::string group, std::string resource, std::string kind, bool namespaced = true) {
  ResourceDef d = coreDef(std::move(resource), std::move(kind), namespaced);
  d.group = std::move(group);
  return d;
}

}  // namespace testapi::test
