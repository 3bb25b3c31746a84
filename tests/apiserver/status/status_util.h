#pragma once
// Text helpers shared by the Status builders and the validators: Go's JSON string
// encoding and %q quoting (so messages and bodies match the apiserver byte for byte),
// and apimachinery field errors (pkg/util/validation/field) with the 422 Invalid
// Status built from them (E1, R4).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "tests/apiserver/api_types.h"

namespace testapi {

// Appends `s` as a JSON string the way Go's encoding/json does with HTML escaping on
// (the apiserver's encoder): <, >, & become \u003c, \u003e, \u0026; invalid UTF-8
// becomes \ufffd; U+2028/U+2029 are escaped.
void appendJsonString(std::string& out, std::string_view s);
std::string jsonString(std::string_view s);
// Go's strconv.Quote (what %q prints for a string).
std::string goQuote(std::string_view s);

// strings.TrimSpace (ASCII white space).
std::string_view goTrimSpace(std::string_view s);
// utf8.Valid.
bool validUtf8(std::string_view s);

// Parses `data` into `doc`; on a syntax error returns encoding/json's message for it
// ("invalid character 'x' looking for beginning of value", "unexpected end of JSON input").
std::optional<std::string> parseJsonLikeGo(std::string_view data, rapidjson::Document& doc);

// Go strconv.ParseInt(s, 10, 64) / ParseUint(s, 10, 64). On failure `why` (when given)
// receives "invalid syntax" or "value out of range".
std::optional<int64_t> parseGoInt64(std::string_view s, std::string* why = nullptr);
std::optional<uint64_t> parseGoUint64(std::string_view s, std::string* why = nullptr);

// One apimachinery field.Error. `bad_value` holds the value already rendered as Go
// prints it (%q for strings, %v for numbers); nullopt omits it from the text.
struct FieldError {
  enum class Type { Invalid, NotSupported, Forbidden, Required };
  Type type = Type::Invalid;
  std::string field;
  std::optional<std::string> bad_value;
  std::string detail;

  static FieldError invalid(std::string field, std::string_view value, std::string detail);
  static FieldError forbidden(std::string field, std::string detail);
  static FieldError notSupported(std::string field, std::string_view value, const std::vector<std::string>& supported);

  std::string causeType() const;  // "FieldValueInvalid", ...
  std::string body() const;       // ErrorBody(): "Invalid value: \"x\": detail"
  std::string error() const;      // "<field>: <body>" (a nil path prints "<nil>")
};

// The aggregate text of a field.ErrorList: "e1" or "[e1, e2]" (duplicates dropped).
std::string aggregateText(const std::vector<FieldError>& errors);
// apierrors.NewInvalid: 422, reason Invalid, causes from the field errors, message
// `<Kind>.<group> "<name>" is invalid: <aggregate>`.
ApiError invalid(std::string_view group, std::string_view kind, std::string_view name,
                 const std::vector<FieldError>& errors);
// P7: 410 for a continue token whose snapshot is gone; `fresh_token` (rv -1, same
// start) goes to metadata.continue, or the shorter message when it is empty.
ApiError expiredContinue(std::string fresh_token);

}  // namespace testapi
