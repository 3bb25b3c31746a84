#include "proxy/api_status.h"

#include <fmt/format.h>

#include "cache/go_json.h"

namespace proxy {
namespace {

struct ReasonInfo {
  unsigned code;
  const char* wire_reason;  // "" is omitted from the body
};

ReasonInfo infoFor(Reason reason) {
  switch (reason) {
    case Reason::BadRequest: return {400, "BadRequest"};
    case Reason::Unauthorized: return {401, "Unauthorized"};
    case Reason::Forbidden: return {403, "Forbidden"};
    case Reason::NotFound: return {404, "NotFound"};
    case Reason::NotAcceptable: return {406, "NotAcceptable"};
    case Reason::Expired: return {410, "Expired"};
    case Reason::RequestEntityTooLarge: return {413, "RequestEntityTooLarge"};
    case Reason::Invalid: return {422, "Invalid"};
    case Reason::TooManyRequests: return {429, "TooManyRequests"};
    case Reason::Internal: return {500, ""};
    case Reason::ServiceUnavailable: return {503, "ServiceUnavailable"};
    case Reason::Timeout: return {504, "Timeout"};
  }
  return {500, ""};
}

}  // namespace

std::string jsonQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += '"';
  return out;
}

void encodeStatus(HttpAnswer& answer, StatusEncoding encoding) {
  if (encoding != StatusEncoding::RawJson) return;
  // WriteRawJSON: json.MarshalIndent of the same metav1.Status (the same members, Go's
  // Marshal being what the serializer runs too), and no newline after it.
  answer.body = cache::goJsonIndent(answer.body);
}

HttpAnswer toHttpAnswer(const ApiStatus& status, StatusEncoding encoding) {
  const ReasonInfo info = infoFor(status.reason);
  HttpAnswer answer;
  answer.code = info.code;
  answer.retry_after_seconds = status.retry_after_seconds;
  // Field order and omission rules follow metav1.Status as the apiserver encodes it.
  std::string body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)";
  body += jsonQuote(status.message);
  if (*info.wire_reason) body += fmt::format(R"(,"reason":"{}")", info.wire_reason);
  // metav1.StatusDetails field order: name, group, kind, causes, retryAfterSeconds.
  std::string details;
  auto member = [&details](const char* key, const std::string& json) {
    details += details.empty() ? "{" : ",";
    details += fmt::format(R"("{}":{})", key, json);
  };
  if (!status.details_name.empty()) member("name", jsonQuote(status.details_name));
  if (!status.details_group.empty()) member("group", jsonQuote(status.details_group));
  if (!status.details_kind.empty()) member("kind", jsonQuote(status.details_kind));
  if (!status.causes.empty()) {
    std::string causes = "[";
    for (const ApiStatusCause& c : status.causes) {
      if (causes.size() > 1) causes += ',';
      causes += "{";
      std::string sep;
      if (!c.type.empty()) causes += R"("reason":)" + jsonQuote(c.type), sep = ",";
      if (!c.message.empty()) causes += sep + R"("message":)" + jsonQuote(c.message), sep = ",";
      if (!c.field.empty()) causes += sep + R"("field":)" + jsonQuote(c.field);
      causes += "}";
    }
    member("causes", causes + "]");
  }
  if (status.retry_after_seconds > 0) member("retryAfterSeconds", std::to_string(status.retry_after_seconds));
  if (!details.empty()) body += R"(,"details":)" + details + "}";
  body += fmt::format(R"(,"code":{}}})", info.code);
  body += "\n";
  answer.body = std::move(body);
  encodeStatus(answer, encoding);
  return answer;
}

}  // namespace proxy
