#pragma once
// GatewayReviewer: the gateway's admission of one request on the event loop: the client
// certificate the connection verified (checked again once it expired or the client CA was
// reloaded), else the bearer token by TokenReview; then, for what the proxy answers
// itself, a SubjectAccessReview. Reviews are remembered (DecisionCache) and shared while
// in flight (ReviewFlights). The decisions between the reviews are plain code
// (gateway_admission.h). Lives on the request's io thread.

#include <ctime>
#include <memory>
#include <optional>

#include "proxy/asio_beast.h"
#include "proxy/auth/failure_limiter.h"
#include "proxy/auth/gateway_auth.h"
#include "proxy/auth/review_flights.h"
#include "proxy/auth/reviews.h"
#include "proxy/auth/user_info.h"
#include "proxy/request.h"
#include "proxy/stream.h"

namespace proxy {
class ProxyMetrics;
class ClientLimiter;
class ServingTls;
struct ServerOptions;
}  // namespace proxy

namespace proxy::io {
class UpstreamPool;
}

namespace proxy::auth {

namespace asio = boost::asio;

// What the gateway's reviews share across requests (ServerContext owns them).
struct GatewayServices {
  GatewayAuth& gateway;
  FailureLimiter& failures;
  ReviewFlights<TokenReviewResult>& token_flights;
  ReviewFlights<AccessReviewResult>& access_flights;
  ClientLimiter& review_limiter;  // reviews in flight upstream
  ProxyMetrics& metrics;
  const ServerOptions& options;
  ServingTls* tls;  // the serving TLS (client CA reloads); null: plain HTTP
};

// A connection's verified client certificate (an HTTP/2 stream's is its connection's).
struct ConnectionCertificate {
  std::optional<UserInfo> user;
  std::time_t not_after = 0;
  std::shared_ptr<asio::ssl::context> verified_with;  // the serving context it was verified with
  SSL* ssl = nullptr;                                // the connection's TLS session
};

class GatewayReviewer {
 public:
  GatewayReviewer(GatewayServices services, io::UpstreamPool& pool) : s_(services), pool_(pool) {}

  // Authenticates `req` and, when the proxy may answer it itself (`may_answer`: from the
  // cache, discovery, /metrics, /debug/status), authorizes it. nullopt: go on, with
  // req.caller and the identity pass-through requests carry set; otherwise the refusal's
  // code, already written to `out`. `cacheable` says whether the cache may answer it.
  asio::awaitable<std::optional<unsigned>> admit(Request& req, io::ServerStream& out, ConnectionCertificate& identity,
                                                 bool discovery_from_memory, bool has_cache, bool& cacheable);

 private:
  // `source`: where the answer came from (cache, shared, upstream).
  asio::awaitable<TokenReviewResult> authenticateToken(const std::string& token, const char*& source);
  asio::awaitable<AccessReviewResult> authorize(const UserInfo& user, const AccessAttributes& attrs);
  std::optional<UserInfo> certificateUserNow(ConnectionCertificate& identity);
  // A review's answer: from `cache`, else from the upstream (`path`, body from `body()`,
  // answer read by `parse`), asked once per key at a time; definitive answers are
  // remembered when `keep` says so. `source` says which: cache, shared or upstream.
  template <class Result, class Body, class Parse, class Keep>
  asio::awaitable<Result> review(DecisionCache<Result>& cache, ReviewFlights<Result>& flights, const std::string& key,
                                 const char* path, Body body, Parse parse, Keep keep, const char*& source);

  GatewayServices s_;
  io::UpstreamPool& pool_;
};

}  // namespace proxy::auth
