// An error Status in kube-apiserver's protobuf encoding (contract N2, E1), for requests
// whose error negotiation picks protobuf: the "k8s\0" envelope (runtime.Unknown
// {typeMeta{"v1", "Status"}, raw, "", ""}) around metav1.Status. gogo's marshalling writes
// fields in number order and every non-pointer field even when empty: ListMeta {selfLink,
// resourceVersion, continue}, status, message, reason, code; details (a pointer) when the
// JSON form has them, with name, group, kind, causes, retryAfterSeconds and uid.
// Written here on its own (no code shared with the proxy), from apimachinery's
// generated.proto field numbers.
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/apiserver/api_types.h"

namespace testapi {
namespace {

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void bytesField(std::string& out, uint32_t number, std::string_view bytes) {
  varint(out, (uint64_t{number} << 3) | 2);
  varint(out, bytes.size());
  out.append(bytes);
}

void varintField(std::string& out, uint32_t number, int64_t value) {
  varint(out, uint64_t{number} << 3);
  varint(out, static_cast<uint64_t>(value));  // int32 fields: negative values take 10 bytes
}

}  // namespace

std::string ApiError::toProtobuf() const {
  std::string status;
  std::string list_meta;
  bytesField(list_meta, 1, "");
  bytesField(list_meta, 2, "");
  bytesField(list_meta, 3, metadata_continue);
  bytesField(status, 1, list_meta);
  bytesField(status, 2, "Failure");
  bytesField(status, 3, message);
  bytesField(status, 4, reason);
  if (!name.empty() || !group.empty() || !kind.empty() || !causes.empty() || retry_after_seconds != 0) {
    std::string details;
    bytesField(details, 1, name);
    bytesField(details, 2, group);
    bytesField(details, 3, kind);
    for (const StatusCause& c : causes) {
      std::string cause;
      bytesField(cause, 1, c.reason);
      bytesField(cause, 2, c.message);
      bytesField(cause, 3, c.field);
      bytesField(details, 4, cause);
    }
    varintField(details, 5, retry_after_seconds);
    bytesField(details, 6, "");
    bytesField(status, 5, details);
  }
  varintField(status, 6, code);
  std::string type_meta;
  bytesField(type_meta, 1, "v1");
  bytesField(type_meta, 2, "Status");
  std::string out("k8s\0", 4);
  bytesField(out, 1, type_meta);
  bytesField(out, 2, status);
  bytesField(out, 3, "");
  bytesField(out, 4, "");
  return out;
}

}  // namespace testapi
