// Test identities, rules, the review APIs and impersonation (see auth.h).
#include "tests/apiserver/auth/auth.h"

#include <algorithm>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "tests/apiserver/http/base64url.h"
#include "tests/apiserver/status/status_util.h"
#include "tests/apiserver/http/websocket_protocol.h"

namespace testapi {
namespace {

constexpr const char* kProxyUser = "system:serviceaccount:kube-system:kube-cache-proxy";

struct Rule {
  std::vector<std::string> users;   // any of these users ...
  std::vector<std::string> groups;  // ... or any of these groups
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::string ns;  // "" = every namespace and cluster scope
  bool non_resource = false;
  std::vector<std::string> excluded_paths;  // non-resource rules
};

bool matches(const std::vector<std::string>& set, const std::string& v) {
  return std::find(set.begin(), set.end(), "*") != set.end() || std::find(set.begin(), set.end(), v) != set.end();
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      {{kProxyUser}, {"system:masters"}, {"*"}, {"*"}, {"*"}, "", false, {}},
      {{kProxyUser}, {"system:masters"}, {"*"}, {}, {}, "", true, {}},
      {{}, {"team-a"}, {"get", "list", "watch"}, {""}, {"pods"}, "a", false, {}},
      {{}, {"cluster-readers"}, {"get", "list", "watch"}, {""}, {"pods", "namespaces"}, "", false, {}},
      {{}, {"system:authenticated"}, {"get"}, {}, {}, "", true, {"/metrics"}},
  };
  return r;
}

std::vector<std::string> withAuthenticated(std::vector<std::string> groups) {
  if (std::find(groups.begin(), groups.end(), "system:authenticated") == groups.end())
    groups.emplace_back("system:authenticated");
  return groups;
}

const std::map<std::string, UserIdentity>& identities() {
  static const std::map<std::string, UserIdentity> ids = {
      {"admin-token", {"admin", "uid-admin", {"system:masters", "system:authenticated"}, {}}},
      {"proxy-token",
       {kProxyUser, "uid-proxy", {"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, {}}},
      {"alice-token", {"alice", "uid-alice", {"team-a", "system:authenticated"}, {{"scopes", {"namespace-a"}}}}},
      {"bob-token", {"bob", "uid-bob", {"cluster-readers", "system:authenticated"}, {}}},
      {"nobody-token", {"nobody", "uid-nobody", {"system:authenticated"}, {}}},
      {"node-1-token", {"system:node:node-1", "uid-node-1", {"system:nodes", "system:authenticated"}, {}}},
  };
  return ids;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string stringMember(const rapidjson::Value& obj, const char* name) {
  if (!obj.IsObject()) return "";
  auto it = obj.FindMember(name);
  return it != obj.MemberEnd() && it->value.IsString() ? std::string(it->value.GetString(), it->value.GetStringLength())
                                                        : std::string();
}

std::vector<std::string> stringArray(const rapidjson::Value& obj, const char* name) {
  std::vector<std::string> out;
  if (!obj.IsObject()) return out;
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || !it->value.IsArray()) return out;
  for (const auto& v : it->value.GetArray())
    if (v.IsString()) out.emplace_back(v.GetString(), v.GetStringLength());
  return out;
}

ApiError badReview(const std::string& why) { return ApiError{400, "BadRequest", why}; }

// filters.WithImpersonation: the caller needs "impersonate" on users, groups, uids and
// userextras/<key>; the result is a new user with system:authenticated added.
AuthOutcome impersonate(const HttpRequest& req, const UserIdentity& user) {
  std::vector<std::string> imp_groups;
  std::map<std::string, std::vector<std::string>> imp_extra;
  std::string imp_user, imp_uid;
  for (const auto& [name, value] : req.headers) {
    if (name == "impersonate-user") imp_user = value;
    else if (name == "impersonate-group") imp_groups.push_back(value);
    else if (name == "impersonate-uid") imp_uid = value;
    else if (name.rfind("impersonate-extra-", 0) == 0) imp_extra[name.substr(18)].push_back(value);
  }
  if (imp_user.empty()) {
    if (!imp_groups.empty() || !imp_extra.empty() || !imp_uid.empty())
      return {std::nullopt, ApiError{500, "", "requested [] without impersonating a user"}};
    return {user, std::nullopt, std::nullopt};
  }
  auto check = [&](const std::string& resource, const std::string& name) -> std::optional<ApiError> {
    AccessAttributes a;
    a.verb = "impersonate";
    a.group = resource == "userextras" || resource == "uids" ? "authentication.k8s.io" : "";
    a.resource = resource;
    a.name = name;
    if (isAllowed(user, a)) return std::nullopt;
    return forbidden(user, a);
  };
  if (auto e = check("users", imp_user)) return {std::nullopt, e};
  for (const auto& g : imp_groups)
    if (auto e = check("groups", g)) return {std::nullopt, e};
  if (!imp_uid.empty())
    if (auto e = check("uids", imp_uid)) return {std::nullopt, e};
  UserIdentity acting{imp_user, imp_uid, withAuthenticated(imp_groups), imp_extra};
  return {acting, std::nullopt};
}

}  // namespace

std::optional<UserIdentity> authenticateToken(const std::string& token) {
  auto it = identities().find(token);
  if (it == identities().end()) return std::nullopt;
  return it->second;
}

// The Node authorizer's selector rule: a node lists and watches only the pods bound to
// it, which it shows by a field selector term spec.nodeName=<node> (= or ==).
bool nodeListsItsOwnPods(const UserIdentity& user, const AccessAttributes& a) {
  constexpr std::string_view kNodePrefix = "system:node:";
  if (std::find(user.groups.begin(), user.groups.end(), "system:nodes") == user.groups.end()) return false;
  if (user.name.rfind(kNodePrefix, 0) != 0 || !a.resource_request || !a.group.empty() || a.resource != "pods" ||
      !a.subresource.empty() || (a.verb != "list" && a.verb != "watch")) {
    return false;
  }
  const std::string node = user.name.substr(kNodePrefix.size());
  std::string_view rest = a.field_selector;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view term = rest.substr(0, comma);
    if (term == "spec.nodeName=" + node || term == "spec.nodeName==" + node) return true;
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return false;
}

bool isAllowed(const UserIdentity& user, const AccessAttributes& a) {
  if (nodeListsItsOwnPods(user, a)) return true;
  for (const auto& r : rules()) {
    bool subject = std::find(r.users.begin(), r.users.end(), user.name) != r.users.end();
    for (const auto& g : user.groups) subject = subject || std::find(r.groups.begin(), r.groups.end(), g) != r.groups.end();
    if (!subject || !matches(r.verbs, a.verb)) continue;
    if (r.non_resource) {
      if (!a.resource_request &&
          std::find(r.excluded_paths.begin(), r.excluded_paths.end(), a.path) == r.excluded_paths.end())
        return true;
      continue;
    }
    if (!a.resource_request) continue;
    const std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
    if (!matches(r.api_groups, a.group) || !matches(r.resources, resource)) continue;
    if (!r.ns.empty() && r.ns != a.ns) continue;
    return true;
  }
  return false;
}

ApiError forbidden(const UserIdentity& user, const AccessAttributes& a) {
  std::string why;
  if (!a.resource_request) {
    why = "User " + goQuote(user.name) + " cannot " + a.verb + " path " + goQuote(a.path);
    return ApiError{403, "Forbidden", "forbidden: " + why};
  }
  const std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  why = "User " + goQuote(user.name) + " cannot " + a.verb + " resource " + goQuote(resource) + " in API group " +
        goQuote(a.group) + (a.ns.empty() ? " at the cluster scope" : " in the namespace " + goQuote(a.ns));
  // apierrors.NewForbidden: the GroupResource (without the subresource), then the object's name.
  const std::string qualified = a.group.empty() ? a.resource : a.resource + "." + a.group;
  ApiError e{403, "Forbidden", ""};
  e.message = a.name.empty() ? qualified + " is forbidden: " + why : qualified + " " + goQuote(a.name) + " is forbidden: " + why;
  e.name = a.name;
  e.group = a.group;
  e.kind = a.resource;
  return e;
}

ApiError unauthorized() { return ApiError{401, "Unauthorized", "Unauthorized"}; }

AccessAttributes attributesOf(const HttpRequest& req, const RequestInfo& info) {
  AccessAttributes a;
  if (!info.is_resource_request) {
    a.resource_request = false;
    a.verb = lower(req.method == "HEAD" ? "GET" : req.method);
    a.path = req.path;
    return a;
  }
  a.verb = info.verb;
  a.group = info.group;
  a.version = info.version;
  a.resource = info.resource;
  a.subresource = info.subresource;
  a.ns = info.ns;
  a.name = info.name;
  // RequestInfoFactory: a namespace object is in its own namespace.
  if (a.resource == "namespaces" && a.ns.empty()) a.ns = a.name;
  if (a.verb == "list" || a.verb == "watch" || a.verb == "deletecollection") {
    if (const std::string* fs = req.param("fieldSelector")) a.field_selector = *fs;
  }
  // ... and a list or watch of one name (fieldSelector metadata.name=x) names it.
  if ((a.verb == "list" || a.verb == "watch") && a.name.empty()) {
    if (const std::string* fs = req.param("fieldSelector"); fs && fs->find(',') == std::string::npos) {
      for (const char* prefix : {"metadata.name==", "metadata.name="})
        if (fs->rfind(prefix, 0) == 0) {
          a.name = fs->substr(std::string(prefix).size());
          break;
        }
    }
  }
  return a;
}

WebSocketProtocolToken webSocketProtocolToken(const HttpRequest& req) {
  constexpr std::string_view kPrefix = "base64url.bearer.authorization.k8s.io.";
  WebSocketProtocolToken out;
  bool saw_token = false;
  size_t others = 0;
  // Every Sec-WebSocket-Protocol value, split at commas (headers holds them joined).
  const std::string all = req.header("sec-websocket-protocol");
  for (size_t pos = 0; pos <= all.size() && req.headers.count("sec-websocket-protocol");) {
    const size_t comma = std::min(all.find(',', pos), all.size());
    const std::string protocol(goTrimSpace(std::string_view(all).substr(pos, comma - pos)));
    pos = comma + 1;
    if (protocol.rfind(kPrefix, 0) != 0) {
      out.other_protocols += (others++ ? "," : "") + protocol;
      continue;
    }
    if (saw_token) return {"", "", true};  // "multiple base64.bearer.authorization tokens specified"
    saw_token = true;
    std::string error;
    auto decoded = base64UrlDecode(protocol.substr(kPrefix.size()), error);
    if (!decoded || !validUtf8(*decoded)) return {"", "", true};
    out.token = *decoded;
  }
  if (!out.token.empty() && others == 0) out.malformed = true;  // "missing additional subprotocol"
  return out;
}

AuthOutcome authenticateRequest(const HttpRequest& req) {
  // The union of the bearer-token and the WebSocket-subprotocol authenticators: the first
  // that succeeds wins; when neither does, 401.
  const std::string header = req.header("authorization");
  std::optional<UserIdentity> user;
  std::optional<std::string> websocket_protocols;
  if (header.size() > 7 && lower(header.substr(0, 7)) == "bearer ") user = authenticateToken(header.substr(7));
  if (!user && websocket::isWebSocketRequest(req)) {
    const auto t = webSocketProtocolToken(req);
    if (!t.malformed && !t.token.empty() && (user = authenticateToken(t.token))) websocket_protocols = t.other_protocols;
  }
  if (!user) return {std::nullopt, unauthorized(), std::nullopt};
  AuthOutcome outcome = impersonate(req, *user);
  if (!outcome.error) outcome.websocket_protocols = std::move(websocket_protocols);
  return outcome;
}

std::pair<int, std::string> tokenReview(const std::string& body) {
  rapidjson::Document doc;
  if (auto err = parseJsonLikeGo(body, doc)) return {400, badReview(*err).toJson()};
  const std::string token = doc.IsObject() && doc.HasMember("spec") ? stringMember(doc["spec"], "token") : "";
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("kind"); w.String("TokenReview");
  w.Key("apiVersion"); w.String("authentication.k8s.io/v1");
  w.Key("metadata"); w.StartObject(); w.Key("creationTimestamp"); w.Null(); w.EndObject();
  w.Key("spec"); w.StartObject(); w.Key("token"); w.String(token.c_str()); w.EndObject();
  w.Key("status");
  w.StartObject();
  if (auto user = authenticateToken(token)) {
    w.Key("authenticated"); w.Bool(true);
    w.Key("user");
    w.StartObject();
    w.Key("username"); w.String(user->name.c_str());
    w.Key("uid"); w.String(user->uid.c_str());
    w.Key("groups"); w.StartArray(); for (const auto& g : user->groups) w.String(g.c_str()); w.EndArray();
    if (!user->extra.empty()) {
      w.Key("extra");
      w.StartObject();
      for (const auto& [k, vs] : user->extra) {
        w.Key(k.c_str());
        w.StartArray(); for (const auto& v : vs) w.String(v.c_str()); w.EndArray();
      }
      w.EndObject();
    }
    w.EndObject();
  } else {
    w.Key("user"); w.StartObject(); w.EndObject();
    w.Key("error"); w.String("invalid bearer token");
  }
  w.EndObject();
  w.EndObject();
  return {201, sb.GetString()};
}

std::pair<int, std::string> subjectAccessReview(const std::string& body) {
  rapidjson::Document doc;
  if (auto err = parseJsonLikeGo(body, doc)) return {400, badReview(*err).toJson()};
  if (!doc.IsObject() || !doc.HasMember("spec") || !doc["spec"].IsObject())
    return {400, badReview("spec is required").toJson()};
  const rapidjson::Value& spec = doc["spec"];
  UserIdentity user{stringMember(spec, "user"), stringMember(spec, "uid"), stringArray(spec, "groups"), {}};
  AccessAttributes a;
  if (spec.HasMember("resourceAttributes") && spec["resourceAttributes"].IsObject()) {
    const auto& ra = spec["resourceAttributes"];
    a.verb = stringMember(ra, "verb");
    a.group = stringMember(ra, "group");
    a.version = stringMember(ra, "version");
    a.resource = stringMember(ra, "resource");
    a.subresource = stringMember(ra, "subresource");
    a.ns = stringMember(ra, "namespace");
    a.name = stringMember(ra, "name");
    // AuthorizeWithSelectors: a raw selector, or requirements (In with one value reads as =).
    if (ra.HasMember("fieldSelector") && ra["fieldSelector"].IsObject()) {
      const auto& fs = ra["fieldSelector"];
      a.field_selector = stringMember(fs, "rawSelector");
      if (fs.HasMember("requirements") && fs["requirements"].IsArray()) {
        a.field_selector.clear();
        for (const auto& r : fs["requirements"].GetArray()) {
          const std::vector<std::string> values = stringArray(r, "values");
          if (stringMember(r, "operator") != "In" || values.size() != 1) continue;
          a.field_selector += (a.field_selector.empty() ? "" : ",") + stringMember(r, "key") + "=" + values[0];
        }
      }
    }
  } else if (spec.HasMember("nonResourceAttributes") && spec["nonResourceAttributes"].IsObject()) {
    a.resource_request = false;
    a.verb = stringMember(spec["nonResourceAttributes"], "verb");
    a.path = stringMember(spec["nonResourceAttributes"], "path");
  } else {
    return {422, ApiError{422, "Invalid", "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: "
                                          "Invalid value: \"null\": exactly one of nonResourceAttributes or "
                                          "resourceAttributes must be specified"}
                     .toJson()};
  }
  const bool allowed = isAllowed(user, a);
  // The response echoes the request's spec, as the apiserver does.
  rapidjson::Document out(rapidjson::kObjectType);
  auto& alloc = out.GetAllocator();
  out.AddMember("kind", "SubjectAccessReview", alloc);
  out.AddMember("apiVersion", "authorization.k8s.io/v1", alloc);
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("creationTimestamp", rapidjson::Value(), alloc);
  out.AddMember("metadata", meta, alloc);
  out.AddMember("spec", rapidjson::Value(spec, alloc), alloc);
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("allowed", allowed, alloc);
  if (allowed) status.AddMember("reason", "allowed by a kube-test-apiserver rule", alloc);
  out.AddMember("status", status, alloc);
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  out.Accept(w);
  return {201, sb.GetString()};
}

}  // namespace testapi
