#include "proxy/api_status.h"

#include "cache/go_json.h"

namespace proxy {

void encodeStatus(HttpAnswer& answer, StatusEncoding encoding) {
  if (encoding != StatusEncoding::RawJson) return;
  // WriteRawJSON: json.MarshalIndent of the same metav1.Status (the same members, Go's
  // Marshal being what the serializer runs too), and no newline after it.
  answer.body = cache::goJsonIndent(answer.body);
}

HttpAnswer toHttpAnswer(const Status& status, StatusEncoding encoding) {
  HttpAnswer answer;
  answer.code = cache::httpCode(status.reason);
  answer.retry_after_seconds = status.retry_after_seconds;
  if (encoding == StatusEncoding::Protobuf) {
    answer.content_type = "application/vnd.kubernetes.protobuf";
    answer.body = cache::statusProtobuf(status);
    return answer;
  }
  answer.body = cache::statusJson(status) + "\n";
  encodeStatus(answer, encoding);
  return answer;
}

}  // namespace proxy
