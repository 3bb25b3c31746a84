#include "cache/selectors/labels.h"

#include <cstring>

namespace cache {

namespace {

bool keyLess(const StringPairs::value_type& a, const StringPairs::value_type& b) { return a.first < b.first; }

// Sorts by key and keeps the last of equal keys (stable sort, then unique from the back).
void sortUniqueByKey(std::vector<StringPairs::value_type>& pairs) {
  if (!std::is_sorted(pairs.begin(), pairs.end(), keyLess)) std::stable_sort(pairs.begin(), pairs.end(), keyLess);
  auto kept = std::unique(pairs.rbegin(), pairs.rend(), [](const auto& a, const auto& b) { return a.first == b.first; });
  pairs.erase(pairs.begin(), kept.base());
}

}  // namespace

StringPairs::StringPairs(std::initializer_list<value_type> pairs) : StringPairs(std::span(pairs.begin(), pairs.size())) {}

StringPairs::StringPairs(std::span<const value_type> pairs) {
  std::vector<value_type> sorted(pairs.begin(), pairs.end());
  sortUniqueByKey(sorted);
  build(sorted);
}

StringPairs StringPairs::fromUnsorted(std::vector<value_type>& pairs) {
  sortUniqueByKey(pairs);
  StringPairs set;
  set.build(pairs);
  return set;
}

StringPairs::StringPairs(const StringPairs& other) {
  if (!other.data_) return;
  data_ = std::make_unique_for_overwrite<char[]>(other.heapBytes());
  std::memcpy(data_.get(), other.data_.get(), other.heapBytes());
}

StringPairs& StringPairs::operator=(const StringPairs& other) {
  if (this != &other) *this = StringPairs(other);
  return *this;
}

void StringPairs::build(std::span<const value_type> sorted) {
  data_.reset();
  if (sorted.empty()) return;
  size_t chars = 0;
  for (const auto& [key, value] : sorted) chars += key.size() + value.size();
  const size_t chars_begin = sizeof(Header) + sorted.size() * sizeof(Entry);
  const size_t block = chars_begin + chars;
  data_ = std::make_unique_for_overwrite<char[]>(block);
  const Header header{static_cast<uint32_t>(sorted.size()), static_cast<uint32_t>(block)};
  std::memcpy(data_.get(), &header, sizeof header);
  size_t pos = chars_begin;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const auto& [key, value] = sorted[i];
    Entry entry;
    entry.key = static_cast<uint32_t>(pos);
    if (!key.empty()) std::memcpy(data_.get() + pos, key.data(), key.size());
    pos += key.size();
    entry.value = static_cast<uint32_t>(pos);
    if (!value.empty()) std::memcpy(data_.get() + pos, value.data(), value.size());
    pos += value.size();
    entry.end = static_cast<uint32_t>(pos);
    std::memcpy(data_.get() + sizeof(Header) + i * sizeof(Entry), &entry, sizeof entry);
  }
}

void StringPairs::push_back(const value_type& pair) {
  std::vector<value_type> pairs(begin(), end());
  pairs.push_back(pair);
  sortUniqueByKey(pairs);
  // `pairs` views the old block: build a new one before releasing it.
  StringPairs rebuilt;
  rebuilt.build(pairs);
  *this = std::move(rebuilt);
}

bool operator==(const StringPairs& a, const StringPairs& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.at(i) != b.at(i)) return false;
  }
  return true;
}

}  // namespace cache
