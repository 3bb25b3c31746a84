#include "cache/selectors/field_error.h"

#include <limits>

namespace cache {

namespace {

constexpr char kLowerHex[] = "0123456789abcdef";

}  // namespace

std::pair<int32_t, size_t> decodeUtf8(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  size_t width = 0;
  int32_t rune = 0;
  int32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    width = 2, rune = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    width = 3, rune = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    width = 4, rune = b0 & 0x07, min = 0x10000;
  } else {
    return {-1, 1};
  }
  if (i + width > s.size()) return {-1, 1};
  for (size_t k = 1; k < width; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {-1, 1};
    rune = (rune << 6) | (b & 0x3F);
  }
  if (rune < min || rune > 0x10FFFF || (rune >= 0xD800 && rune <= 0xDFFF)) return {-1, 1};
  return {rune, width};
}

void appendUtf8(std::string& out, int32_t rune) {
  auto r = static_cast<uint32_t>(rune < 0 ? 0xFFFD : rune);
  if (r < 0x80) {
    out.push_back(static_cast<char>(r));
  } else if (r < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (r >> 6)));
    out.push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else if (r < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (r >> 12)));
    out.push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (r >> 18)));
    out.push_back(static_cast<char>(0x80 | ((r >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (r & 0x3F)));
  }
}

namespace {

// Approximates Go's strconv.IsPrint for non-ASCII runes: the C1 controls, the Latin-1
// spaces/format characters, Unicode separators and format characters, private use and
// noncharacters are not printable. Unassigned code points are treated as printable
// (Go's tables know better; labels and field values with those are not realistic).
bool isPrintRune(int32_t r) {
  if (r < 0x20 || r == 0x7F) return false;
  if (r < 0x7F) return true;
  if (r <= 0xA0 || r == 0xAD) return false;
  if ((r >= 0x2000 && r <= 0x200F) || (r >= 0x2028 && r <= 0x202F) || (r >= 0x205F && r <= 0x206F)) return false;
  if (r == 0x1680 || r == 0x3000 || r == 0xFEFF || (r >= 0xFFF9 && r <= 0xFFFB)) return false;
  if ((r >= 0xE000 && r <= 0xF8FF) || r >= 0xF0000) return false;
  if ((r & 0xFFFE) == 0xFFFE || (r >= 0xFDD0 && r <= 0xFDEF)) return false;
  return true;
}

void appendHex(std::string& out, uint32_t value, int digits) {
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) out.push_back(kLowerHex[(value >> shift) & 0xF]);
}

std::string numError(std::string_view func, std::string_view num, std::string_view err) {
  std::string out = "strconv.";
  out.append(func).append(": parsing ").append(goQuote(num)).append(": ").append(err);
  return out;
}

// strconv.ParseUint(s, 10, 64) without the function name: nullopt plus "invalid syntax"
// or "value out of range". Scans left to right and stops at the first problem, as Go does.
std::optional<uint64_t> parseDecimal(std::string_view s, std::string_view* failure) {
  if (s.empty()) {
    *failure = "invalid syntax";
    return std::nullopt;
  }
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') {
      *failure = "invalid syntax";
      return std::nullopt;
    }
    const auto d = static_cast<uint64_t>(c - '0');
    if (n > (kMax - d) / 10) {
      *failure = "value out of range";
      return std::nullopt;
    }
    n = n * 10 + d;
  }
  return n;
}

}  // namespace

bool goEqualFold(std::string_view s, std::string_view lower) {
  size_t i = 0;
  for (char want : lower) {
    if (i >= s.size()) return false;
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == want) {
      ++i;
    } else if (want == 's' && s.substr(i, 2) == "\xC5\xBF") {
      i += 2;
    } else if (want == 'k' && s.substr(i, 3) == "\xE2\x84\xAA") {
      i += 3;
    } else {
      return false;
    }
  }
  return i == s.size();
}

std::string goQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    auto [rune, width] = decodeUtf8(s, i);
    if (rune < 0) {
      out.append("\\x");
      appendHex(out, static_cast<unsigned char>(s[i]), 2);
      i += 1;
      continue;
    }
    if (rune == '"' || rune == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(rune));
    } else if (isPrintRune(rune)) {
      out.append(s.substr(i, width));
    } else {
      switch (rune) {
        case '\a': out.append("\\a"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        case '\v': out.append("\\v"); break;
        default:
          if (rune < 0x20 || rune == 0x7F) {
            out.append("\\x");
            appendHex(out, static_cast<uint32_t>(rune), 2);
          } else if (rune < 0x10000) {
            out.append("\\u");
            appendHex(out, static_cast<uint32_t>(rune), 4);
          } else {
            out.append("\\U");
            appendHex(out, static_cast<uint32_t>(rune), 8);
          }
      }
    }
    i += width;
  }
  out.push_back('"');
  return out;
}

std::optional<uint64_t> parseGoUint64(std::string_view s, std::string* error) {
  std::string_view failure;
  auto n = parseDecimal(s, &failure);
  if (!n && error) *error = numError("ParseUint", s, failure);
  return n;
}

std::optional<int64_t> parseGoInt64(std::string_view s, std::string* error) {
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  std::string_view failure;
  auto n = parseDecimal(digits, &failure);
  constexpr uint64_t kCutoff = uint64_t{1} << 63;
  if (n && (negative ? *n > kCutoff : *n >= kCutoff)) {
    failure = "value out of range";
    n.reset();
  }
  if (!n) {
    if (error) *error = numError("ParseInt", s, failure);
    return std::nullopt;
  }
  if (negative) return *n == kCutoff ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(*n);
  return static_cast<int64_t>(*n);
}

FieldError FieldError::invalid(std::string field, std::string_view value, std::string detail) {
  return FieldError{FieldErrorType::Invalid, std::move(field), goQuote(value), std::move(detail)};
}

FieldError FieldError::forbidden(std::string field, std::string detail) {
  return FieldError{FieldErrorType::Forbidden, std::move(field), {}, std::move(detail)};
}

FieldError FieldError::notSupported(std::string field, std::string_view value,
                                    const std::vector<std::string_view>& supported) {
  std::string detail = "supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) detail.append(", ");
    detail.append(goQuote(supported[i]));
  }
  return FieldError{FieldErrorType::NotSupported, std::move(field), goQuote(value), std::move(detail)};
}

std::string_view FieldError::causeType() const {
  switch (type) {
    case FieldErrorType::Invalid: return "FieldValueInvalid";
    case FieldErrorType::Forbidden: return "FieldValueForbidden";
    case FieldErrorType::NotSupported: return "FieldValueNotSupported";
  }
  return "FieldValueInvalid";
}

std::string FieldError::body() const {
  std::string out;
  switch (type) {
    case FieldErrorType::Invalid: out = "Invalid value: " + bad_value; break;
    // Forbidden never prints its value (field.ErrorBody).
    case FieldErrorType::Forbidden: out = "Forbidden"; break;
    case FieldErrorType::NotSupported: out = "Unsupported value: " + bad_value; break;
  }
  if (!detail.empty()) out.append(": ").append(detail);
  return out;
}

std::string FieldError::message() const { return field + ": " + body(); }

std::string aggregateMessages(const std::vector<std::string>& messages) {
  std::vector<const std::string*> unique;
  for (const auto& m : messages) {
    bool seen = false;
    for (const auto* u : unique) seen = seen || *u == m;
    if (!seen) unique.push_back(&m);
  }
  if (unique.empty()) return {};
  if (unique.size() == 1) return *unique[0];
  std::string out = "[";
  for (size_t i = 0; i < unique.size(); ++i) {
    if (i > 0) out.append(", ");
    out.append(*unique[i]);
  }
  out.push_back(']');
  return out;
}

std::string aggregateErrors(const std::vector<FieldError>& errors) {
  std::vector<std::string> messages;
  messages.reserve(errors.size());
  for (const auto& e : errors) messages.push_back(e.message());
  return aggregateMessages(messages);
}

}  // namespace cache
