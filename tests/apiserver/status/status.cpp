// metav1.Status rendering (E1), the Status builders of E2/R7/R8/W5/R10/X2/N1, and the
// Go text conventions every message in this folder relies on.
#include "tests/apiserver/semantics.h"
#include "tests/apiserver/status/status_util.h"

#include <cstdint>
#include <set>

namespace testapi {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// Decodes one UTF-8 sequence at s[i]; returns its length, or 0 when invalid
// (Go then writes U+FFFD for that single byte).
size_t utf8SequenceLength(std::string_view s, size_t i, uint32_t& rune) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2, rune = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3, rune = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4, rune = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    rune = (rune << 6) | (b & 0x3F);
  }
  if (rune < min || rune > 0x10FFFF || (rune >= 0xD800 && rune <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string_view goTrimSpace(std::string_view s) {
  const char* ws = " \t\n\r\v\f";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t rune = 0;
    const size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8SequenceLength(s, i, rune);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

namespace {

void appendUnicodeEscape(std::string& out, uint32_t code) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(code >> shift) & 0xF];
}

// strconv.IsPrint for the non-ASCII runes a request can plausibly carry: the C1
// controls, the space and line/paragraph separators other than ' ' (Zs, Zl, Zp), and the
// common format characters (Cf) and private-use runes are not printable, so %q escapes
// them. Unassigned code points (also escaped by Go) are left out of this table.
bool isGoPrintable(uint32_t rune) {
  static constexpr std::pair<uint32_t, uint32_t> kNotPrintable[] = {
      {0x80, 0xA0},     {0xAD, 0xAD},     {0x600, 0x605},   {0x61C, 0x61C},   {0x6DD, 0x6DD},
      {0x70F, 0x70F},   {0x1680, 0x1680}, {0x180E, 0x180E}, {0x2000, 0x200F}, {0x2028, 0x202F},
      {0x205F, 0x2064}, {0x2066, 0x206F}, {0x3000, 0x3000}, {0xD800, 0xF8FF}, {0xFEFF, 0xFEFF},
      {0xFFF9, 0xFFFB}, {0xFFFE, 0xFFFF},
  };
  for (const auto& [lo, hi] : kNotPrintable) {
    if (rune >= lo && rune <= hi) return false;
  }
  return true;
}

std::string typeText(FieldError::Type t) {
  switch (t) {
    case FieldError::Type::Invalid: return "Invalid value";
    case FieldError::Type::NotSupported: return "Unsupported value";
    case FieldError::Type::Forbidden: return "Forbidden";
    case FieldError::Type::Required: return "Required value";
  }
  return "";
}

void appendMember(std::string& out, bool& first, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  if (!first) out += ',';
  first = false;
  appendJsonString(out, key);
  out += ':';
  appendJsonString(out, value);
}

std::string detailsJson(const ApiError& e) {
  std::string out;
  bool first = true;
  appendMember(out, first, "name", e.name);
  appendMember(out, first, "group", e.group);
  appendMember(out, first, "kind", e.kind);
  if (!e.causes.empty()) {
    if (!first) out += ',';
    first = false;
    out += "\"causes\":[";
    for (size_t i = 0; i < e.causes.size(); ++i) {
      if (i) out += ',';
      out += '{';
      bool cause_first = true;
      appendMember(out, cause_first, "reason", e.causes[i].reason);
      appendMember(out, cause_first, "message", e.causes[i].message);
      appendMember(out, cause_first, "field", e.causes[i].field);
      out += '}';
    }
    out += ']';
  }
  if (e.retry_after_seconds != 0) {
    if (!first) out += ',';
    first = false;
    out += "\"retryAfterSeconds\":" + std::to_string(e.retry_after_seconds);
  }
  return out;
}

ApiError statusError(int code, std::string reason, std::string message) {
  ApiError e;
  e.code = code;
  e.reason = std::move(reason);
  e.message = std::move(message);
  return e;
}

ApiError objectError(const ResourceDef& def, std::string_view name, int code, std::string reason,
                     std::string message) {
  ApiError e = statusError(code, std::move(reason), std::move(message));
  e.name = std::string(name);
  e.group = def.group;
  e.kind = def.resource;
  return e;
}

// encoding/json's quoteChar.
std::string goQuoteChar(char c) {
  if (c == '\'') return "'\\''";
  if (c == '"') return "'\"'";
  std::string q = goQuote(std::string_view(&c, 1));
  return "'" + q.substr(1, q.size() - 2) + "'";
}

// Maps a RapidJSON syntax error onto encoding/json's SyntaxError text.
std::string goJsonSyntaxError(std::string_view data, rapidjson::ParseErrorCode code, size_t offset) {
  if (offset >= data.size()) return "unexpected end of JSON input";
  const std::string ch = goQuoteChar(data[offset]);
  switch (code) {
    case rapidjson::kParseErrorObjectMissName: return "invalid character " + ch + " looking for beginning of object key string";
    case rapidjson::kParseErrorObjectMissColon: return "invalid character " + ch + " after object key";
    case rapidjson::kParseErrorObjectMissCommaOrCurlyBracket:
      return "invalid character " + ch + " after object key:value pair";
    case rapidjson::kParseErrorArrayMissCommaOrSquareBracket: return "invalid character " + ch + " after array element";
    case rapidjson::kParseErrorDocumentRootNotSingular: return "invalid character " + ch + " after top-level value";
    case rapidjson::kParseErrorStringEscapeInvalid: return "invalid character " + ch + " in string escape code";
    case rapidjson::kParseErrorStringMissQuotationMark: return "unexpected end of JSON input";
    default: return "invalid character " + ch + " looking for beginning of value";
  }
}

}  // namespace

std::optional<std::string> parseJsonLikeGo(std::string_view data, rapidjson::Document& doc) {
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(data.data(), data.size());
  if (!doc.HasParseError()) return std::nullopt;
  return goJsonSyntaxError(data, doc.GetParseError(), doc.GetErrorOffset());
}

void appendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            appendUnicodeEscape(out, c);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    uint32_t rune = 0;
    const size_t n = utf8SequenceLength(s, i, rune);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else if (rune == 0x2028 || rune == 0x2029) {
      appendUnicodeEscape(out, rune);
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  out += '"';
}

std::string jsonString(std::string_view s) {
  std::string out;
  appendJsonString(out, s);
  return out;
}

std::string goQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      uint32_t rune = 0;
      const size_t n = utf8SequenceLength(s, i, rune);
      if (n == 0) {
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
        ++i;
      } else if (!isGoPrintable(rune)) {
        appendUnicodeEscape(out, rune);  // every rune here is below U+10000
        i += n;
      } else {
        out.append(s.substr(i, n));  // printable runes stay as they are
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
  return out;
}

FieldError FieldError::invalid(std::string field, std::string_view value, std::string detail) {
  return FieldError{Type::Invalid, std::move(field), goQuote(value), std::move(detail)};
}

FieldError FieldError::forbidden(std::string field, std::string detail) {
  return FieldError{Type::Forbidden, std::move(field), std::nullopt, std::move(detail)};
}

FieldError FieldError::notSupported(std::string field, std::string_view value,
                                    const std::vector<std::string>& supported) {
  std::string detail;
  if (!supported.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < supported.size(); ++i) {
      if (i) detail += ", ";
      detail += goQuote(supported[i]);
    }
  }
  return FieldError{Type::NotSupported, std::move(field), goQuote(value), std::move(detail)};
}

std::string FieldError::causeType() const {
  switch (type) {
    case Type::Invalid: return "FieldValueInvalid";
    case Type::NotSupported: return "FieldValueNotSupported";
    case Type::Forbidden: return "FieldValueForbidden";
    case Type::Required: return "FieldValueRequired";
  }
  return "";
}

std::string FieldError::body() const {
  std::string s = typeText(type);
  // Forbidden and Required never print the value (field.Error.ErrorBody).
  if (bad_value && type != Type::Forbidden && type != Type::Required) s += ": " + *bad_value;
  if (!detail.empty()) s += ": " + detail;
  return s;
}

std::string FieldError::error() const { return field + ": " + body(); }

std::string aggregateText(const std::vector<FieldError>& errors) {
  std::vector<std::string> texts;
  std::set<std::string> seen;
  for (const auto& e : errors) {
    std::string t = e.error();
    if (seen.insert(t).second) texts.push_back(std::move(t));
  }
  if (texts.size() == 1) return texts.front();
  std::string out = "[";
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i) out += ", ";
    out += texts[i];
  }
  return out + "]";
}

ApiError invalid(std::string_view group, std::string_view kind, std::string_view name,
                 const std::vector<FieldError>& errors) {
  std::string qualified(kind);
  if (!group.empty()) qualified += "." + std::string(group);
  std::string message = qualified + " " + goQuote(name) + " is invalid";
  if (!errors.empty()) message += ": " + aggregateText(errors);
  ApiError e = statusError(422, "Invalid", std::move(message));
  e.group = std::string(group);
  e.kind = std::string(kind);
  e.name = std::string(name);
  for (const auto& fe : errors) e.causes.push_back(StatusCause{fe.causeType(), fe.body(), fe.field});
  return e;
}

ApiError expiredContinue(std::string fresh_token) {
  constexpr std::string_view kTooOld =
      "The provided continue parameter is too old to display a consistent list result. You can start a new "
      "list without the continue parameter";
  if (fresh_token.empty()) return statusError(410, "Expired", std::string(kTooOld) + ".");
  ApiError e = statusError(
      410, "Expired",
      std::string(kTooOld) +
          ", or use the continue token in this response to retrieve the remainder of the results. Continuing "
          "with the provided token results in an inconsistent list - objects that were created, modified, or "
          "deleted between the time the first chunk was returned and now may show up in the list.");
  e.metadata_continue = std::move(fresh_token);
  return e;
}

std::string ApiError::toJson() const {
  std::string out = R"({"kind":"Status","apiVersion":"v1","metadata":{)";
  if (!metadata_continue.empty()) {
    out += "\"continue\":";
    appendJsonString(out, metadata_continue);
  }
  out += "},\"status\":\"Failure\"";
  if (!message.empty()) {
    out += ",\"message\":";
    appendJsonString(out, message);
  }
  if (!reason.empty()) {
    out += ",\"reason\":";
    appendJsonString(out, reason);
  }
  const std::string details = detailsJson(*this);
  if (!details.empty()) out += ",\"details\":{" + details + "}";
  if (code != 0) out += ",\"code\":" + std::to_string(code);
  out += '}';
  return out;
}

ApiError notFound(const ResourceDef& def, std::string_view name) {
  return objectError(def, name, 404, "NotFound", def.qualifiedResource() + " " + goQuote(name) + " not found");
}

ApiError alreadyExists(const ResourceDef& def, std::string_view name) {
  return objectError(def, name, 409, "AlreadyExists",
                     def.qualifiedResource() + " " + goQuote(name) + " already exists");
}

ApiError conflict(const ResourceDef& def, std::string_view name) {
  return objectError(def, name, 409, "Conflict",
                     "Operation cannot be fulfilled on " + def.qualifiedResource() + " " + goQuote(name) +
                         ": the object has been modified; please apply your changes to the latest version and "
                         "try again");
}

ApiError badRequest(std::string message) { return statusError(400, "BadRequest", std::move(message)); }

ApiError tooLargeResourceVersion(uint64_t requested, uint64_t current, int retry_after_seconds) {
  ApiError e = statusError(504, "Timeout",
                           "Timeout: Too large resource version: " + std::to_string(requested) +
                               ", current: " + std::to_string(current));
  e.causes.push_back(StatusCause{"ResourceVersionTooLarge", "Too large resource version", ""});
  e.retry_after_seconds = retry_after_seconds;
  return e;
}

ApiError expiredList() {
  return statusError(410, "Expired", "The resourceVersion for the provided list is too old.");
}

ApiError expiredWatch(uint64_t requested, uint64_t oldest) {
  return statusError(410, "Expired",
                     "too old resource version: " + std::to_string(requested) + " (" + std::to_string(oldest) + ")");
}

ApiError notAcceptable(std::string_view accepted_list) {
  return statusError(406, "NotAcceptable",
                     "only the following media types are accepted: " + std::string(accepted_list));
}

ApiError unsupportedMediaType(std::string_view accepted_list) {
  return statusError(415, "UnsupportedMediaType",
                     "the body of the request was in an unknown format - accepted media types include: " +
                         std::string(accepted_list));
}

}  // namespace testapi
