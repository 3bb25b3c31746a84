// Upstream protobuf bytes as the readers see them (contract N2, W2): an envelope, then the
// ObjectMeta of its raw object; the store's parser; the same bytes as a LIST body and as a
// watch stream. Anything may be refused; nothing may crash or read past
// the input, and what is accepted points inside it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"
#include "cache/protobuf/protobuf_object_parser.h"
#include "cache/selectors/selectable_fields.h"
#include "fuzz_check.h"

namespace {

bool inside(std::string_view outer, std::string_view inner) {
  return inner.empty() || (inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The input as an envelope, and as a bare object (the raw of one).
  std::string_view object = input;
  if (const auto envelope = cache::protobuf::parseEnvelope(input)) {
    FUZZ_CHECK(inside(input, envelope->raw) && inside(input, envelope->kind) && inside(input, envelope->api_version));
    object = envelope->raw;
  }
  if (const auto meta = cache::protobuf::parseObjectMeta(object)) {
    FUZZ_CHECK(inside(object, meta->name) && inside(object, meta->namespace_) && inside(object, meta->resource_version));
    FUZZ_CHECK(meta->metadata.offset + meta->metadata.length <= object.size());
    FUZZ_CHECK(object.substr(meta->resource_version_value.offset, meta->resource_version_value.length) ==
               meta->resource_version);
    for (const auto& [key, value] : meta->labels) FUZZ_CHECK(inside(object, key) && inside(object, value));
  }
  if (const auto list = cache::protobuf::parseList(input)) {
    for (std::string_view item : list->items) FUZZ_CHECK(inside(input, item));
    FUZZ_CHECK(inside(input, list->metadata.resource_version) && inside(input, list->metadata.continue_token));
  }
  // The store's parser: what it accepts keeps its bytes (or drops managedFields only), and
  // a new RV spliced in reads back.
  static cache::ProtobufObjectParser parser({cache::FieldSpec::forBuiltin("", "v1", "pods", true), false});
  static cache::ProtobufObjectParser stripping({cache::FieldSpec::forBuiltin("", "v1", "events", true), true});
  if (auto parsed = parser.parseObject(object)) {
    FUZZ_CHECK((*parsed)->plainBytes() == object);
    const auto spliced = (*parsed)->withResourceVersion((*parsed)->resourceVersion() + 1);
    FUZZ_CHECK(spliced->resourceVersion() == (*parsed)->resourceVersion() + 1);
  }
  if (auto parsed = stripping.parseObject(object)) FUZZ_CHECK((*parsed)->plainBytes().size() <= object.size());
  (void)parser.parseWatchEvent(input);
  std::string_view stream = input;
  bool malformed = false;
  while (const auto event = cache::protobuf::takeWatchFrame(stream, malformed)) {
    FUZZ_CHECK(inside(input, event->type) && inside(input, event->object));
  }
  FUZZ_CHECK(inside(input, stream));
  return 0;
}
