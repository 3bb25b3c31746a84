#include "config/duration.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace config {

namespace {

struct Unit {
  std::string_view name;
  int64_t nanoseconds;
};

// The unit names Go accepts, including both spellings of the micro sign.
constexpr Unit kUnits[] = {
    {"ns", 1},
    {"us", 1'000},
    {"\xC2\xB5s", 1'000},  // U+00B5 MICRO SIGN
    {"\xCE\xBCs", 1'000},  // U+03BC GREEK SMALL LETTER MU
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
};

std::string inQuotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

bool isDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::chrono::nanoseconds parseDuration(std::string_view text) {
  const std::string_view original = text;
  const auto invalid = [&] { return std::invalid_argument("invalid duration " + inQuotes(original)); };

  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text == "0") return std::chrono::nanoseconds{0};
  if (text.empty()) throw invalid();

  // Integer arithmetic, as in Go: floating point would turn "0.1s" into
  // 99999999ns. 128 bits hold any int64 count times the largest unit.
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  __int128 total = 0;
  while (!text.empty()) {
    size_t i = 0;
    __int128 whole = 0;
    while (i < text.size() && isDigit(text[i])) {
      whole = whole * 10 + (text[i++] - '0');
      if (whole > kMax) throw invalid();
    }
    const bool has_whole = i > 0;
    // Digits past 18 are below a nanosecond for every unit; they are dropped.
    int64_t fraction = 0;
    int64_t scale = 1;
    bool has_fraction = false;
    if (i < text.size() && text[i] == '.') {
      ++i;
      while (i < text.size() && isDigit(text[i])) {
        if (scale < 1'000'000'000'000'000'000) {
          fraction = fraction * 10 + (text[i] - '0');
          scale *= 10;
        }
        ++i;
        has_fraction = true;
      }
    }
    if (!has_whole && !has_fraction) throw invalid();

    size_t unit_end = i;
    while (unit_end < text.size() && text[unit_end] != '.' && !isDigit(text[unit_end])) ++unit_end;
    const std::string_view unit_name = text.substr(i, unit_end - i);
    if (unit_name.empty()) throw std::invalid_argument("missing unit in duration " + inQuotes(original));
    const Unit* unit = nullptr;
    for (const Unit& candidate : kUnits) {
      if (candidate.name == unit_name) unit = &candidate;
    }
    if (unit == nullptr) {
      throw std::invalid_argument("unknown unit " + inQuotes(unit_name) + " in duration " + inQuotes(original));
    }
    total += whole * unit->nanoseconds + static_cast<__int128>(fraction) * unit->nanoseconds / scale;
    if (total > kMax) throw invalid();
    text.remove_prefix(unit_end);
  }
  const auto count = static_cast<int64_t>(total);
  return std::chrono::nanoseconds{negative ? -count : count};
}

}  // namespace config
