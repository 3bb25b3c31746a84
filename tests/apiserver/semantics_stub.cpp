// Temporary minimal implementations of semantics.h until the full request-semantics
// library lands; they cover the common cases only.
#include <algorithm>
#include <charconv>
#include <sstream>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "semantics.h"

namespace testapi {
namespace {

std::string q(std::string_view s) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return sb.GetString();
}

std::string b64url(std::string_view in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += t[v >> 18]; out += t[(v >> 12) & 63]; out += t[(v >> 6) & 63]; out += t[v & 63];
  }
  if (in.size() - i == 1) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += t[v >> 18]; out += t[(v >> 12) & 63];
  } else if (in.size() - i == 2) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += t[v >> 18]; out += t[(v >> 12) & 63]; out += t[(v >> 6) & 63];
  }
  return out;
}

std::optional<std::string> unb64url(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '-' || c == '+') v = 62;
    else if (c == '_' || c == '/') v = 63;
    else if (c == '=') break;
    else return std::nullopt;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) { bits -= 8; out += char((acc >> bits) & 0xff); }
  }
  return out;
}

struct SimpleLabelSelector : LabelSelector {
  struct Req { std::string key, op; std::vector<std::string> values; };
  std::vector<Req> reqs;
  bool matches(const Labels& l) const override {
    for (const auto& r : reqs) {
      auto it = l.find(r.key);
      bool has = it != l.end();
      if (r.op == "exists") { if (!has) return false; }
      else if (r.op == "!") { if (has) return false; }
      else if (r.op == "=") { if (!has || std::find(r.values.begin(), r.values.end(), it->second) == r.values.end()) return false; }
      else if (r.op == "!=") { if (has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end()) return false; }
    }
    return true;
  }
  bool empty() const override { return reqs.empty(); }
};

std::string trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> splitTop(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') depth++;
    if (c == ')') depth--;
    if (c == ',' && depth == 0) { out.push_back(cur); cur.clear(); } else cur += c;
  }
  if (!cur.empty() || !out.empty()) out.push_back(cur);
  return out;
}

struct SimpleFieldSelector : FieldSelector {
  struct Req { std::string field, op, value; };
  std::vector<Req> reqs;
  bool matches(const Fields& f) const override {
    for (const auto& r : reqs) {
      auto it = f.find(r.field);
      std::string v = it == f.end() ? "" : it->second;
      if ((r.op == "=") != (v == r.value)) return false;
    }
    return true;
  }
  bool empty() const override { return reqs.empty(); }
  std::optional<std::string> requiredValue(std::string_view field) const override {
    for (const auto& r : reqs) if (r.field == field && r.op == "=") return r.value;
    return std::nullopt;
  }
};

void walkPath(const rapidjson::Value& obj, std::string_view path, std::string& out) {
  const rapidjson::Value* cur = &obj;
  while (!path.empty()) {
    auto dot = path.find('.');
    std::string part(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    if (!cur->IsObject()) return;
    auto it = cur->FindMember(part.c_str());
    if (it == cur->MemberEnd()) return;
    cur = &it->value;
  }
  if (cur->IsString()) out = cur->GetString();
  else if (cur->IsBool()) out = cur->GetBool() ? "true" : "false";
  else if (cur->IsInt64()) out = std::to_string(cur->GetInt64());
}

}  // namespace

std::string ApiError::toJson() const {
  std::string s = R"({"kind":"Status","apiVersion":"v1","metadata":{)";
  if (!metadata_continue.empty()) s += "\"continue\":" + q(metadata_continue);
  s += R"(},"status":"Failure","message":)" + q(message);
  if (!reason.empty()) s += ",\"reason\":" + q(reason);
  std::string d;
  auto add = [&](const std::string& k, const std::string& v) { if (!d.empty()) d += ","; d += q(k) + ":" + v; };
  if (!name.empty()) add("name", q(name));
  if (!group.empty()) add("group", q(group));
  if (!kind.empty()) add("kind", q(kind));
  if (!causes.empty()) {
    std::string c = "[";
    for (size_t i = 0; i < causes.size(); ++i) {
      if (i) c += ",";
      c += "{";
      std::string inner;
      if (!causes[i].reason.empty()) inner += "\"reason\":" + q(causes[i].reason);
      if (!causes[i].message.empty()) inner += std::string(inner.empty() ? "" : ",") + "\"message\":" + q(causes[i].message);
      if (!causes[i].field.empty()) inner += std::string(inner.empty() ? "" : ",") + "\"field\":" + q(causes[i].field);
      c += inner + "}";
    }
    add("causes", c + "]");
  }
  if (retry_after_seconds > 0) add("retryAfterSeconds", std::to_string(retry_after_seconds));
  if (!d.empty()) s += ",\"details\":{" + d + "}";
  s += ",\"code\":" + std::to_string(code) + "}";
  return s;
}

bool parseQueryBool(std::string_view v) {
  std::string l(v);
  std::transform(l.begin(), l.end(), l.begin(), ::tolower);
  return !(l == "0" || l == "false");
}

Result<ListOptions> parseListOptions(const Query& query, bool watch) {
  ListOptions o;
  o.watch = watch;
  auto get = [&](const char* k) -> const std::string* {
    auto it = query.find(k);
    return it == query.end() ? nullptr : &it->second;
  };
  if (auto* v = get("watch")) o.watch = o.watch || parseQueryBool(*v);
  if (auto* v = get("resourceVersion")) { o.resource_version = *v; o.has_resource_version = !v->empty(); }
  if (auto* v = get("resourceVersionMatch")) o.resource_version_match = *v;
  if (auto* v = get("continue")) o.continue_token = *v;
  if (auto* v = get("labelSelector")) o.label_selector = *v;
  if (auto* v = get("fieldSelector")) o.field_selector = *v;
  if (auto* v = get("allowWatchBookmarks")) o.allow_watch_bookmarks = parseQueryBool(*v);
  if (auto* v = get("sendInitialEvents")) o.send_initial_events = parseQueryBool(*v);
  for (const char* k : {"limit", "timeoutSeconds"}) {
    if (auto* v = get(k)) {
      int64_t n = 0;
      auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
      if (ec != std::errc() || p != v->data() + v->size())
        return badRequest("strconv.ParseInt: parsing " + q(*v) + ": invalid syntax");
      if (std::string_view(k) == "limit") o.limit = n; else { o.timeout_seconds = n; o.has_timeout_seconds = true; }
    }
  }
  if (!o.watch && !o.continue_token.empty() && o.has_resource_version && o.resource_version != "0")
    return badRequest("specifying resource version is not allowed when using continue");
  if (!o.watch && !o.resource_version_match.empty() && !o.has_resource_version) {
    ApiError e{422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"};
    e.group = "meta.k8s.io"; e.kind = "ListOptions";
    e.causes.push_back({"FieldValueForbidden", "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided", "resourceVersionMatch"});
    return e;
  }
  if (o.watch && o.send_initial_events && o.resource_version_match != "NotOlderThan") {
    ApiError e{422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"};
    e.group = "meta.k8s.io"; e.kind = "ListOptions";
    e.causes.push_back({"FieldValueForbidden", "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan", "resourceVersionMatch"});
    return e;
  }
  return o;
}

std::optional<uint64_t> parseResourceVersion(std::string_view rv) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  if (rv.empty() || ec != std::errc() || p != rv.data() + rv.size()) return std::nullopt;
  return n;
}

Result<std::shared_ptr<const LabelSelector>> parseLabelSelector(std::string_view text) {
  auto sel = std::make_shared<SimpleLabelSelector>();
  for (auto part : splitTop(text)) {
    std::string p = trim(part);
    if (p.empty()) return badRequest("found '', expected: identifier after ','");
    SimpleLabelSelector::Req r;
    size_t pos;
    if (p[0] == '!') { r.key = trim(p.substr(1)); r.op = "!"; }
    else if ((pos = p.find("!=")) != std::string::npos) { r.key = trim(p.substr(0, pos)); r.op = "!="; r.values = {trim(p.substr(pos + 2))}; }
    else if ((pos = p.find("==")) != std::string::npos) { r.key = trim(p.substr(0, pos)); r.op = "="; r.values = {trim(p.substr(pos + 2))}; }
    else if ((pos = p.find('=')) != std::string::npos) { r.key = trim(p.substr(0, pos)); r.op = "="; r.values = {trim(p.substr(pos + 1))}; }
    else if ((pos = p.find(" notin ")) != std::string::npos || (pos = p.find(" in ")) != std::string::npos) {
      bool notin = p.compare(pos, 7, " notin ") == 0;
      r.key = trim(p.substr(0, pos)); r.op = notin ? "!=" : "=";
      auto l = p.find('('), rr = p.find(')');
      if (l == std::string::npos || rr == std::string::npos) return badRequest("unable to parse requirement: found '', expected: ',' or ')'");
      for (auto v : splitTop(p.substr(l + 1, rr - l - 1))) r.values.push_back(trim(v));
      if (r.values.empty()) r.values.push_back("");
    } else { r.key = p; r.op = "exists"; }
    if (r.key.empty()) return badRequest("found '=', expected: !, identifier, or 'end of string'");
    sel->reqs.push_back(std::move(r));
  }
  return std::shared_ptr<const LabelSelector>(sel);
}

Result<std::shared_ptr<const FieldSelector>> parseFieldSelector(const ResourceDef& def, std::string_view text) {
  auto sel = std::make_shared<SimpleFieldSelector>();
  for (auto part : splitTop(text)) {
    std::string p = trim(part);
    if (p.empty()) continue;
    SimpleFieldSelector::Req r;
    size_t pos;
    if ((pos = p.find("!=")) != std::string::npos) { r.field = p.substr(0, pos); r.op = "!="; r.value = p.substr(pos + 2); }
    else if ((pos = p.find("==")) != std::string::npos) { r.field = p.substr(0, pos); r.op = "="; r.value = p.substr(pos + 2); }
    else if ((pos = p.find('=')) != std::string::npos) { r.field = p.substr(0, pos); r.op = "="; r.value = p.substr(pos + 1); }
    else return badRequest("invalid selector: '" + std::string(text) + "'; can't understand '" + p + "'");
    bool known = r.field == "metadata.name" || (def.namespaced && r.field == "metadata.namespace") ||
                 std::find(def.selectable_fields.begin(), def.selectable_fields.end(), r.field) != def.selectable_fields.end() ||
                 (def.resource == "pods" && (r.field == "spec.nodeName" || r.field == "status.phase"));
    if (!known) return badRequest("field label not supported: " + r.field);
    sel->reqs.push_back(std::move(r));
  }
  return std::shared_ptr<const FieldSelector>(sel);
}

Fields extractFields(const ResourceDef& def, const rapidjson::Value& object) {
  Fields f;
  walkPath(object, "metadata.name", f["metadata.name"]);
  if (def.namespaced) walkPath(object, "metadata.namespace", f["metadata.namespace"]);
  for (const auto& s : def.selectable_fields) walkPath(object, s, f[s]);
  if (def.resource == "pods") { walkPath(object, "spec.nodeName", f["spec.nodeName"]); walkPath(object, "status.phase", f["status.phase"]); }
  return f;
}

Labels extractLabels(const rapidjson::Value& object) {
  Labels l;
  if (!object.IsObject()) return l;
  auto m = object.FindMember("metadata");
  if (m == object.MemberEnd() || !m->value.IsObject()) return l;
  auto lb = m->value.FindMember("labels");
  if (lb == m->value.MemberEnd() || !lb->value.IsObject()) return l;
  for (auto it = lb->value.MemberBegin(); it != lb->value.MemberEnd(); ++it)
    if (it->value.IsString()) l[it->name.GetString()] = it->value.GetString();
  return l;
}

std::string encodeContinue(int64_t rv, std::string_view start) {
  return b64url(R"({"v":"meta.k8s.io/v1","rv":)" + std::to_string(rv) + ",\"start\":" + q(start) + "}");
}

Result<ContinueToken> decodeContinue(std::string_view token) {
  auto raw = unb64url(token);
  rapidjson::Document d;
  if (!raw || d.Parse(raw->c_str(), raw->size()).HasParseError() || !d.IsObject())
    return badRequest("invalid continue token: continue key is not valid: illegal base64 data");
  ContinueToken t;
  if (d.HasMember("rv") && d["rv"].IsInt64()) t.rv = d["rv"].GetInt64();
  if (d.HasMember("start") && d["start"].IsString()) t.start.assign(d["start"].GetString(), d["start"].GetStringLength());
  if (t.rv == 0) return badRequest("invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
  if (t.start.empty()) return badRequest("invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)");
  return t;
}

namespace {
void mergeInto(rapidjson::Value& target, const rapidjson::Value& patch, rapidjson::Document::AllocatorType& a) {
  if (!patch.IsObject()) { target.CopyFrom(patch, a); return; }
  if (!target.IsObject()) target.SetObject();
  for (auto it = patch.MemberBegin(); it != patch.MemberEnd(); ++it) {
    auto t = target.FindMember(it->name);
    if (it->value.IsNull()) { if (t != target.MemberEnd()) target.RemoveMember(t); continue; }
    if (t == target.MemberEnd()) {
      rapidjson::Value v; v.CopyFrom(it->value, a);
      target.AddMember(rapidjson::Value(it->name, a), std::move(v), a);
    } else mergeInto(t->value, it->value, a);
  }
}
}  // namespace

Result<bool> applyPatch(const ResourceDef&, std::string_view content_type, const rapidjson::Value& original,
                        std::string_view patch, rapidjson::Document& target) {
  if (content_type != "application/merge-patch+json" && content_type != "application/strategic-merge-patch+json")
    return unsupportedMediaType("application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json");
  rapidjson::Document p;
  if (p.Parse(patch.data(), patch.size()).HasParseError()) return badRequest("error decoding patch");
  target.CopyFrom(original, target.GetAllocator());
  mergeInto(target, p, target.GetAllocator());
  return true;
}

ApiError notFound(const ResourceDef& def, std::string_view name) {
  ApiError e{404, "NotFound", def.qualifiedResource() + " " + q(name) + " not found"};
  e.name = name; e.group = def.group; e.kind = def.resource;
  return e;
}
ApiError alreadyExists(const ResourceDef& def, std::string_view name) {
  ApiError e{409, "AlreadyExists", def.qualifiedResource() + " " + q(name) + " already exists"};
  e.name = name; e.group = def.group; e.kind = def.resource;
  return e;
}
ApiError conflict(const ResourceDef& def, std::string_view name) {
  ApiError e{409, "Conflict", "Operation cannot be fulfilled on " + def.qualifiedResource() + " " + q(name) +
                                  ": the object has been modified; please apply your changes to the latest version and try again"};
  e.name = name; e.group = def.group; e.kind = def.resource;
  return e;
}
ApiError badRequest(std::string message) { return ApiError{400, "BadRequest", std::move(message)}; }
ApiError tooLargeResourceVersion(uint64_t requested, uint64_t current) {
  ApiError e{504, "Timeout", "Timeout: Too large resource version: " + std::to_string(requested) + ", current: " + std::to_string(current)};
  e.causes.push_back({"ResourceVersionTooLarge", "Too large resource version", ""});
  e.retry_after_seconds = 1;
  return e;
}
ApiError expiredList() { return ApiError{410, "Expired", "The resourceVersion for the provided list is too old."}; }
ApiError expiredWatch(uint64_t requested, uint64_t oldest) {
  return ApiError{410, "Expired", "too old resource version: " + std::to_string(requested) + " (" + std::to_string(oldest) + ")"};
}
ApiError notAcceptable(std::string_view accepted_list) {
  return ApiError{406, "NotAcceptable", "only the following media types are accepted: " + std::string(accepted_list)};
}
ApiError unsupportedMediaType(std::string_view accepted_list) {
  return ApiError{415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: " + std::string(accepted_list)};
}

}  // namespace testapi
