#pragma once
// RequestInfo of a method and target, with the query parsed as Request::make parses it.

#include <string_view>

#include "cache/query/query_values.h"
#include "proxy/request_info.h"

inline proxy::RequestInfo parseRequestInfo(std::string_view method, std::string_view target) {
  const size_t qmark = target.find('?');
  const auto query = cache::QueryValues::parse(qmark == std::string_view::npos ? std::string_view{} : target.substr(qmark + 1));
  return proxy::RequestInfo::parse(method, target, query);
}
