#include "proxy/list_writer.h"

#include <algorithm>

#include <fmt/format.h>

#include "proxy/api_status.h"

namespace proxy {
namespace {

constexpr std::string_view kPartialHead = R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";

size_t sizeWithoutTypeMeta(const cache::Object& object) {
  size_t size = object.json().size();
  for (const cache::ByteRange& cut : object.layout().type_meta_cuts) size -= cut.size();
  return size;
}

}  // namespace

std::string_view storedMetadata(const cache::Object& object) {
  // The extractor recorded where metadata lies; no parse per served object.
  const cache::ByteRange metadata = object.layout().metadata;
  if (metadata.empty()) return "{}";
  return object.json().substr(metadata.begin, metadata.size());
}

std::string partialObjectMetadata(const cache::Object& object) {
  std::string out(kPartialHead);
  out += storedMetadata(object);
  out += "}\n";
  return out;
}

ListWriter::ListWriter(ListEnvelope envelope, std::vector<cache::ObjectConstSharedPtr> items, ItemForm form)
    : items_(std::move(items)), form_(form) {
  if (envelope.unstructured) {
    head_ = fmt::format(R"({{"apiVersion":{},"items":[)", jsonQuote(envelope.api_version));
    tail_ = fmt::format(R"(],"kind":{},"metadata":{{"continue":{})", jsonQuote(envelope.kind),
                        jsonQuote(envelope.continue_token));
    if (envelope.remaining_item_count) tail_ += fmt::format(R"(,"remainingItemCount":{})", *envelope.remaining_item_count);
    tail_ += fmt::format(R"(,"resourceVersion":"{}"}}}})", envelope.resource_version);
    tail_ += '\n';
  } else {
    // metav1.ListMeta field order: resourceVersion, continue, remainingItemCount.
    head_ = fmt::format(R"({{"kind":{},"apiVersion":{},"metadata":{{"resourceVersion":"{}")", jsonQuote(envelope.kind),
                        jsonQuote(envelope.api_version), envelope.resource_version);
    if (!envelope.continue_token.empty()) head_ += R"(,"continue":)" + jsonQuote(envelope.continue_token);
    if (envelope.remaining_item_count) {
      head_ += fmt::format(R"(,"remainingItemCount":{})", *envelope.remaining_item_count);
    }
    head_ += R"(},"items":[)";
    tail_ = "]}\n";
  }

  total_size_ = head_.size() + tail_.size();
  if (!items_.empty()) total_size_ += items_.size() - 1;  // commas
  if (form_ == ItemForm::PartialObjectMetadata) metadata_.reserve(items_.size());
  for (const auto& item : items_) {
    switch (form_) {
      case ItemForm::AsStored: total_size_ += item->json().size(); break;
      case ItemForm::WithoutTypeMeta: total_size_ += sizeWithoutTypeMeta(*item); break;
      case ItemForm::PartialObjectMetadata:
        metadata_.push_back(storedMetadata(*item));
        total_size_ += kPartialHead.size() + metadata_.back().size() + 1;
        break;
    }
  }
}

void ListWriter::appendItem(std::string& out, const cache::Object& object, std::string_view metadata) const {
  switch (form_) {
    case ItemForm::AsStored: out += object.json(); break;
    case ItemForm::WithoutTypeMeta: object.appendWithoutTypeMeta(out); break;
    case ItemForm::PartialObjectMetadata:
      out += kPartialHead;
      out += metadata;
      out += '}';
      break;
  }
}

void ListWriter::sliceItem(std::vector<std::string_view>& slices, const cache::Object& object,
                           std::string_view metadata) const {
  switch (form_) {
    case ItemForm::AsStored: slices.push_back(object.json()); break;
    case ItemForm::WithoutTypeMeta: {
      const std::string_view bytes = object.json();
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
      slices.push_back(kPartialHead);
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
    if (next_item_ > 0) slices.push_back(",");
    sliceItem(slices, *items_[next_item_], metadata_.empty() ? std::string_view{} : metadata_[next_item_]);
    ++next_item_;
  }
  if (next_item_ == items_.size() && slices.size() < max_slices) {
    slices.push_back(tail_);
    tail_written_ = true;
  }
  return true;
}

bool ListWriter::next(std::string& piece, size_t min_bytes) {
  piece.clear();
  if (tail_written_) return false;
  if (!head_written_) {
    piece += head_;
    head_written_ = true;
  }
  while (next_item_ < items_.size() && piece.size() < min_bytes) {
    if (next_item_ > 0) piece += ',';
    appendItem(piece, *items_[next_item_], metadata_.empty() ? std::string_view{} : metadata_[next_item_]);
    ++next_item_;
  }
  if (next_item_ == items_.size() && piece.size() < min_bytes) {
    piece += tail_;
    tail_written_ = true;
  }
  return true;
}

}  // namespace proxy
