#pragma once
// The one vocabulary for failures, from the store to the wire: a metav1.Status as the
// apiserver writes it (contract E1/E2). The store, the list-options parser, the watch
// fan-out and the proxy all fail with a `Status`; statusJson() is the only encoder of
// its body and httpCode()/wireReason() the only Reason -> code mapping.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cache {

// metav1.StatusReason values the proxy can produce (E2).
enum class Reason {
  BadRequest,             // 400
  Unauthorized,           // 401: gateway mode, no valid credential
  Forbidden,              // 403: gateway mode, the SubjectAccessReview said no
  NotFound,               // 404
  NotAcceptable,          // 406
  Expired,                // 410: a resourceVersion older than the history (R8, W5)
  RequestEntityTooLarge,  // 413: body beyond max_request_body_bytes
  Invalid,                // 422
  TooManyRequests,        // 429
  Internal,               // 500, reason omitted like a non-Status Go error
  ServiceUnavailable,     // 503: upstream unreachable, TLS failure
  Timeout,                // 504: upstream connect timed out, RV too large (R7)
};

// One metav1.StatusCause; `type` goes on the wire as "reason".
struct StatusCause {
  std::string type;
  std::string message;
  std::string field;
};

struct Status {
  Reason reason = Reason::Internal;
  std::string message;
  int retry_after_seconds = 0;  // > 0 adds details.retryAfterSeconds (and Retry-After)
  // details.name/group/kind/causes; each omitted when empty (E1). `kind` is the plural
  // resource for NotFound (R10).
  std::string details_name;
  std::string details_group;
  std::string details_kind;
  std::vector<StatusCause> causes;
};

// The HTTP status code of `reason` (E2).
unsigned httpCode(Reason reason);
// The reason as written in the body; empty for Internal, which the body omits.
std::string_view wireReason(Reason reason);

// The Status object as the apiserver's JSON serializer writes it: compact, members in
// metav1.Status order, strings escaped like Go's encoding/json, no trailing newline.
// A response body adds "\n"; a watch ERROR event embeds it as is (W5).
std::string statusJson(const Status& status);

// The same Status as the apiserver's protobuf serializer writes it (N2): the `k8s\0`
// envelope {apiVersion "v1", kind "Status"} around metav1.Status, every non-pointer field
// written even when empty, details only when the JSON form has them.
std::string statusProtobuf(const Status& status);

// 504 after the bounded wait for a future resourceVersion (R7, W5): reason Timeout,
// cause ResourceVersionTooLarge, retryAfterSeconds 1.
Status tooLargeResourceVersionStatus(uint64_t requested, uint64_t current);

}  // namespace cache
