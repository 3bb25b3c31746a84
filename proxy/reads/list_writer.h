#pragma once
// ListWriter: the body of a LIST answered from the cache, exactly as the apiserver
// encodes it (L1, P1, P4, N4), written in pieces so a large list is never built twice
// in memory: the envelope head, each item's stored bytes (or its metadata under a
// PartialObjectMetadata envelope), the tail. totalSize() is known before the first
// piece, for Content-Length and the gzip threshold (N1).
//
// In protobuf the same pieces are the envelope and List head, each item's tag and length
// followed by its stored message, and the envelope's tail (cache/protobuf/protobuf_list.h).
//
//   {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12500",
//    "continue":"...","remainingItemCount":3},"items":[...]}\n
//
// An empty PartialObjectMetadataList has "items":null: the apiserver builds it by
// appending to a nil slice (asPartialObjectMetadataList), and the field has no
// omitempty. Every other empty list has "items":[].
//
// Two ways to take the body: nextSlices() yields views of the stored bytes themselves,
// for a gather write that copies nothing in user space (the writer holds the items, so
// the views stay valid as long as it lives); nextGzip() compresses it, taking the items of each whole chunk (cache::WholeChunk) from the
// chunk's CompressedRuns, deflated on the first gzip'd LIST that reads the chunk and
// reused by every later one until the chunk changes.
//
// Packed items (--store-encoding compressed, issue #37) are unpacked into the writer's own
// stage, kStageBytes reused batch after batch (a larger item grows it to its size): a
// LIST of packed objects costs that buffer, however long its client takes to read, and
// never unpacks into the instances the store shares.
//
// Not thread-safe; one per response. Holds the items it writes.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/object.h"
#include "cache/snapshot.h"
#include "proxy/reads/read_route.h"
#include "watch/api_resource.h"

namespace proxy {

// How each stored object is written as a list item (L1, N4).
enum class ItemForm {
  AsStored,         // custom resources: kind/apiVersion included
  WithoutTypeMeta,  // built-in types: kind/apiVersion dropped
  // {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}}
  // (partial_object_metadata.h): of a built-in type, the stored metadata bytes; of a
  // custom resource, its metadata rewritten in ObjectMeta order.
  PartialObjectMetadata,
  CustomPartialObjectMetadata,
  // Protobuf (N2), from a protobuf cache: the List in its envelope, each item the stored
  // message; or a PartialObjectMetadataList whose items wrap the stored ObjectMeta bytes.
  Protobuf,
  ProtobufPartialObjectMetadata,
};

struct ListEnvelope {
  std::string kind;         // "PodList", "PartialObjectMetadataList"
  std::string api_version;  // "v1", "apps/v1", "meta.k8s.io/v1"
  uint64_t resource_version = 0;
  std::string continue_token;                 // "" = omitted
  std::optional<int64_t> remaining_item_count;  // P4
  // A custom resource's list in JSON is an UnstructuredList: a map, which Go writes with
  // its keys sorted (apiVersion, items, kind, metadata), and whose metadata always holds
  // "continue", empty on the last page (kube-apiserver 1.37, docs/conformance.md).
  bool unstructured = false;
  // metadata.shardInfo.selector of a sharded list (KEP-5866); "" = none. Only typed
  // lists carry it: kube-apiserver sets it through ListMeta, which an UnstructuredList
  // (a custom resource's) and the PartialObjectMetadataList it converts to do not offer.
  std::string shard_selector;
};

// The envelope (kind, apiVersion; the list's metadata is left to the caller) and the item
// form of a cached LIST of `resource` rendered as `format`.
struct ListShape {
  ListEnvelope envelope;
  ItemForm form = ItemForm::WithoutTypeMeta;
};
ListShape listShape(const watch::ApiResource& resource, ReadFormat format);

class GzipWriter;

class ListWriter {
 public:
  // The stage's size: a batch of unpacked items per gather write, small enough to stay in
  // the CPU's cache between the unpacking and the kernel's copy.
  static constexpr size_t kStageBytes = 256 * 1024;

  // `whole_chunks` (optional) say which runs of `items` are whole chunks.
  ListWriter(ListEnvelope envelope, std::vector<cache::ObjectConstSharedPtr> items, ItemForm form,
             std::vector<cache::WholeChunk> whole_chunks = {});

  // Exact byte count of the whole body.
  size_t totalSize() const { return total_size_; }
  size_t itemCount() const { return items_.size(); }
  // Appends views of the next bytes of the body to `slices` until it holds `max_slices`
  // (at least 4), the stage is full or the body ends. Returns false (appending nothing)
  // when everything was written. The views of packed items live until the next call.
  // Use either nextSlices() or nextGzip() for one body, not both.
  bool nextSlices(std::vector<std::string_view>& slices, size_t max_slices);
  // Replaces `out` with the next compressed bytes of the body (at least `min_bytes`
  // unless the body ends first), through `gz`, which ends the gzip member with the body.
  // Returns false (and leaves `out` empty) when everything was written.
  bool nextGzip(GzipWriter& gz, std::string& out, size_t min_bytes);

 private:
  // Calls emit(piece) for each piece of item `index`, whose stored bytes are `bytes`.
  template <typename Emit>
  void forEachPiece(size_t index, std::string_view bytes, Emit&& emit) const;
  void appendItem(std::string& out, size_t index) const;
  // The item's stored bytes: its own, or unpacked into the stage; nullopt when the stage
  // has no room left in this batch.
  std::optional<std::string_view> stagedBytes(const cache::Object& object);
  // Items [begin, end) with the commas between them.
  void appendItems(std::string& out, size_t begin, size_t end) const;
  // The chunk's items as compressed, made now if no LIST made them before.
  cache::CompressedRunConstSharedPtr compressedRun(const cache::WholeChunk& run) const;
  void buildProtobuf(const ListEnvelope& envelope);
  std::string_view protobufPrefix(size_t item) const;

  std::string head_;
  // "]}\n"; "null}\n" after `"items":` for an empty partial list; the UnstructuredList's
  // kind and metadata after its items.
  std::string tail_;
  std::vector<cache::ObjectConstSharedPtr> items_;
  std::vector<cache::WholeChunk> whole_chunks_;
  size_t next_whole_chunk_ = 0;
  // CustomPartialObjectMetadata: each item's rewritten metadata, kept for the writer's
  // life because nextSlices() hands out views of it.
  std::vector<std::string> rewritten_metadata_;
  std::unique_ptr<char[]> stage_;  // packed items unpacked, one batch of slices at a time
  size_t stage_capacity_ = 0;
  size_t stage_used_ = 0;
  mutable std::string scratch_;  // a packed item unpacked for appendItem
  // Protobuf forms: every item's prefix (tag and lengths), and where each begins (n + 1).
  std::string prefixes_;
  std::vector<uint32_t> prefix_offsets_;
  ItemForm form_;
  size_t total_size_ = 0;
  size_t next_item_ = 0;
  bool head_written_ = false;
  bool tail_written_ = false;
};

}  // namespace proxy
