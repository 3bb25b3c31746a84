#include "cache/indexer.h"

#include <algorithm>

namespace cache {

namespace {

std::vector<const Object*>::iterator lowerBound(std::vector<const Object*>& bucket, std::string_view key) {
  return std::lower_bound(bucket.begin(), bucket.end(), key,
                          [](const Object* o, std::string_view k) { return std::string_view(o->key()) < k; });
}

bool contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

namespace indexes {

IndexDefinition byNamespace() {
  return {std::string(kNamespace), [](const Object& o, std::vector<std::string>& values) {
            if (!o.meta().namespace_name.empty()) values.push_back(o.meta().namespace_name);
          }};
}

IndexDefinition byLabels() {
  return {std::string(kLabels), [](const Object& o, std::vector<std::string>& values) {
            for (const auto& [key, value] : o.meta().labels) {
              std::string& entry = values.emplace_back();
              entry.reserve(key.size() + 1 + value.size());
              entry.append(key).append(1, '=').append(value);
            }
          }};
}

std::string fieldIndexName(std::string_view field_name) { return "field:" + std::string(field_name); }

IndexDefinition byField(std::string field_name) {
  return {fieldIndexName(field_name), [field = std::move(field_name)](const Object& o, std::vector<std::string>& values) {
            auto value = lookup(o.meta().fields, field);
            if (value && !value->empty()) values.emplace_back(*value);
          }};
}

std::string pathIndexName(std::string_view name) { return "path:" + std::string(name); }

IndexDefinition byIndexPath(std::string name) {
  return {pathIndexName(name), [name = std::move(name)](const Object& o, std::vector<std::string>& values) {
            auto value = lookup(o.meta().index_values, name);
            if (value && !value->empty()) values.emplace_back(*value);
          }};
}

}  // namespace indexes

Indexer::Indexer(std::vector<IndexDefinition> definitions) {
  indexes_.reserve(definitions.size());
  for (auto& definition : definitions) indexes_.push_back(Index{std::move(definition), {}});
}

void Indexer::update(const Object* old_object, const Object* new_object) {
  for (Index& index : indexes_) {
    scratch_old_.clear();
    scratch_new_.clear();
    if (old_object) index.definition.func(*old_object, scratch_old_);
    if (new_object) index.definition.func(*new_object, scratch_new_);
    for (const std::string& value : scratch_old_) {
      auto it = index.by_value.find(value);
      if (it == index.by_value.end()) continue;
      Bucket& bucket = it->second;
      auto at = lowerBound(bucket, old_object->key());
      if (at == bucket.end() || (*at)->key() != old_object->key()) continue;
      if (new_object && contains(scratch_new_, value)) {
        *at = new_object;  // same key, same value: keep the slot
        continue;
      }
      bucket.erase(at);
      --entries_;
      if (bucket.empty()) {
        index.by_value.erase(it);
        --distinct_values_;
      }
    }
    for (std::string& value : scratch_new_) {
      if (old_object && contains(scratch_old_, value)) continue;  // swapped above
      auto it = index.by_value.find(value);
      if (it == index.by_value.end()) {
        it = index.by_value.emplace(std::move(value), Bucket{}).first;
        ++distinct_values_;
      }
      Bucket& bucket = it->second;
      // Lists arrive in key order, so appending is the common case.
      if (bucket.empty() || bucket.back()->key() < new_object->key()) {
        bucket.push_back(new_object);
        ++entries_;
        continue;
      }
      auto at = lowerBound(bucket, new_object->key());
      if (at != bucket.end() && (*at)->key() == new_object->key()) {
        *at = new_object;
      } else {
        bucket.insert(at, new_object);
        ++entries_;
      }
    }
  }
}

void Indexer::clear() {
  for (Index& index : indexes_) index.by_value.clear();
  entries_ = 0;
  distinct_values_ = 0;
}

const Indexer::Index* Indexer::find(std::string_view name) const {
  for (const Index& index : indexes_) {
    if (index.definition.name == name) return &index;
  }
  return nullptr;
}

bool Indexer::hasIndex(std::string_view name) const { return find(name) != nullptr; }

std::vector<ObjectConstSharedPtr> Indexer::byIndex(std::string_view name, std::string_view value) const {
  std::vector<ObjectConstSharedPtr> out;
  const Index* index = find(name);
  if (index == nullptr) return out;
  auto it = index->by_value.find(value);
  if (it == index->by_value.end()) return out;
  out.reserve(it->second.size());
  for (const Object* object : it->second) out.push_back(object->shared_from_this());
  return out;
}

size_t Indexer::count(std::string_view name, std::string_view value) const {
  const Index* index = find(name);
  if (index == nullptr) return 0;
  auto it = index->by_value.find(value);
  return it == index->by_value.end() ? 0 : it->second.size();
}

std::vector<std::string> Indexer::values(std::string_view name) const {
  std::vector<std::string> out;
  if (const Index* index = find(name)) {
    for (const auto& [value, objects] : index->by_value) out.push_back(value);
  }
  return out;
}

}  // namespace cache
