#pragma once
// The label and field sets of one object as selectors see them (contract S1, S4).
// Both are sorted by key with unique keys, so lookups are binary searches and two
// sets compare with ==.
//
// StringPairs keeps a whole set in one heap block (entry offsets, then the characters),
// because every cached object carries two of them: as a vector of std::string pairs the
// 6 labels and 6 field values of a typical pod cost ~1 KB in 12+ allocations, packed they
// cost ~350 bytes in 2 (docs/design/store.md, "Memory"). Immutable in practice: built
// once at ingestion; push_back exists for tests and rebuilds the block.
//
// Iteration yields std::pair<std::string_view, std::string_view> by value; the views
// live as long as the set is neither destroyed nor changed.

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cache {

class StringPairs {
 public:
  using value_type = std::pair<std::string_view, std::string_view>;

  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = StringPairs::value_type;
    using difference_type = std::ptrdiff_t;
    using reference = value_type;
    struct pointer {
      value_type pair;
      const value_type* operator->() const { return &pair; }
    };

    const_iterator() = default;
    const_iterator(const StringPairs* set, size_t index) : set_(set), index_(static_cast<difference_type>(index)) {}

    value_type operator*() const { return set_->at(static_cast<size_t>(index_)); }
    pointer operator->() const { return {**this}; }
    value_type operator[](difference_type n) const { return set_->at(static_cast<size_t>(index_ + n)); }
    const_iterator& operator++() { return ++index_, *this; }
    const_iterator operator++(int) { auto old = *this; ++index_; return old; }
    const_iterator& operator--() { return --index_, *this; }
    const_iterator operator--(int) { auto old = *this; --index_; return old; }
    const_iterator& operator+=(difference_type n) { return index_ += n, *this; }
    const_iterator& operator-=(difference_type n) { return index_ -= n, *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) { return a.index_ - b.index_; }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.index_ == b.index_; }
    friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.index_ <=> b.index_; }

   private:
    const StringPairs* set_ = nullptr;
    difference_type index_ = 0;
  };
  using iterator = const_iterator;

  StringPairs() = default;
  // Sorts by key; of equal keys the last one given wins.
  StringPairs(std::initializer_list<value_type> pairs);
  explicit StringPairs(std::span<const value_type> pairs);
  // `pairs` is reordered (sorted by key) in place; used by the parser's reusable scratch.
  static StringPairs fromUnsorted(std::vector<value_type>& pairs);
  StringPairs(const StringPairs& other);
  StringPairs& operator=(const StringPairs& other);
  StringPairs(StringPairs&&) noexcept = default;
  StringPairs& operator=(StringPairs&&) noexcept = default;

  size_t size() const { return data_ ? header().count : 0; }
  bool empty() const { return size() == 0; }
  value_type at(size_t index) const;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  // Inserts or replaces `pair` by key (a rebuild: for tests and tools, not hot paths).
  void push_back(const value_type& pair);

  // Bytes of the heap block (0 when empty).
  size_t heapBytes() const { return data_ ? header().block_bytes : 0; }

  friend bool operator==(const StringPairs& a, const StringPairs& b);

 private:
  struct Header {
    uint32_t count;
    uint32_t block_bytes;
  };
  // Key is chars[key, value), value chars[value, end), offsets from the block start.
  struct Entry {
    uint32_t key;
    uint32_t value;
    uint32_t end;
  };

  // `sorted` is sorted by key with unique keys.
  void build(std::span<const value_type> sorted);
  // Read with memcpy: the block is chars, the structs are only its layout.
  Header header() const;
  Entry entry(size_t index) const;

  // Header, Entry[count], then the characters of every key and value; null when empty.
  std::unique_ptr<char[]> data_;
};

inline StringPairs::Header StringPairs::header() const {
  Header header;
  std::memcpy(&header, data_.get(), sizeof header);
  return header;
}

inline StringPairs::Entry StringPairs::entry(size_t index) const {
  Entry entry;
  std::memcpy(&entry, data_.get() + sizeof(Header) + index * sizeof(Entry), sizeof entry);
  return entry;
}

inline StringPairs::value_type StringPairs::at(size_t index) const {
  const Entry e = entry(index);
  const char* base = data_.get();
  return {std::string_view(base + e.key, e.value - e.key), std::string_view(base + e.value, e.end - e.value)};
}

using Labels = StringPairs;
// Field path ("spec.nodeName") -> value exactly as a field selector compares it
// (strings as is, booleans "true"/"false", integers in decimal, missing = "").
using Fields = StringPairs;

inline std::optional<std::string_view> lookup(const StringPairs& set, std::string_view key) {
  auto it = std::lower_bound(set.begin(), set.end(), key,
                             [](const StringPairs::value_type& entry, std::string_view k) { return entry.first < k; });
  if (it == set.end() || (*it).first != key) return std::nullopt;
  return (*it).second;
}

inline std::optional<std::string_view> lookup(const std::vector<std::pair<std::string, std::string>>& set,
                                              std::string_view key) {
  auto it = std::lower_bound(set.begin(), set.end(), key,
                             [](const auto& entry, std::string_view k) { return entry.first < k; });
  if (it == set.end() || it->first != key) return std::nullopt;
  return std::string_view(it->second);
}

}  // namespace cache
