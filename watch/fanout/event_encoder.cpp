#include "watch/fanout/event_encoder.h"

#include <array>
#include <utility>

#include "cache/protobuf/protobuf_list.h"
#include "cache/protobuf/protobuf_object.h"

namespace watch {
namespace {

// JSON string literal for names that come from discovery (kinds, group/versions): they
// are DNS-label-like and need no escaping beyond quotes.
std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

struct EmptyShape {
  std::string_view group;
  std::string_view kind;
  std::string_view tail;
};

// Checked against kube-apiserver 1.34 bookmarks for the types clients watch most.
constexpr std::array kEmptyShapes = {
    EmptyShape{"", "Pod", R"("spec":{"containers":null},"status":{})"},
    EmptyShape{"", "Service", R"("spec":{},"status":{"loadBalancer":{}})"},
    EmptyShape{"", "Namespace", R"("spec":{},"status":{})"},
    EmptyShape{"", "Node",
               R"("spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}})"},
    EmptyShape{"", "Event",
               R"("involvedObject":{},"reason":"","message":"","source":{},"firstTimestamp":null,"lastTimestamp":null,"count":0,"type":"","eventTime":null,"reportingComponent":"","reportingInstance":"")"},
    EmptyShape{"apps", "Deployment",
               R"("spec":{"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"strategy":{}},"status":{})"},
    EmptyShape{"apps", "ReplicaSet",
               R"("spec":{"selector":null,"template":{"metadata":{},"spec":{"containers":null}}},"status":{"replicas":0})"},
};

}  // namespace

std::string encodeEvent(cache::EventType type, std::string_view object_json) {
  const std::string_view name = cache::wireName(type);
  std::string out;
  out.reserve(object_json.size() + name.size() + 22);
  out += R"({"type":")";
  out += name;
  out += R"(","object":)";
  out += object_json;
  out += "}\n";
  return out;
}

FrameConstSharedPtr encodeSharedEvent(cache::EventType type, std::string_view object_json) {
  return makeSharedFrame(encodeEvent(type, object_json));
}

std::string encodeErrorEvent(std::string_view status_json) {
  while (!status_json.empty() && (status_json.back() == '\n' || status_json.back() == '\r')) {
    status_json.remove_suffix(1);
  }
  return encodeEvent(cache::EventType::Error, status_json);
}

std::string_view emptyObjectTail(std::string_view group, std::string_view kind) {
  for (const EmptyShape& shape : kEmptyShapes) {
    if (shape.group == group && shape.kind == kind) return shape.tail;
  }
  return {};
}

FrameEncoder::FrameEncoder(const ApiResource& resource, cache::Encoding encoding)
    : encoding_(encoding), api_version_(resource.apiVersion()), kind_(resource.kind) {}

std::string_view FrameEncoder::contentType() const {
  return encoding_ == cache::Encoding::Protobuf ? "application/vnd.kubernetes.protobuf;stream=watch"
                                                : "application/json";
}

namespace {

// The ObjectMeta bytes of a protobuf object message (field 1); "" when it has none.
std::string_view protobufMetadata(std::string_view message) {
  const auto view = cache::protobuf::parseObjectMeta(message);
  return view ? message.substr(view->metadata.offset, view->metadata.length) : std::string_view{};
}

}  // namespace

std::string FrameEncoder::event(cache::EventType type, const cache::Object& object, bool metadata_only) const {
  // A packed object (an initial event from a compressed store's state, a prev_object
  // made into a DELETED) is unpacked here only for as long as its frame takes to encode.
  std::string buffer;
  if (encoding_ == cache::Encoding::Json) return encodeEvent(type, object.bytes(buffer));
  std::string enveloped;
  if (metadata_only) {
    cache::protobuf::appendPartialObjectMetadata(enveloped, object.metadataBytes(buffer));
  } else {
    cache::protobuf::appendEnvelope(enveloped, api_version_, kind_, object.bytes(buffer));
  }
  std::string frame;
  cache::protobuf::appendWatchFrame(frame, cache::wireName(type), enveloped);
  return frame;
}

FrameConstSharedPtr FrameEncoder::sharedEvent(cache::EventType type, const cache::Object& object,
                                              bool metadata_only) const {
  return makeSharedFrame(event(type, object, metadata_only));
}

std::string FrameEncoder::error(const cache::Status& status) const {
  if (encoding_ == cache::Encoding::Json) return encodeErrorEvent(cache::statusJson(status));
  std::string frame;
  cache::protobuf::appendWatchFrame(frame, cache::wireName(cache::EventType::Error), cache::statusProtobuf(status));
  return frame;
}

std::string FrameEncoder::bookmark(std::string_view object, bool metadata_only) const {
  if (encoding_ == cache::Encoding::Json) return encodeEvent(cache::EventType::Bookmark, object);
  std::string enveloped;
  if (metadata_only) {
    // The apiserver turns the bookmark's empty object into a PartialObjectMetadata too.
    cache::protobuf::appendPartialObjectMetadata(enveloped, protobufMetadata(object));
  } else {
    cache::protobuf::appendEnvelope(enveloped, api_version_, kind_, object);
  }
  std::string frame;
  cache::protobuf::appendWatchFrame(frame, cache::wireName(cache::EventType::Bookmark), enveloped);
  return frame;
}

BookmarkEncoder::BookmarkEncoder(const ApiResource& resource, cache::Encoding encoding,
                                 std::shared_ptr<const std::string> protobuf_sample, bool metadata_only)
    : encoder_(resource, encoding), sample_(std::move(protobuf_sample)), metadata_only_(metadata_only) {
  // Typed (built-in) objects serialize TypeMeta kind first; unstructured custom
  // resources come out of a map with sorted keys: apiVersion, kind, metadata.
  if (resource.custom) {
    prefix_ = R"({"apiVersion":)" + quoted(resource.apiVersion()) + R"(,"kind":)" + quoted(resource.kind) +
              R"(,"metadata":)";
  } else {
    prefix_ = R"({"kind":)" + quoted(resource.kind) + R"(,"apiVersion":)" + quoted(resource.apiVersion()) +
              R"(,"metadata":)";
    const std::string_view tail = emptyObjectTail(resource.group, resource.kind);
    if (!tail.empty()) tail_ = "," + std::string(tail);
  }
  tail_ += "}";
}

std::string BookmarkEncoder::frame(uint64_t rv, bool initial_events_end) const {
  if (encoder_.encoding() == cache::Encoding::Protobuf) {
    auto object = sample_ ? cache::protobuf::bookmarkObject(*sample_, rv, initial_events_end) : std::nullopt;
    return object ? encoder_.bookmark(*object, metadata_only_) : std::string{};  // a sample is checked when kept
  }
  std::string object = prefix_;
  object += R"({"resourceVersion":")" + std::to_string(rv) + "\"";
  if (initial_events_end) object += R"(,"annotations":{"k8s.io/initial-events-end":"true"})";
  object += "}";
  object += tail_;
  return encodeEvent(cache::EventType::Bookmark, object);
}

}  // namespace watch
