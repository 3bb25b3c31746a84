#pragma once
// The apiserver's error wording, reproduced byte for byte: Go's strconv quoting and
// number-parsing errors, apimachinery's field.Error ("<field>: <Type>: <value>: <detail>")
// and its aggregate ("[e1, e2]"). The selector, resourceVersion and ListOptions parsers
// build their 400/422 texts from these so a client cannot tell the proxy from upstream.
// Everything here is a pure function; safe from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cache {

// A parsed value or the error the apiserver would have produced (by default its text).
// Its surface is a subset of std::expected<T, E>, so it can be swapped for it under C++23.
template <class T, class E = std::string>
class ParseResult {
 public:
  ParseResult(T value) : value_(std::move(value)) {}  // NOLINT: implicit like std::expected
  static ParseResult failure(E error) {
    ParseResult r;
    r.error_ = std::move(error);
    return r;
  }
  bool has_value() const { return value_.has_value(); }
  explicit operator bool() const { return has_value(); }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const { return *value_; }
  const T* operator->() const { return &*value_; }
  // Only meaningful when !has_value().
  const E& error() const { return error_; }

 private:
  ParseResult() = default;
  std::optional<T> value_;
  E error_{};
};

// One UTF-8 sequence at s[i]: {rune, width}. Invalid or truncated input yields {-1, 1},
// where Go reports utf8.RuneError with width 1.
std::pair<int32_t, size_t> decodeUtf8(std::string_view s, size_t i);
// Appends the UTF-8 encoding of `rune`, or of U+FFFD for -1 (as Go's WriteRune does).
void appendUtf8(std::string& out, int32_t rune);

// strings.EqualFold(s, lower) for an ASCII-lowercase `lower`: ASCII case-insensitive,
// plus the two non-ASCII runes that Unicode folds onto ASCII letters ('ſ' U+017F onto
// 's', Kelvin sign U+212A onto 'k'), so "falſe" is false exactly as in Go.
bool goEqualFold(std::string_view s, std::string_view lower);

// strconv.Quote: the %q rendering used inside every apiserver validation message.
std::string goQuote(std::string_view s);

// strconv.ParseInt(s, 10, 64) / strconv.ParseUint(s, 10, 64). On failure `error` (if given)
// receives Go's exact text, e.g. `strconv.ParseInt: parsing "abc": invalid syntax`.
std::optional<int64_t> parseGoInt64(std::string_view s, std::string* error = nullptr);
std::optional<uint64_t> parseGoUint64(std::string_view s, std::string* error = nullptr);

// The subset of apimachinery's field.ErrorType the read path can produce.
enum class FieldErrorType { Invalid, Forbidden, NotSupported };

// One apimachinery field.Error. `field` is the rendered path ("values[0][app]"), or
// "<nil>" for the nil path the label parser uses when validating keys.
struct FieldError {
  FieldErrorType type = FieldErrorType::Invalid;
  std::string field;
  std::string bad_value;  // already rendered as Go prints it (quoted for strings)
  std::string detail;

  // Invalid value with a string bad value, quoted like Go's %q.
  static FieldError invalid(std::string field, std::string_view value, std::string detail);
  static FieldError forbidden(std::string field, std::string detail);
  // NotSupported: `Unsupported value: "v": supported values: "a", "b"`.
  static FieldError notSupported(std::string field, std::string_view value,
                                 const std::vector<std::string_view>& supported);

  // metav1.CauseType of this error ("FieldValueInvalid", "FieldValueForbidden", ...).
  std::string_view causeType() const;
  // ErrorBody(): the text without the field, also used as a Status cause message.
  std::string body() const;
  // Error(): "<field>: <body>".
  std::string message() const;
};

// utilerrors.NewAggregate(...).Error(): duplicates dropped, one message as is, several
// as "[m1, m2]". Empty input gives "".
std::string aggregateMessages(const std::vector<std::string>& messages);
std::string aggregateErrors(const std::vector<FieldError>& errors);

}  // namespace cache
