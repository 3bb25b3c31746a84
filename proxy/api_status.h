#pragma once
// Failures the proxy answers itself, and the one place that turns them into an
// HTTP status code plus a Kubernetes metav1.Status body (contract E1/E2/E3).

#include <string>
#include <vector>

#include "proxy/status_negotiation.h"

namespace proxy {

// Mirrors apiserver StatusReasons the proxy can produce.
enum class Reason {
  BadRequest,          // 400
  Unauthorized,        // 401: gateway mode, no valid credential
  Forbidden,           // 403: gateway mode, the SubjectAccessReview said no
  NotFound,            // 404
  NotAcceptable,       // 406
  Expired,             // 410
  RequestEntityTooLarge,  // 413: body beyond max_request_body_bytes
  Invalid,             // 422
  TooManyRequests,     // 429
  Internal,            // 500, reason omitted like a non-Status Go error
  ServiceUnavailable,  // 503: upstream unreachable, TLS failure
  Timeout,             // 504: upstream connect timed out
};

// One metav1.StatusCause; `type` goes on the wire as "reason".
struct ApiStatusCause {
  std::string type;
  std::string message;
  std::string field;
};

struct ApiStatus {
  Reason reason = Reason::Internal;
  std::string message;
  int retry_after_seconds = 0;  // > 0 adds details.retryAfterSeconds and Retry-After
  // details.name/group/kind/causes; each omitted when empty (E1). `kind` is the plural
  // resource for NotFound (R10).
  std::string details_name;
  std::string details_group;
  std::string details_kind;
  std::vector<ApiStatusCause> causes;
};

struct HttpAnswer {
  unsigned code = 500;
  std::string content_type = "application/json";
  std::string body;
  int retry_after_seconds = 0;  // sent as Retry-After when > 0
};

// The only Reason -> (code, Status JSON) mapping in the proxy. `encoding` comes from
// statusEncodingFor(the request's Accept): the apiserver writes an error as raw indented
// JSON when the client accepts no plain media type (status_negotiation.h).
HttpAnswer toHttpAnswer(const ApiStatus& status, StatusEncoding encoding = StatusEncoding::Negotiated);

// Re-encodes `answer`, whose body is a Status in the serializer's compact form (with
// its trailing newline), for `encoding`. For Status bodies built elsewhere.
void encodeStatus(HttpAnswer& answer, StatusEncoding encoding);

// JSON string literal (with quotes) for `s`, escaped like Go's encoding/json
// (including <, >, & as \u003c, \u003e, \u0026).
std::string jsonQuote(const std::string& s);

}  // namespace proxy
