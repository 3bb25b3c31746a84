#pragma once
// The protobuf shapes around objects (contract N2, W2), read and written at the wire level:
// a List (field 1 ListMeta, field 2 the items, every built-in XxxList) inside the `k8s\0`
// envelope, and a watch frame (4-byte big-endian length, then a bare WatchEvent message
// {type, object{raw: an enveloped object}}: the frame itself has no envelope, as
// kube-apiserver 1.37 writes it). Writing takes the items as the
// stored message bytes, so a LIST is concatenation, never re-encoding.
//
// The writers emit what kube-apiserver's gogo-protobuf marshalling emits: every field of a
// non-pointer Go struct member is written even when empty (ListMeta's selfLink,
// resourceVersion and continue; Unknown's contentEncoding and contentType), optional
// pointers (remainingItemCount) only when set. The real-cluster tier compares both
// directions with the apiserver's own bytes (realcluster_test_real_protobuf).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cache::protobuf {

struct ListMetaView {
  std::string_view self_link;
  std::string_view resource_version;
  std::string_view continue_token;
  std::optional<int64_t> remaining_item_count;
  std::string_view shard_selector;  // shardInfo.selector (field 5 {1}); "" = no shardInfo
};

struct ListView {
  std::string_view api_version;
  std::string_view kind;
  ListMetaView metadata;
  std::vector<std::string_view> items;  // each an item's message bytes (no envelope)
};

// `bytes` is a whole protobuf LIST response. nullopt when malformed.
std::optional<ListView> parseList(std::string_view bytes);

// Appends a List in its envelope to `out`.
void appendList(std::string& out, std::string_view api_version, std::string_view kind,
                const ListMetaView& metadata, const std::vector<std::string_view>& items);

// A List written in pieces (a LIST answered from the cache, gathered from the stored
// bytes): listHead(), then per item its prefix and its bytes, then kListTail.
// `items_bytes` is the sum over items of prefix and bytes.
std::string listHead(std::string_view api_version, std::string_view kind, const ListMetaView& metadata,
                     size_t items_bytes);
// Unknown's contentEncoding and contentType, both empty: what follows the raw.
inline constexpr std::string_view kListTail{"\x1a\x00\x22\x00", 4};
// Before an item of `item_size` bytes (field 2 of the List).
void appendItemPrefix(std::string& out, size_t item_size);
// Before the ObjectMeta (`metadata_size` bytes) of a PartialObjectMetadata {1: metadata}
// item: the item's prefix and the message's own.
void appendPartialObjectMetadataItemPrefix(std::string& out, size_t metadata_size);
// Appends a PartialObjectMetadata {1: metadata} around an ObjectMeta's bytes, in its
// envelope (meta.k8s.io/v1): a GET's body, or a watch event's object.
void appendPartialObjectMetadata(std::string& out, std::string_view metadata);

// One watch event: `object` is an enveloped object (kMagic + Unknown).
struct WatchEventView {
  std::string_view type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  std::string_view object;
};

// A bare WatchEvent message {1: type, 2: RawExtension{1: raw}} (a frame's payload).
// nullopt when malformed.
std::optional<WatchEventView> parseWatchEvent(std::string_view message);

// The media type of every protobuf answer (a watch's adds ";stream=watch").
inline constexpr std::string_view kMediaType = "application/vnd.kubernetes.protobuf";

// A frame longer than this is not one: the apiserver's objects are bounded by etcd's
// request limit (about 1.5 MiB), far below.
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;

// Splits the front length-prefixed frame off `stream` and returns its payload: nullopt
// when the stream does not yet hold a whole frame, or (`too_long` set) when the length
// exceeds kMaxFrameBytes.
std::optional<std::string_view> takeFrame(std::string_view& stream, bool& too_long);

// Splits the front frame off `stream`: nullopt when the stream does not yet hold a whole
// frame (`malformed` stays false) or the frame is not a WatchEvent (`malformed` set). On success `stream` is advanced past the frame.
std::optional<WatchEventView> takeWatchFrame(std::string_view& stream, bool& malformed);

// Appends one framed WatchEvent to `out`.
void appendWatchFrame(std::string& out, std::string_view type, std::string_view enveloped_object);

// Appends `object` (an item's message bytes) in its envelope.
void appendEnvelope(std::string& out, std::string_view api_version, std::string_view kind, std::string_view raw);

}  // namespace cache::protobuf
