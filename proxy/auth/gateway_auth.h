#pragma once
// Gateway mode's authentication and authorization decisions, without the network: which
// credential a request carries, the cache keys of its reviews, the decision caches, and
// the 401/403 the apiserver would answer. The admission steps (gateway_admission.h) ask
// here first, and the session posts a review to the upstream only on a cache miss.
//
// Keys never hold a raw token: a SHA-256 of it, so a heap dump shows no credential.

#include <chrono>
#include <optional>
#include <string>

#include "proxy/api_status.h"
#include "proxy/auth/decision_cache.h"
#include "proxy/auth/reviews.h"
#include "proxy/auth/user_info.h"
#include "proxy/http/header_filter.h"
#include "proxy/request_info.h"

namespace proxy::auth {

struct GatewayAuthOptions {
  // Both outcomes of a TokenReview are kept this long (a revoked token keeps working
  // through the proxy for at most this long; an invalid one costs one review per ttl).
  std::chrono::milliseconds authentication_ttl{30000};
  // Allowed and denied SubjectAccessReviews are kept this long (RBAC changes apply
  // through the proxy at most this late).
  std::chrono::milliseconds authorization_ttl{10000};
  size_t max_entries = 10000;  // per cache
};

class GatewayAuth {
 public:
  explicit GatewayAuth(const GatewayAuthOptions& options, const cache::Clock& clock = cache::RealClock::instance());

  // The bearer token of an "Authorization: Bearer <token>" header, "" when absent.
  static std::string bearerToken(const HeaderFields& headers);
  // True when the client asks for impersonation (Impersonate-* headers).
  static bool wantsImpersonation(const HeaderFields& headers);
  static std::string tokenKey(const std::string& token);
  static std::string accessKey(const UserInfo& user, const AccessAttributes& attrs);
  // Whether a definitive SubjectAccessReview outcome for `user` may be reused for the
  // authorization TTL. Not a node's denial: the Node authorizer decides from the graph of
  // pods bound to the node, which changes with every binding, and a kubelet asks for a new
  // pod's secrets and configmaps as soon as it sees the pod, often before the apiserver's
  // graph has it; a remembered denial held the pod's volumes back for the whole TTL and the
  // kubelet's back-off after it (pod startup p99 23 s through the gateway at 50 nodes, 6 s
  // directly). RBAC's answers change only when an operator changes RBAC.
  static bool keepsDecision(const UserInfo& user, const AccessReviewResult& result);
  // Whether `info`'s namespace and name could name an object at all: the namespace a
  // DNS-1123 label (ValidateNamespaceName), the name one printable-ASCII path segment of
  // at most 253 bytes (the longest name object validation lets through for the types the
  // proxy caches). Anything else is left to the upstream unreviewed, so request paths do
  // not choose the size of review keys (issue 16, finding 5).
  static bool reviewableNames(const RequestInfo& info);
  // What the apiserver's RequestInfo and authorization filter would check for `info`.
  static AccessAttributes attributesOf(const RequestInfo& info, const std::string& method);

  DecisionCache<TokenReviewResult>& tokens() { return tokens_; }
  DecisionCache<AccessReviewResult>& access() { return access_; }

 private:
  DecisionCache<TokenReviewResult> tokens_;
  DecisionCache<AccessReviewResult> access_;
};

// 401 as the apiserver's authentication filter answers it.
Status unauthorizedStatus();
// 403 as responsewriters.Forbidden words it (apierrors.NewForbidden around
// forbiddenMessage), with the authorizer's reason appended when there is one.
Status forbiddenStatus(const UserInfo& user, const AccessAttributes& attrs, const std::string& reason);

}  // namespace proxy::auth
