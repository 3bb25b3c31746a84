#pragma once
// Gateway admission: the steps that decide whether a request gets in, between the two
// reviews the upstream answers. Authentication takes a verified client certificate first,
// then a bearer token (the apiserver's order); nothing else is anonymous-allowed through
// the gateway. Authorization is reviewed only for what the proxy answers itself.
// Plain code (no Asio): the session strings these steps together around its
// TokenReview and SubjectAccessReview (proxy_server.cpp).

#include <optional>
#include <string>
#include <variant>

#include "proxy/api_status.h"
#include "proxy/auth/failure_limiter.h"
#include "proxy/auth/gateway_auth.h"
#include "proxy/auth/reviews.h"
#include "proxy/auth/user_info.h"
#include "proxy/http/header_filter.h"
#include "proxy/request_info.h"

namespace proxy::auth {

// A client-certificate user: refused when it asks for impersonation, else admitted with
// the Impersonate-* headers its pass-through requests carry (added to `identity_headers`).
std::optional<Status> admitCertificateUser(const UserInfo& user, bool impersonating, const RequestInfo& info,
                                              HeaderList& identity_headers);

// An address that keeps presenting tokens the upstream refuses gets the apiserver's own
// 429 for new tokens instead of costing a TokenReview each (issue 16, finding 8): true
// when `token` is not remembered, never succeeded before, and `client_ip` has no failures
// left.
bool refuseNewToken(GatewayAuth& gateway, FailureLimiter& failures, const std::string& token,
                    const std::string& client_ip);

// The user a TokenReview authenticated, or the refusal: 429 when it was not asked
// (throttled), 401 when it failed (counted against `client_ip` when the review was asked
// now, `reviewed_now`, rather than remembered). A success is remembered for `token`.
std::variant<UserInfo, Status> afterTokenReview(const TokenReviewResult& review, bool reviewed_now,
                                                   FailureLimiter& failures, const std::string& token,
                                                   const std::string& client_ip);

// Whether the proxy may answer `info` from its cache, and so reviews it. A client
// impersonating someone else is left to the upstream (which checks the impersonation),
// so never served from here. A namespace or name no object can have is the upstream's to
// answer (its own 404 or 400, after its own review): the proxy reviews only what it could
// serve.
bool cacheableForCaller(const RequestInfo& info, bool impersonating, bool has_cache);

// Nothing when the SubjectAccessReview allowed the request, else the refusal: 429 when it
// was not asked, 503 when it could not be (fail closed, and say why), otherwise exactly
// the 403 the apiserver gives this caller.
std::optional<Status> afterAccessReview(const AccessReviewResult& access, const UserInfo& user,
                                           const AccessAttributes& attrs);

}  // namespace proxy::auth
