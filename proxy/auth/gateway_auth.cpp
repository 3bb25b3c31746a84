#include "proxy/auth/gateway_auth.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "cache/selectors/field_error.h"
#include "cache/selectors/name_validation.h"

namespace proxy::auth {
namespace {

using cache::goQuote;  // Go's %q, as the authorizer's messages use it

// Length-prefixed fields: no two different requests share a key.
void appendField(std::string& key, const std::string& value) {
  key += std::to_string(value.size());
  key += ':';
  key += value;
}

}  // namespace

GatewayAuth::GatewayAuth(const GatewayAuthOptions& options, const cache::Clock& clock)
    : tokens_(options.authentication_ttl, options.max_entries, clock),
      access_(options.authorization_ttl, options.max_entries, clock) {}

std::string GatewayAuth::bearerToken(const HeaderFields& headers) {
  const std::string_view value = findHeader(headers, "Authorization");
  // The apiserver's bearer authenticator: scheme "bearer" in any case, one space-free token.
  if (value.size() < 7) return "";
  std::string scheme(value.substr(0, 7));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") return "";
  std::string_view token = value.substr(7);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.find(' ') != std::string_view::npos) return "";
  return std::string(token);
}

bool GatewayAuth::wantsImpersonation(const HeaderFields& headers) {
  for (const auto& [name, value] : headers) {
    if (name.size() >= 12 && headerNameEquals(name.substr(0, 12), "Impersonate-")) return true;
  }
  return false;
}

std::string GatewayAuth::tokenKey(const std::string& token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), digest.data(), &size, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned int i = 0; i < size; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

std::string GatewayAuth::accessKey(const UserInfo& user, const AccessAttributes& a) {
  std::string key;
  appendField(key, user.name);
  appendField(key, user.uid);
  key += std::to_string(user.groups.size()) + "g";
  for (const auto& g : user.groups) appendField(key, g);
  key += std::to_string(user.extra.size()) + "e";
  for (const auto& [k, values] : user.extra) {
    appendField(key, k);
    key += std::to_string(values.size()) + "v";
    for (const auto& v : values) appendField(key, v);
  }
  key += a.resource_request ? 'r' : 'n';
  for (const std::string* f : {&a.verb, &a.group, &a.version, &a.resource, &a.subresource, &a.namespace_, &a.name,
                               &a.path, &a.field_selector, &a.label_selector})
    appendField(key, *f);
  return key;
}

bool GatewayAuth::keepsDecision(const UserInfo& user, const AccessReviewResult& result) {
  if (result.allowed) return true;
  for (const auto& group : user.groups)
    if (group == "system:nodes") return false;
  return true;
}

bool GatewayAuth::reviewableNames(const RequestInfo& info) {
  if (!info.namespace_.empty() && !cache::isDNS1123Label(info.namespace_)) return false;
  const std::string& name = info.name;
  if (name.size() > 253 || (!name.empty() && !isValidPathSegmentName(name))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

AccessAttributes GatewayAuth::attributesOf(const RequestInfo& info, const std::string& method) {
  AccessAttributes a;
  a.resource_request = info.is_resource_request;
  if (!info.is_resource_request) {
    a.verb = info.verb.empty() ? method : info.verb;
    for (auto& c : a.verb) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    a.path = info.path;
    return a;
  }
  a.verb = info.verb;
  a.group = info.api_group;
  a.version = info.api_version;
  a.resource = info.resource;
  a.subresource = info.subresource;
  a.namespace_ = info.namespace_;
  a.name = info.name;
  a.field_selector = info.field_selector;
  a.label_selector = info.label_selector;
  return a;
}

Status unauthorizedStatus() {
  Status s;
  s.reason = Reason::Unauthorized;
  s.message = "Unauthorized";
  return s;
}

Status forbiddenStatus(const UserInfo& user, const AccessAttributes& a, const std::string& reason) {
  std::string why;
  Status s;
  s.reason = Reason::Forbidden;
  if (!a.resource_request) {
    why = "User " + goQuote(user.name) + " cannot " + a.verb + " path " + goQuote(a.path);
    s.message = "forbidden: " + why + (reason.empty() ? "" : ": " + reason);
    return s;
  }
  const std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  why = "User " + goQuote(user.name) + " cannot " + a.verb + " resource " + goQuote(resource) + " in API group " +
        goQuote(a.group) + (a.namespace_.empty() ? " at the cluster scope" : " in the namespace " + goQuote(a.namespace_));
  if (!reason.empty()) why += ": " + reason;
  const std::string qualified = a.group.empty() ? a.resource : a.resource + "." + a.group;
  s.message = a.name.empty() ? qualified + " is forbidden: " + why : qualified + " " + goQuote(a.name) + " is forbidden: " + why;
  s.details_name = a.name;
  s.details_group = a.group;
  s.details_kind = a.resource;
  return s;
}

}  // namespace proxy::auth
