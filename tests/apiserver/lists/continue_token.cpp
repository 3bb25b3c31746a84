// Continue tokens (P2/P3): base64url (no padding) of {"v":"meta.k8s.io/v1","rv":N,"start":K}.
// K is the last key + NUL relative to the list's key: the watch cache trims the request
// key ("/pods/ns") and so writes "/name\0", etcd trims its prepared prefix ("/pods/ns/")
// and writes "name\0". Both decode to the same position, so clients (and the proxy) may
// hand a token from one to the other; decoding reproduces the storage layer's checks
// and error texts (storage.DecodeContinue), including Go's base64 and JSON messages.
#include "tests/apiserver/http/base64url.h"
#include "tests/apiserver/semantics.h"
#include "tests/apiserver/status/status_util.h"

#include <array>
#include <cctype>
#include <cstdio>


namespace testapi {

namespace {

constexpr std::string_view kTokenVersion = "meta.k8s.io/v1";
constexpr std::string_view kInvalidPrefix = "invalid continue token: ";
constexpr std::string_view kKeyNotValid = "continue key is not valid";

std::string jsonKindName(const rapidjson::Value& v) {
  if (v.IsString()) return "string";
  if (v.IsNumber()) return "number";
  if (v.IsBool()) return "bool";
  if (v.IsArray()) return "array";
  if (v.IsObject()) return "object";
  return "null";
}

// Case-insensitive member lookup, as encoding/json matches struct tags.
const rapidjson::Value* member(const rapidjson::Value& obj, std::string_view name) {
  const rapidjson::Value* found = nullptr;
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    std::string_view key(it->name.GetString(), it->name.GetStringLength());
    if (key.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < key.size(); ++i)
      same = same && std::tolower(static_cast<unsigned char>(key[i])) == name[i];
    if (same) found = &it->value;  // the last duplicate wins, as in Go
  }
  return found;
}

std::string goNumberText(const rapidjson::Value& v) {
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v.GetDouble());
  return buf;
}

ApiError invalidToken(std::string detail) { return badRequest(std::string(kInvalidPrefix) + detail); }

// path.Clean(key) == key for a key that starts with '/': no empty, "." or ".."
// segments and no trailing '/', except for the root "/" itself.
bool isCleanRootedPath(std::string_view key) {
  if (key == "/") return true;
  key.remove_prefix(1);
  size_t pos = 0;
  while (true) {
    const size_t slash = key.find('/', pos);
    const std::string_view seg = key.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (seg.empty() || seg == "." || seg == "..") return false;
    if (slash == std::string_view::npos) return true;
    pos = slash + 1;
  }
}

}  // namespace

std::string encodeContinue(int64_t rv, std::string_view start) {
  std::string json = "{\"v\":\"";
  json += kTokenVersion;
  json += "\",\"rv\":" + std::to_string(rv) + ",\"start\":";
  appendJsonString(json, start);
  json += '}';
  return base64UrlEncode(json);
}

Result<ContinueToken> decodeContinue(std::string_view token) {
  std::string error;
  auto data = base64UrlDecode(token, error);
  if (!data) return invalidToken(std::string(kKeyNotValid) + ": " + error);

  rapidjson::Document doc;
  if (auto syntax = parseJsonLikeGo(*data, doc)) return invalidToken(std::string(kKeyNotValid) + ": " + *syntax);
  if (!doc.IsObject() && !doc.IsNull())
    return invalidToken(std::string(kKeyNotValid) + ": json: cannot unmarshal " + jsonKindName(doc) +
                        " into Go value of type storage.continueToken");

  std::string version;
  ContinueToken out;
  if (doc.IsObject()) {
    const auto typeError = [](const rapidjson::Value& v, std::string_view field, std::string_view type) {
      std::string kind = jsonKindName(v);
      return invalidToken(std::string(kKeyNotValid) + ": json: cannot unmarshal " + kind +
                          " into Go struct field continueToken." + std::string(field) + " of type " +
                          std::string(type));
    };
    if (const auto* v = member(doc, "v"); v && !v->IsNull()) {
      if (!v->IsString()) return typeError(*v, "v", "string");
      version.assign(v->GetString(), v->GetStringLength());
    }
    if (const auto* v = member(doc, "rv"); v && !v->IsNull()) {
      if (!v->IsInt64()) {
        if (v->IsNumber())
          return invalidToken(std::string(kKeyNotValid) + ": json: cannot unmarshal number " +
                              goNumberText(*v) +
                              " into Go struct field continueToken.rv of type int64");
        return typeError(*v, "rv", "int64");
      }
      out.rv = v->GetInt64();
    }
    if (const auto* v = member(doc, "start"); v && !v->IsNull()) {
      if (!v->IsString()) return typeError(*v, "start", "string");
      out.start.assign(v->GetString(), v->GetStringLength());
    }
  }

  if (version != kTokenVersion)
    return invalidToken(std::string(kKeyNotValid) + ": server does not recognize this encoded version " + version);
  if (out.rv == 0)
    return invalidToken(std::string(kKeyNotValid) +
                        ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  if (out.start.empty())
    return invalidToken(std::string(kKeyNotValid) + ": encoded start key empty (version meta.k8s.io/v1)");
  // As storage.DecodeContinue: "/pod-55\0" (the watch cache's tokens) and "pod-55\0"
  // (etcd's) name the same position; the cleaned key must equal the rooted one, and the
  // error quotes the start as the client sent it.
  std::string rooted = out.start.front() == '/' ? out.start : "/" + out.start;
  if (!isCleanRootedPath(rooted)) return invalidToken(std::string(kKeyNotValid) + ": " + out.start);
  out.start = rooted.substr(1);
  return out;
}

}  // namespace testapi
