// statusProtobuf (cache/status.h): metav1.Status in the apiserver's protobuf encoding.
// Field numbers from k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto; gogo's
// marshalling writes the fields in number order and every non-pointer one even when
// empty (ListMeta's strings, status, message, reason, code; inside details: name, group,
// kind, retryAfterSeconds, uid), pointers (details, remainingItemCount) only when set.
#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_wire.h"
#include "cache/status.h"

namespace cache {

std::string statusProtobuf(const Status& status) {
  using protobuf::appendBytesField;
  using protobuf::appendVarintField;
  std::string message;
  std::string list_meta;
  appendBytesField(list_meta, 1, {});  // selfLink
  appendBytesField(list_meta, 2, {});  // resourceVersion
  appendBytesField(list_meta, 3, {});  // continue
  appendBytesField(message, 1, list_meta);
  appendBytesField(message, 2, "Failure");
  appendBytesField(message, 3, status.message);
  appendBytesField(message, 4, wireReason(status.reason));
  const bool has_details = !status.details_name.empty() || !status.details_group.empty() ||
                           !status.details_kind.empty() || !status.causes.empty() || status.retry_after_seconds > 0;
  if (has_details) {
    std::string details;
    appendBytesField(details, 1, status.details_name);
    appendBytesField(details, 2, status.details_group);
    appendBytesField(details, 3, status.details_kind);
    for (const StatusCause& c : status.causes) {
      std::string cause;
      appendBytesField(cause, 1, c.type);
      appendBytesField(cause, 2, c.message);
      appendBytesField(cause, 3, c.field);
      appendBytesField(details, 4, cause);
    }
    appendVarintField(details, 5, static_cast<uint64_t>(static_cast<int64_t>(status.retry_after_seconds)));
    appendBytesField(details, 6, {});  // uid
    appendBytesField(message, 5, details);
  }
  appendVarintField(message, 6, httpCode(status.reason));
  std::string out;
  protobuf::appendEnvelope(out, "v1", "Status", message);
  return out;
}

}  // namespace cache
