#pragma once
// Just enough of Go's encoding/json to read and write continue tokens the way the
// apiserver does: the same string escaping on output, and on input the same syntax
// checks with the same error texts ("invalid character 'x' looking for beginning of
// value", "unexpected end of JSON input"), so a broken token is rejected with upstream's
// exact 400 message; and json.Indent, for the Status bodies the apiserver writes with
// json.MarshalIndent. Pure functions; safe from any thread.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cache {

struct GoJsonValue {
  enum class Kind { String, Number, Bool, Null, Object, Array };
  Kind kind = Kind::Null;
  std::string text;  // decoded string, or the number's literal; empty otherwise
};

struct GoJsonDocument {
  GoJsonValue::Kind top_kind = GoJsonValue::Kind::Null;
  // Members of a top-level object in document order (duplicates kept); nested
  // containers are validated but not kept.
  std::vector<std::pair<std::string, GoJsonValue>> members;
};

// Parses `data` as one JSON value. Returns the document or, in `error`, Go's
// SyntaxError text. Nesting deeper than Go's limit (10000) is rejected like Go does.
std::optional<GoJsonDocument> parseGoJson(std::string_view data, std::string& error);

// json.Marshal of a string: quotes plus Go's escaping (HTML-safe: <, >, & as \u003c...;
// control characters; invalid UTF-8 as \ufffd; U+2028/U+2029 escaped).
std::string goJsonString(std::string_view s);

// json.Indent(dst, src, "", "  ") of valid JSON: each member or element on its own line
// indented two spaces per level, `"key": value`, empty objects and arrays kept as {} and
// [], whitespace outside strings dropped, no trailing newline. json.MarshalIndent(v, "",
// "  ") is this applied to json.Marshal(v).
std::string goJsonIndent(std::string_view json);

}  // namespace cache
