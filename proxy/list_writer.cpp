#include "proxy/list_writer.h"

#include <algorithm>

#include <fmt/format.h>

#include "cache/go_json.h"
#include "cache/protobuf_list.h"
#include "proxy/gzip_writer.h"
#include "proxy/partial_object_metadata.h"

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
    for (const auto& item : items_) rewritten_metadata_.push_back(objectMetaInStructOrder(storedMetadata(*item)));
    // Views once every string is in place: a short string's bytes live inside it.
    metadata_.assign(rewritten_metadata_.begin(), rewritten_metadata_.end());
  } else if (form_ == ItemForm::PartialObjectMetadata) {
    metadata_.reserve(items_.size());
    for (const auto& item : items_) metadata_.push_back(storedMetadata(*item));
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    switch (form_) {
      case ItemForm::AsStored: total_size_ += items_[i]->byteSize(); break;
      case ItemForm::WithoutTypeMeta: total_size_ += sizeWithoutTypeMeta(*items_[i]); break;
      case ItemForm::PartialObjectMetadata:
      case ItemForm::CustomPartialObjectMetadata:
        total_size_ += kPartialObjectMetadataHead.size() + metadata_[i].size() + 1;
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
  if (partial) metadata_.reserve(items_.size());
  size_t items_bytes = 0;
  for (const auto& item : items_) {
    prefix_offsets_.push_back(static_cast<uint32_t>(prefixes_.size()));
    size_t size = 0;
    if (partial) {
      metadata_.push_back(item->metadataBytes());
      size = metadata_.back().size();
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
  head_ = cache::protobuf::listHead(envelope.api_version, envelope.kind, meta, items_bytes);
  tail_ = cache::protobuf::kListTail;
  total_size_ = head_.size() + items_bytes + tail_.size();
}

std::string_view ListWriter::protobufPrefix(size_t item) const {
  return std::string_view(prefixes_).substr(prefix_offsets_[item], prefix_offsets_[item + 1] - prefix_offsets_[item]);
}

void ListWriter::appendItem(std::string& out, size_t index) const {
  const cache::Object& object = *items_[index];
  const std::string_view metadata = metadata_.empty() ? std::string_view{} : metadata_[index];
  switch (form_) {
    case ItemForm::Protobuf:
    case ItemForm::ProtobufPartialObjectMetadata:
      out += protobufPrefix(index);
      out += form_ == ItemForm::Protobuf ? object.bytes() : metadata;
      break;
    case ItemForm::AsStored: out += object.bytes(); break;
    case ItemForm::WithoutTypeMeta: object.appendWithoutTypeMeta(out); break;
    case ItemForm::PartialObjectMetadata:
    case ItemForm::CustomPartialObjectMetadata:
      out += kPartialObjectMetadataHead;
      out += metadata;
      out += '}';
      break;
  }
}

void ListWriter::appendItems(std::string& out, size_t begin, size_t end) const {
  for (size_t i = begin; i < end; ++i) {
    if (i > begin && !isProtobuf(form_)) out += ',';
    appendItem(out, i);
  }
}

void ListWriter::sliceItem(std::vector<std::string_view>& slices, size_t index) const {
  const cache::Object& object = *items_[index];
  const std::string_view metadata = metadata_.empty() ? std::string_view{} : metadata_[index];
  switch (form_) {
    case ItemForm::Protobuf:
    case ItemForm::ProtobufPartialObjectMetadata:
      slices.push_back(protobufPrefix(index));
      slices.push_back(form_ == ItemForm::Protobuf ? object.bytes() : metadata);
      break;
    case ItemForm::AsStored: slices.push_back(object.bytes()); break;
    case ItemForm::WithoutTypeMeta: {
      const std::string_view bytes = object.bytes();
      uint32_t pos = 0;
      for (const cache::ByteRange& cut : object.layout().type_meta_cuts) {
        if (cut.empty()) continue;
        if (cut.begin > pos) slices.push_back(bytes.substr(pos, cut.begin - pos));
        pos = cut.end;
      }
      slices.push_back(bytes.substr(pos));
      break;
    }
    case ItemForm::PartialObjectMetadata:
    case ItemForm::CustomPartialObjectMetadata:
      slices.push_back(kPartialObjectMetadataHead);
      slices.push_back(metadata);
      slices.push_back("}");
      break;
  }
}

bool ListWriter::nextSlices(std::vector<std::string_view>& slices, size_t max_slices) {
  if (tail_written_) return false;
  // An item takes at most 4 slices (a comma and 3 pieces); the tail one.
  max_slices = std::max<size_t>(max_slices, 4);
  if (!head_written_) {
    slices.push_back(head_);
    head_written_ = true;
  }
  while (next_item_ < items_.size() && slices.size() + 4 <= max_slices) {
    if (next_item_ > 0 && !isProtobuf(form_)) slices.push_back(",");
    sliceItem(slices, next_item_);
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
