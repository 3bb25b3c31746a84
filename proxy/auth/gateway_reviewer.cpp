// The gateway's admission on the event loop (see the header).
#include "proxy/auth/gateway_reviewer.h"

#include <variant>

#include <spdlog/spdlog.h>

#include "proxy/answers.h"
#include "proxy/auth/client_certificate.h"
#include "proxy/auth/gateway_admission.h"
#include "proxy/observability/proxy_metrics.h"
#include "proxy/server/client_limiter.h"
#include "proxy/server/server_options.h"
#include "proxy/server/serving_tls.h"
#include "proxy/upstream/upstream_pool.h"
#include "proxy/websocket/handshake.h"

namespace proxy::auth {

asio::awaitable<std::optional<unsigned>> GatewayReviewer::admit(Request& req, io::ServerStream& out,
                                                                ConnectionCertificate& identity,
                                                                bool discovery_from_memory, bool has_cache,
                                                                bool& cacheable) {
  std::optional<UserInfo> user = certificateUserNow(identity);
  std::string token = GatewayAuth::bearerToken(req.headers);
  if (token.empty() && req.websocket) {
    // A browser cannot set Authorization: its token comes as a subprotocol, which the
    // apiserver's WebSocket authenticator reads when no header authenticated first.
    ProtocolToken offered = protocolToken(req.headers);
    if (offered.error) {
      const Status unauthorized = unauthorizedStatus();
      co_return co_await io::writeStatus(out, req, unauthorized);
    }
    token = std::move(offered.token);
    req.token_in_subprotocol = !token.empty();
  }
  const bool impersonating = GatewayAuth::wantsImpersonation(req.headers);
  if (user) {
    if (auto refusal = admitCertificateUser(*user, impersonating, req.info, req.upstream_identity_headers)) {
      co_return co_await io::writeStatus(out, req, *refusal);
    }
  } else if (!token.empty()) {
    if (refuseNewToken(s_.gateway, s_.failures, token, req.client_ip)) {
      const Status too_many = tooManyRequestsStatus();
      co_return co_await io::writeStatus(out, req, too_many);
    }
    const char* source = "";
    const TokenReviewResult review = co_await authenticateToken(token, source);
    auto reviewed = afterTokenReview(review, std::string_view(source) == "upstream", s_.failures, token, req.client_ip);
    if (const Status* refusal = std::get_if<Status>(&reviewed)) co_return co_await io::writeStatus(out, req, *refusal);
    user = std::get<UserInfo>(std::move(reviewed));
    req.upstream_token = token;  // pass-through requests go up as the caller
  }
  if (!user) {
    const Status unauthorized = unauthorizedStatus();
    co_return co_await io::writeStatus(out, req, unauthorized);
  }
  req.caller = user->name;

  // Authorization of what the proxy answers itself: the cache's answers, /metrics and
  // /debug/status.
  cacheable = cacheableForCaller(req.info, impersonating, has_cache) || (!impersonating && discovery_from_memory);
  if (!cacheable && req.info.path != "/metrics" && req.info.path != "/debug/status") co_return std::nullopt;
  const AccessAttributes attrs = GatewayAuth::attributesOf(req.info, req.method);
  const AccessReviewResult access = co_await authorize(*user, attrs);
  if (auto refusal = afterAccessReview(access, *user, attrs)) co_return co_await io::writeStatus(out, req, *refusal);
  co_return std::nullopt;
}

asio::awaitable<TokenReviewResult> GatewayReviewer::authenticateToken(const std::string& token, const char*& source) {
  const std::string key = GatewayAuth::tokenKey(token);
  auto keep = [](const TokenReviewResult&) { return true; };
  const TokenReviewResult result = co_await review(
      s_.gateway.tokens(), s_.token_flights, key, kTokenReviewPath, [&] { return tokenReviewRequest(token); },
      parseTokenReview, keep, source);
  s_.metrics.gatewayDecision("TokenReview", source,
                             !result.definitive ? "error" : result.authenticated ? "allowed" : "denied");
  if (!result.authenticated) spdlog::debug("token review: not authenticated: {}", result.error);
  co_return result;
}

asio::awaitable<AccessReviewResult> GatewayReviewer::authorize(const UserInfo& user, const AccessAttributes& attrs) {
  const std::string key = GatewayAuth::accessKey(user, attrs);
  const char* source = "";
  auto keep = [&](const AccessReviewResult& result) { return GatewayAuth::keepsDecision(user, result); };
  const AccessReviewResult access = co_await review(
      s_.gateway.access(), s_.access_flights, key, kSubjectAccessReviewPath,
      [&] { return subjectAccessReviewRequest(user, attrs); }, parseSubjectAccessReview, keep, source);
  s_.metrics.gatewayDecision("SubjectAccessReview", source,
                             !access.definitive ? "error" : access.allowed ? "allowed" : "denied");
  co_return access;
}

std::optional<UserInfo> GatewayReviewer::certificateUserNow(ConnectionCertificate& identity) {
  if (!identity.user || !s_.tls) return identity.user;
  std::shared_ptr<asio::ssl::context> current = s_.tls->current();
  if (current == identity.verified_with && std::time(nullptr) < identity.not_after) return identity.user;
  if (!identity.ssl || !certificateStillVerifies(identity.ssl, current->native_handle())) {
    spdlog::info("the client certificate of {} no longer verifies (expired, or its CA was rotated out)",
                 identity.user->name);
    identity.user.reset();
    return std::nullopt;
  }
  identity.verified_with = std::move(current);
  return identity.user;
}

template <class Result, class Body, class Parse, class Keep>
asio::awaitable<Result> GatewayReviewer::review(DecisionCache<Result>& cache, ReviewFlights<Result>& flights,
                                                const std::string& key, const char* path, Body body, Parse parse,
                                                Keep keep, const char*& source) {
  if (std::optional<Result> remembered = cache.find(key)) {
    source = "cache";
    co_return *remembered;
  }
  auto fetch = [&]() -> asio::awaitable<Result> {
    Result result;
    const ClientLimiter::Slot slot = s_.review_limiter.tryAcquire("");
    if (!slot) {
      // Not asked, not remembered: the caller answers 429 and its client retries.
      s_.metrics.limitRefused("reviews");
      result.throttled = true;
      result.error = "too many reviews in flight";
      co_return result;
    }
    try {
      const io::UpstreamReply reply =
          co_await io::callUpstream(pool_, "POST", path, body(), s_.options.review_timeout, 1 << 20, s_.options);
      result = parse(reply.code, reply.body);
    } catch (const io::UpstreamFailure& failure) {
      result.error = failure.what();
    }
    // Like the apiserver's webhook authenticator and authorizer, an unanswered review
    // decides nothing (401, or 503 for access) and is not remembered.
    if (result.definitive && keep(result)) cache.put(key, result);
    co_return result;
  };
  Result unanswered;
  unanswered.error = "the shared review did not complete";
  bool shared = false;
  Result result = co_await flights.run(key, fetch, unanswered, shared);
  source = shared ? "shared" : "upstream";
  co_return result;
}

}  // namespace proxy::auth
