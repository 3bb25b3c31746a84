#include "proxy/reads/list_writer.h"

#include <algorithm>

#include <fmt/format.h>

#include "cache/go_json.h"
#include "cache/protobuf/protobuf_list.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/reads/partial_object_metadata.h"

namespace proxy {
namespace {

size_t sizeWithoutTypeMeta(const cache::Object& object) {
  size_t size = object.byteSize();
  for (const cache::ByteRange& cut : object.layout().type_meta_cuts) size -= cut.size();
  return size;
}

bool isPartial(ItemForm form) {
  return form == ItemForm::PartialObjectMetadata || form == ItemForm::CustomPartialObjectMetadata;
}

bool isProtobuf(ItemForm form) { return form == ItemForm::Protobuf || form == ItemForm::ProtobufPartialObjectMetadata; }

// The stored metadata's size, known from the layout without unpacking: "{}" in JSON
// when there is none (storedMetadata), nothing in protobuf (Object::metadataBytes).
size_t metadataSize(const cache::Object& object, bool protobuf) {
  const cache::ByteRange range = object.layout().metadata;
  return range.empty() && !protobuf ? 2 : range.size();
}


}  // namespace

ListShape listShape(const watch::ApiResource& resource, ReadFormat format) {
  ListShape out;
  ListEnvelope& envelope = out.envelope;
  const bool metadata = format == ReadFormat::PartialObjectMetadataList ||
                        format == ReadFormat::ProtobufPartialObjectMetadataList;
  if (metadata) {
    envelope.kind = "PartialObjectMetadataList";
    envelope.api_version = "meta.k8s.io/v1";
  } else {
    envelope.kind = resource.list_kind.empty() ? resource.kind + "List" : resource.list_kind;
    envelope.api_version = resource.apiVersion();
  }
  switch (format) {
    case ReadFormat::Protobuf: out.form = ItemForm::Protobuf; break;
    case ReadFormat::ProtobufPartialObjectMetadataList: out.form = ItemForm::ProtobufPartialObjectMetadata; break;
    case ReadFormat::PartialObjectMetadataList:
      out.form = resource.custom ? ItemForm::CustomPartialObjectMetadata : ItemForm::PartialObjectMetadata;
      break;
    default: out.form = resource.custom ? ItemForm::AsStored : ItemForm::WithoutTypeMeta; break;
  }
  envelope.unstructured = resource.custom && out.form == ItemForm::AsStored;
  return out;
}

ListWriter::ListWriter(ListEnvelope envelope, std::vector<cache::ObjectConstSharedPtr> items, ItemForm form,
                       std::vector<cache::WholeChunk> whole_chunks)
    : items_(std::move(items)), whole_chunks_(std::move(whole_chunks)), form_(form) {
  if (isProtobuf(form_)) {
    buildProtobuf(envelope);
    return;
  }
  if (envelope.unstructured) {
    head_ = fmt::format(R"({{"apiVersion":{},"items":[)", cache::goJsonString(envelope.api_version));
    tail_ = fmt::format(R"(],"kind":{},"metadata":{{"continue":{})", cache::goJsonString(envelope.kind),
                        cache::goJsonString(envelope.continue_token));
    if (envelope.remaining_item_count) tail_ += fmt::format(R"(,"remainingItemCount":{})", *envelope.remaining_item_count);
    tail_ += fmt::format(R"(,"resourceVersion":"{}"}}}})", envelope.resource_version);
    tail_ += '\n';
  } else {
    // metav1.ListMeta field order: resourceVersion, continue, remainingItemCount.
    head_ = fmt::format(R"({{"kind":{},"apiVersion":{},"metadata":{{"resourceVersion":"{}")", cache::goJsonString(envelope.kind),
                        cache::goJsonString(envelope.api_version), envelope.resource_version);
    if (!envelope.continue_token.empty()) head_ += R"(,"continue":)" + cache::goJsonString(envelope.continue_token);
    if (envelope.remaining_item_count) {
      head_ += fmt::format(R"(,"remainingItemCount":{})", *envelope.remaining_item_count);
    }
    if (!envelope.shard_selector.empty()) {
      head_ += R"(,"shardInfo":{"selector":)" + cache::goJsonString(envelope.shard_selector) + "}";
    }
    if (isPartial(form_) && items_.empty()) {
      head_ += R"(},"items":)";
      tail_ = "null}\n";
    } else {
      head_ += R"(},"items":[)";
      tail_ = "]}\n";
    }
  }

  total_size_ = head_.size() + tail_.size();
  if (!items_.empty()) total_size_ += items_.size() - 1;  // commas
  if (form_ == ItemForm::CustomPartialObjectMetadata) {
    // Rewritten per request rather than kept from ingestion (partial_object_metadata.h):
    // ~1-2 us per item on the calling io thread, so 0.1-0.2 s for 100,000 items.
    rewritten_metadata_.reserve(items_.size());
    for (const auto& item : items_) rewritten_metadata_.push_back(objectMetaInStructOrder(storedMetadata(*item, scratch_)));
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    switch (form_) {
      case ItemForm::AsStored: total_size_ += items_[i]->byteSize(); break;
      case ItemForm::WithoutTypeMeta: total_size_ += sizeWithoutTypeMeta(*items_[i]); break;
      case ItemForm::PartialObjectMetadata:
        total_size_ += kPartialObjectMetadataHead.size() + metadataSize(*items_[i], false) + 1;
        break;
      case ItemForm::CustomPartialObjectMetadata:
        total_size_ += kPartialObjectMetadataHead.size() + rewritten_metadata_[i].size() + 1;
        break;
      case ItemForm::Protobuf:
      case ItemForm::ProtobufPartialObjectMetadata:
        break;  // buildProtobuf()
    }
  }
}

void ListWriter::buildProtobuf(const ListEnvelope& envelope) {
  const bool partial = form_ == ItemForm::ProtobufPartialObjectMetadata;
  prefix_offsets_.reserve(items_.size() + 1);
  size_t items_bytes = 0;
  for (const auto& item : items_) {
    prefix_offsets_.push_back(static_cast<uint32_t>(prefixes_.size()));
    size_t size = 0;
    if (partial) {
      size = metadataSize(*item, true);
      cache::protobuf::appendPartialObjectMetadataItemPrefix(prefixes_, size);
    } else {
      size = item->byteSize();
      cache::protobuf::appendItemPrefix(prefixes_, size);
    }
    items_bytes += size;
  }
  prefix_offsets_.push_back(static_cast<uint32_t>(prefixes_.size()));
  items_bytes += prefixes_.size();
  const std::string rv = std::to_string(envelope.resource_version);
  cache::protobuf::ListMetaView meta;
  meta.resource_version = rv;
  meta.continue_token = envelope.continue_token;
  meta.remaining_item_count = envelope.remaining_item_count;
  meta.shard_selector = envelope.shard_selector;
  head_ = cache::protobuf::listHead(envelope.api_version, envelope.kind, meta, items_bytes);
  tail_ = cache::protobuf::kListTail;
  total_size_ = head_.size() + items_bytes + tail_.size();
}

std::string_view ListWriter::protobufPrefix(size_t item) const {
  return std::string_view(prefixes_).substr(prefix_offsets_[item], prefix_offsets_[item + 1] - prefix_offsets_[item]);
}

template <typename Emit>
void ListWriter::forEachPiece(size_t index, std::string_view bytes, Emit&& emit) const {
  const cache::Object& object = *items_[index];
  switch (form_) {
    case ItemForm::Protobuf: emit(protobufPrefix(index)), emit(bytes); break;
    case ItemForm::ProtobufPartialObjectMetadata:
      emit(protobufPrefix(index));
      emit(bytes.substr(object.layout().metadata.begin, object.layout().metadata.size()));
      break;
    case ItemForm::AsStored: emit(bytes); break;
    case ItemForm::WithoutTypeMeta: {
      uint32_t pos = 0;
      for (const cache::ByteRange& cut : object.layout().type_meta_cuts) {
        if (cut.empty()) continue;
        if (cut.begin > pos) emit(bytes.substr(pos, cut.begin - pos));
        pos = cut.end;
      }
      emit(bytes.substr(pos));
      break;
    }
    case ItemForm::PartialObjectMetadata:
      emit(kPartialObjectMetadataHead), emit(storedMetadata(object, bytes)), emit(std::string_view("}"));
      break;
    case ItemForm::CustomPartialObjectMetadata:
      emit(kPartialObjectMetadataHead), emit(std::string_view(rewritten_metadata_[index])), emit(std::string_view("}"));
      break;
  }
}

void ListWriter::appendItem(std::string& out, size_t index) const {
  const cache::Object& object = *items_[index];
  // The rewritten metadata of a custom resource is all it needs: no unpacking.
  const std::string_view bytes = form_ == ItemForm::CustomPartialObjectMetadata ? std::string_view{}
                                                                              : object.bytes(scratch_);
  forEachPiece(index, bytes, [&](std::string_view piece) { out += piece; });
}

void ListWriter::appendItems(std::string& out, size_t begin, size_t end) const {
  for (size_t i = begin; i < end; ++i) {
    if (i > begin && !isProtobuf(form_)) out += ',';
    appendItem(out, i);
  }
}

std::optional<std::string_view> ListWriter::stagedBytes(const cache::Object& object) {
  if (form_ == ItemForm::CustomPartialObjectMetadata) return std::string_view{};
  if (!object.isPacked()) return object.plainBytes();
  const size_t size = object.byteSize();
  if (stage_used_ + size > stage_capacity_) {
    if (stage_used_ > 0) return std::nullopt;  // the next batch
    // Nothing of this batch lies in the stage: it can be replaced.
    stage_capacity_ = std::max(kStageBytes, size);
    stage_ = std::make_unique_for_overwrite<char[]>(stage_capacity_);
  }
  char* at = stage_.get() + stage_used_;
  object.copyBytes(at);
  stage_used_ += size;
  return std::string_view(at, size);
}

bool ListWriter::nextSlices(std::vector<std::string_view>& slices, size_t max_slices) {
  if (tail_written_) return false;
  // An item takes at most 4 slices (a comma and 3 pieces); the tail one.
  max_slices = std::max<size_t>(max_slices, 4);
  if (!head_written_) {
    slices.push_back(head_);
    head_written_ = true;
  }
  stage_used_ = 0;  // the caller wrote the previous batch
  while (next_item_ < items_.size() && slices.size() + 4 <= max_slices) {
    const std::optional<std::string_view> bytes = stagedBytes(*items_[next_item_]);
    if (!bytes) return true;
    if (next_item_ > 0 && !isProtobuf(form_)) slices.push_back(",");
    forEachPiece(next_item_, *bytes, [&](std::string_view piece) { slices.push_back(piece); });
    ++next_item_;
  }
  if (next_item_ == items_.size() && slices.size() < max_slices) {
    slices.push_back(tail_);
    tail_written_ = true;
  }
  return true;
}

cache::CompressedRunConstSharedPtr ListWriter::compressedRun(const cache::WholeChunk& run) const {
  const size_t end = run.first_item + run.chunk->objects.size();
  return run.chunk->compressed.getOrMake(static_cast<size_t>(form_), [&] {
    std::string plain;
    appendItems(plain, run.first_item, end);
    return std::make_shared<const cache::CompressedRun>(compressRun(plain));
  });
}

bool ListWriter::nextGzip(GzipWriter& gz, std::string& out, size_t min_bytes) {
  out.clear();
  if (tail_written_) return false;
  std::string plain;
  if (!head_written_) {
    plain += head_;
    head_written_ = true;
  }
  while (next_item_ < items_.size() && out.size() < min_bytes) {
    if (next_item_ > 0 && !isProtobuf(form_)) plain += ',';
    if (next_whole_chunk_ < whole_chunks_.size() && whole_chunks_[next_whole_chunk_].first_item == next_item_) {
      const cache::WholeChunk& run = whole_chunks_[next_whole_chunk_++];
      gz.write(plain, out, false);
      plain.clear();
      gz.writeRun(*compressedRun(run), out);
      next_item_ += run.chunk->objects.size();
      continue;
    }
    appendItem(plain, next_item_++);
    if (plain.size() >= min_bytes) {
      gz.write(plain, out, false);
      plain.clear();
    }
  }
  const bool last = next_item_ == items_.size() && out.size() < min_bytes;
  if (last) plain += tail_;
  gz.write(plain, out, last);
  tail_written_ = last;
  return true;
}

}  // namespace proxy
