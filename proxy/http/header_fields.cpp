#include "proxy/http/header_fields.h"

#include <memory>

namespace proxy {
namespace {

// Strings owned by a HeaderFields (and its copies), counted like nghttp2's buffers. A
// deque would do for one list; a node per list keeps every view valid while copies of the
// HeaderFields share it.
struct OwnedStrings {
  int references = 0;
  HeaderList list;
};

const FieldStorage::Counting kOwnedCounting{
    [](void* p) { ++static_cast<OwnedStrings*>(p)->references; },
    [](void* p) {
      auto* owned = static_cast<OwnedStrings*>(p);
      if (--owned->references == 0) delete owned;  // NOLINT(cppcoreguidelines-owning-memory): counted
    }};

// A new node holding `list`, with the reference the returned FieldStorage takes.
FieldStorage own(HeaderList list) {
  auto node = std::make_unique<OwnedStrings>();
  node->list = std::move(list);
  return FieldStorage(node.release(), kOwnedCounting);
}

const HeaderList& ownedList(const FieldStorage& storage) {
  return static_cast<const OwnedStrings*>(storage.get())->list;
}

}  // namespace

FieldStorage::FieldStorage(void* storage, const Counting& counting) : storage_(storage), counting_(&counting) {
  if (storage_) counting_->retain(storage_);
}

FieldStorage::FieldStorage(const FieldStorage& other) : storage_(other.storage_), counting_(other.counting_) {
  if (storage_) counting_->retain(storage_);
}

FieldStorage::FieldStorage(FieldStorage&& other) noexcept
    : storage_(std::exchange(other.storage_, nullptr)), counting_(other.counting_) {}

FieldStorage& FieldStorage::operator=(FieldStorage other) noexcept {
  std::swap(storage_, other.storage_);
  std::swap(counting_, other.counting_);
  return *this;
}

FieldStorage::~FieldStorage() {
  if (storage_) counting_->release(storage_);
}

HeaderFields::HeaderFields(HeaderList owned) {
  if (owned.empty()) return;
  owned_ = own(std::move(owned));
  const HeaderList& list = ownedList(owned_);
  fields_.reserve(list.size());
  for (const auto& [name, value] : list) fields_.emplace_back(name, value);
}

void HeaderFields::add(std::string_view name, std::string_view value, const FieldStorage& name_storage,
                       const FieldStorage& value_storage) {
  hold(name_storage);
  hold(value_storage);
  fields_.emplace_back(name, value);
}

void HeaderFields::add(std::string name, std::string value) {
  HeaderList one;
  one.emplace_back(std::move(name), std::move(value));
  storage_.push_back(own(std::move(one)));
  const auto& [n, v] = ownedList(storage_.back()).front();
  fields_.emplace_back(n, v);
}

void HeaderFields::hold(const FieldStorage& storage) {
  if (!storage) return;
  const size_t n = storage_.size();
  if (n > 0 && storage_[n - 1].get() == storage.get()) return;
  if (n > 1 && storage_[n - 2].get() == storage.get()) return;
  storage_.push_back(storage);
}

}  // namespace proxy
