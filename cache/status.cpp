#include "cache/status.h"

#include "cache/go_json.h"

namespace cache {

unsigned httpCode(Reason reason) {
  switch (reason) {
    case Reason::BadRequest: return 400;
    case Reason::Unauthorized: return 401;
    case Reason::Forbidden: return 403;
    case Reason::NotFound: return 404;
    case Reason::NotAcceptable: return 406;
    case Reason::Expired: return 410;
    case Reason::RequestEntityTooLarge: return 413;
    case Reason::Invalid: return 422;
    case Reason::TooManyRequests: return 429;
    case Reason::Internal: return 500;
    case Reason::ServiceUnavailable: return 503;
    case Reason::Timeout: return 504;
  }
  return 500;
}

std::string_view wireReason(Reason reason) {
  switch (reason) {
    case Reason::BadRequest: return "BadRequest";
    case Reason::Unauthorized: return "Unauthorized";
    case Reason::Forbidden: return "Forbidden";
    case Reason::NotFound: return "NotFound";
    case Reason::NotAcceptable: return "NotAcceptable";
    case Reason::Expired: return "Expired";
    case Reason::RequestEntityTooLarge: return "RequestEntityTooLarge";
    case Reason::Invalid: return "Invalid";
    case Reason::TooManyRequests: return "TooManyRequests";
    case Reason::Internal: return "";
    case Reason::ServiceUnavailable: return "ServiceUnavailable";
    case Reason::Timeout: return "Timeout";
  }
  return "";
}

namespace {

// metav1.StatusDetails in its field order: name, group, kind, causes, retryAfterSeconds;
// each member omitted when empty. Empty when there is nothing to say.
std::string detailsJson(const Status& status) {
  std::string details;
  auto member = [&details](std::string_view key, const std::string& json) {
    details += details.empty() ? "{\"" : ",\"";
    details.append(key).append("\":").append(json);
  };
  if (!status.details_name.empty()) member("name", goJsonString(status.details_name));
  if (!status.details_group.empty()) member("group", goJsonString(status.details_group));
  if (!status.details_kind.empty()) member("kind", goJsonString(status.details_kind));
  if (!status.causes.empty()) {
    std::string causes = "[";
    for (const StatusCause& c : status.causes) {
      if (causes.size() > 1) causes += ',';
      // metav1.StatusCause: reason, message, field, all omitempty.
      std::string cause;
      auto add = [&cause](std::string_view key, const std::string& value) {
        if (value.empty()) return;
        cause += cause.empty() ? "{\"" : ",\"";
        cause.append(key).append("\":").append(goJsonString(value));
      };
      add("reason", c.type);
      add("message", c.message);
      add("field", c.field);
      causes += cause.empty() ? "{}" : cause + "}";
    }
    member("causes", causes + "]");
  }
  if (status.retry_after_seconds > 0) member("retryAfterSeconds", std::to_string(status.retry_after_seconds));
  return details.empty() ? details : details + "}";
}

}  // namespace

std::string statusJson(const Status& status) {
  // Field order and omission rules follow metav1.Status as the apiserver encodes it.
  std::string body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure")";
  if (!status.message.empty()) body.append(R"(,"message":)").append(goJsonString(status.message));
  const std::string_view reason = wireReason(status.reason);
  if (!reason.empty()) body.append(R"(,"reason":")").append(reason).append("\"");
  const std::string details = detailsJson(status);
  if (!details.empty()) body.append(R"(,"details":)").append(details);
  body.append(R"(,"code":)").append(std::to_string(httpCode(status.reason))).append("}");
  return body;
}

Status tooLargeResourceVersionStatus(uint64_t requested, uint64_t current) {
  Status status;
  status.reason = Reason::Timeout;
  status.message =
      "Timeout: Too large resource version: " + std::to_string(requested) + ", current: " + std::to_string(current);
  status.causes.push_back({"ResourceVersionTooLarge", "Too large resource version", ""});
  status.retry_after_seconds = 1;
  return status;
}

}  // namespace cache
