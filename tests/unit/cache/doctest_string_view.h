#pragma once
// Lets CHECK print std::string_view operands (doctest 2.4.9 has no StringMaker for it).

#include <string_view>

#include <doctest/doctest.h>

namespace doctest {
template <>
struct StringMaker<std::string_view> {
  static String convert(std::string_view value) { return String(value.data(), static_cast<unsigned>(value.size())); }
};
}  // namespace doctest
