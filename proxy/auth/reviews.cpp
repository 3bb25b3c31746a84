#include "proxy/auth/reviews.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace proxy::auth {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void stringField(Writer& w, const char* key, const std::string& value) {
  if (value.empty()) return;  // omitempty, as the Go types declare every string here
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

std::string stringMember(const rapidjson::Value& obj, const char* name) {
  if (!obj.IsObject()) return "";
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || !it->value.IsString()) return "";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

bool boolMember(const rapidjson::Value& obj, const char* name) {
  if (!obj.IsObject()) return false;
  auto it = obj.FindMember(name);
  return it != obj.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

const rapidjson::Value* objectMember(const rapidjson::Value& obj, const char* name) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(name);
  return it != obj.MemberEnd() && it->value.IsObject() ? &it->value : nullptr;
}

std::vector<std::string> strings(const rapidjson::Value& array) {
  std::vector<std::string> out;
  if (!array.IsArray()) return out;
  for (const auto& v : array.GetArray())
    if (v.IsString()) out.emplace_back(v.GetString(), v.GetStringLength());
  return out;
}

// The review's status object when the upstream created the review (201, or 200 from
// servers that answer so), else nullptr with `error` set.
const rapidjson::Value* reviewStatus(unsigned code, const std::string& body, rapidjson::Document& doc,
                                     std::string& error) {
  if (code != 201 && code != 200) {
    error = "review answered HTTP " + std::to_string(code);
    return nullptr;
  }
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    error = "review answer is not a JSON object";
    return nullptr;
  }
  static const rapidjson::Value empty(rapidjson::kObjectType);
  const rapidjson::Value* status = objectMember(doc, "status");
  return status ? status : &empty;
}

}  // namespace

std::string tokenReviewRequest(const std::string& token) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("TokenReview");
  w.Key("apiVersion");
  w.String("authentication.k8s.io/v1");
  w.Key("spec");
  w.StartObject();
  w.Key("token");
  w.String(token.c_str(), static_cast<rapidjson::SizeType>(token.size()));
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

std::string subjectAccessReviewRequest(const UserInfo& user, const AccessAttributes& a) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("kind");
  w.String("SubjectAccessReview");
  w.Key("apiVersion");
  w.String("authorization.k8s.io/v1");
  w.Key("spec");
  w.StartObject();
  if (a.resource_request) {
    w.Key("resourceAttributes");
    w.StartObject();
    stringField(w, "namespace", a.namespace_);
    stringField(w, "verb", a.verb);
    stringField(w, "group", a.group);
    stringField(w, "version", a.version);
    stringField(w, "resource", a.resource);
    stringField(w, "subresource", a.subresource);
    stringField(w, "name", a.name);
    // As raw selectors, which the apiserver's SubjectAccessReview parses exactly as its
    // authorization filter parses the request's own (issue 16: per-node clients listing
    // pods by spec.nodeName are allowed on that selector by the Node authorizer).
    for (const auto& [key, selector] : {std::pair{"fieldSelector", &a.field_selector},
                                        std::pair{"labelSelector", &a.label_selector}}) {
      if (selector->empty()) continue;
      w.Key(key);
      w.StartObject();
      stringField(w, "rawSelector", *selector);
      w.EndObject();
    }
    w.EndObject();
  } else {
    w.Key("nonResourceAttributes");
    w.StartObject();
    stringField(w, "path", a.path);
    stringField(w, "verb", a.verb);
    w.EndObject();
  }
  stringField(w, "user", user.name);
  if (!user.groups.empty()) {
    w.Key("groups");
    w.StartArray();
    for (const auto& g : user.groups) w.String(g.c_str(), static_cast<rapidjson::SizeType>(g.size()));
    w.EndArray();
  }
  if (!user.extra.empty()) {
    w.Key("extra");
    w.StartObject();
    for (const auto& [key, values] : user.extra) {
      w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
      w.StartArray();
      for (const auto& v : values) w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
      w.EndArray();
    }
    w.EndObject();
  }
  stringField(w, "uid", user.uid);
  w.EndObject();
  w.EndObject();
  return sb.GetString();
}

TokenReviewResult parseTokenReview(unsigned code, const std::string& body) {
  TokenReviewResult out;
  rapidjson::Document doc;
  const rapidjson::Value* status = reviewStatus(code, body, doc, out.error);
  if (!status) return out;
  out.definitive = true;
  out.authenticated = boolMember(*status, "authenticated");
  out.error = stringMember(*status, "error");
  if (const rapidjson::Value* user = objectMember(*status, "user")) {
    out.user.name = stringMember(*user, "username");
    out.user.uid = stringMember(*user, "uid");
    if (auto it = user->FindMember("groups"); it != user->MemberEnd()) out.user.groups = strings(it->value);
    if (const rapidjson::Value* extra = objectMember(*user, "extra")) {
      for (const auto& m : extra->GetObject())
        out.user.extra[std::string(m.name.GetString(), m.name.GetStringLength())] = strings(m.value);
    }
  }
  // An authenticated review without a user name names nobody: refuse it.
  if (out.authenticated && out.user.name.empty()) {
    out.authenticated = false;
    out.error = "token review named no user";
  }
  return out;
}

AccessReviewResult parseSubjectAccessReview(unsigned code, const std::string& body) {
  AccessReviewResult out;
  rapidjson::Document doc;
  const rapidjson::Value* status = reviewStatus(code, body, doc, out.error);
  if (!status) return out;
  out.definitive = true;
  // `denied` wins over `allowed`, as the webhook authorizer reads it.
  out.allowed = boolMember(*status, "allowed") && !boolMember(*status, "denied");
  out.reason = stringMember(*status, "reason");
  out.error = stringMember(*status, "evaluationError");
  return out;
}

}  // namespace proxy::auth
