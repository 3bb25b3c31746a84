#include "proxy/auth/gateway_admission.h"

#include <spdlog/spdlog.h>

#include "proxy/answers.h"

namespace proxy::auth {

std::optional<Status> admitCertificateUser(const UserInfo& user, bool impersonating, const RequestInfo& info,
                                              HeaderList& identity_headers) {
  // The proxy impersonates a certificate user with its own credentials; impersonation
  // cannot be chained, so such a caller cannot ask for more.
  if (impersonating) {
    return forbiddenStatus(user, {false, "impersonate", "", "", "", "", "", "", info.path},
                           "client-certificate users cannot impersonate through kube-cache-proxy");
  }
  identity_headers.emplace_back("Impersonate-User", user.name);
  for (const auto& group : user.groups) {
    if (group != "system:authenticated") identity_headers.emplace_back("Impersonate-Group", group);
  }
  return std::nullopt;
}

bool refuseNewToken(GatewayAuth& gateway, FailureLimiter& failures, const std::string& token,
                    const std::string& client_ip) {
  const std::string key = GatewayAuth::tokenKey(token);
  return !gateway.tokens().find(key) && !failures.succeededBefore(key) && failures.exhausted(client_ip);
}

std::variant<UserInfo, Status> afterTokenReview(const TokenReviewResult& review, bool reviewed_now,
                                                   FailureLimiter& failures, const std::string& token,
                                                   const std::string& client_ip) {
  if (review.throttled) return tooManyRequestsStatus();
  if (review.authenticated) {
    failures.succeeded(GatewayAuth::tokenKey(token));
    return review.user;
  }
  // A remembered denial cost no review: it does not spend the address's budget, so an
  // attacker repeating a bad token cannot exhaust it for the address's other users.
  if (reviewed_now) failures.failed(client_ip);
  return unauthorizedStatus();
}

bool cacheableForCaller(const RequestInfo& info, bool impersonating, bool has_cache) {
  return !impersonating && has_cache && info.is_resource_request && info.subresource.empty() &&
         (info.verb == "get" || info.verb == "list" || info.verb == "watch") && GatewayAuth::reviewableNames(info);
}

std::optional<Status> afterAccessReview(const AccessReviewResult& access, const UserInfo& user,
                                           const AccessAttributes& attrs) {
  if (access.allowed) return std::nullopt;
  if (access.throttled) return tooManyRequestsStatus();
  if (!access.definitive) {
    // Fail closed, and say why: the apiserver cannot be asked.
    spdlog::warn("subject access review failed: {}", access.error);
    Status status;
    status.reason = Reason::ServiceUnavailable;
    status.message = "authorization check failed: " + access.error;
    return status;
  }
  // Denied: exactly the 403 the apiserver gives this caller. A cluster-wide LIST or
  // WATCH by a caller allowed only in some namespaces is denied here too, not filtered.
  return forbiddenStatus(user, attrs, access.reason);
}

}  // namespace proxy::auth
