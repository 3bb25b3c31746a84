#include "cache/query/continue_token.h"

#include <optional>
#include <vector>

#include "cache/base64url.h"
#include "cache/go_json.h"

namespace cache {

namespace {

constexpr std::string_view kTokenVersion = "meta.k8s.io/v1";
constexpr std::string_view kInvalidPrefix = "invalid continue token: continue key is not valid";
// path.Clean for a rooted path.
std::string cleanRootedPath(std::string_view p) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string_view::npos) slash = p.size();
    std::string_view part = p.substr(start, slash - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = slash + 1;
  }
  if (parts.empty()) return "/";
  std::string out;
  for (auto part : parts) out.append("/").append(part);
  return out;
}

std::string_view kindName(GoJsonValue::Kind kind) {
  switch (kind) {
    case GoJsonValue::Kind::String: return "string";
    case GoJsonValue::Kind::Number: return "number";
    case GoJsonValue::Kind::Bool: return "bool";
    case GoJsonValue::Kind::Null: return "null";
    case GoJsonValue::Kind::Object: return "object";
    case GoJsonValue::Kind::Array: return "array";
  }
  return "value";
}

// encoding/json's UnmarshalTypeError text for a field of the token struct.
std::string typeError(std::string_view value, std::string_view field, std::string_view go_type) {
  std::string out = "json: cannot unmarshal ";
  out.append(value).append(" into Go struct field continueToken.").append(field).append(" of type ").append(go_type);
  return out;
}

struct RawToken {
  std::string version;
  int64_t rv = 0;
  std::string start;
};

// json.Unmarshal into storage's continueToken struct: keys match case-insensitively,
// later duplicates win, unknown keys are ignored, null leaves a field alone, and the
// first type mismatch is the error (after all fields were assigned).
std::optional<RawToken> unmarshalToken(const GoJsonDocument& doc, std::string& error) {
  RawToken token;
  if (doc.top_kind == GoJsonValue::Kind::Null) return token;
  if (doc.top_kind != GoJsonValue::Kind::Object) {
    error = "json: cannot unmarshal " + std::string(kindName(doc.top_kind)) +
            " into Go value of type storage.continueToken";
    return std::nullopt;
  }
  std::string first_error;
  auto keep = [&](std::string e) {
    if (first_error.empty()) first_error = std::move(e);
  };
  for (const auto& [key, value] : doc.members) {
    const bool is_v = goEqualFold(key, "v");
    const bool is_rv = goEqualFold(key, "rv");
    const bool is_start = goEqualFold(key, "start");
    if (!is_v && !is_rv && !is_start) continue;
    if (value.kind == GoJsonValue::Kind::Null) continue;
    if (is_rv) {
      if (value.kind == GoJsonValue::Kind::Number) {
        if (auto n = parseGoInt64(value.text)) {
          token.rv = *n;
        } else {
          keep(typeError("number " + value.text, "rv", "int64"));
        }
      } else {
        keep(typeError(kindName(value.kind), "rv", "int64"));
      }
      continue;
    }
    const std::string_view field = is_v ? "v" : "start";
    if (value.kind != GoJsonValue::Kind::String) {
      keep(typeError(kindName(value.kind), field, "string"));
      continue;
    }
    (is_v ? token.version : token.start) = value.text;
  }
  if (!first_error.empty()) {
    error = std::move(first_error);
    return std::nullopt;
  }
  return token;
}

}  // namespace

std::string ContinueToken::encode(int64_t resource_version, std::string_view last_key, bool rooted) {
  std::string start(last_key);
  start.push_back('\0');
  return encodeStart(resource_version, start, rooted);
}

std::string ContinueToken::encodeStart(int64_t resource_version, std::string_view start, bool rooted_key) {
  // storage.EncodeContinue trims the list prefix from the key. The watch cache's prefix
  // ends without a slash: "/<name>\u0000" and "/<ns>/<name>\u0000"; etcd's list adds one
  // to the prefix first: "<ns>/<name>\u0000".
  std::string rooted = rooted_key ? "/" : "";
  rooted.append(start);
  std::string json = "{\"v\":";
  json.append(goJsonString(kTokenVersion));
  json.append(",\"rv\":").append(std::to_string(resource_version));
  json.append(",\"start\":").append(goJsonString(rooted)).append("}");
  return base64UrlEncode(json);
}

ContinueToken::Result ContinueToken::decode(std::string_view token) {
  auto invalid = [](std::string_view detail) {
    std::string message(kInvalidPrefix);
    message.append(detail);
    return Result::failure(std::move(message));
  };
  std::string error;
  auto json = base64UrlDecode(token, error);
  if (!json) return invalid(": " + error);
  auto doc = parseGoJson(*json, error);
  if (!doc) return invalid(": " + error);
  auto raw = unmarshalToken(*doc, error);
  if (!raw) return invalid(": " + error);
  if (raw->version != kTokenVersion) return invalid(": server does not recognize this encoded version " + raw->version);
  if (raw->rv == 0) return invalid(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  if (raw->start.empty()) return invalid(": encoded start key empty (version meta.k8s.io/v1)");
  // Guards against path traversal: the start key must already be a clean path.
  std::string rooted = raw->start.starts_with('/') ? raw->start : "/" + raw->start;
  if (cleanRootedPath(rooted) != rooted) return invalid(": " + raw->start);
  // Relative to the list prefix, as DecodeContinue appends cleaned[1:] to it: tokens with
  // and without the leading slash name the same key.
  return ContinueToken{raw->rv, rooted.substr(1)};
}

}  // namespace cache
