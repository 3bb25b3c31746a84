#pragma once
// HeaderFields: a request's header fields as views, with counted references on what they
// point into. An HTTP/1.1 head owns its strings (one list per request); an HTTP/2 stream's
// fields point into nghttp2's reference-counted buffers (proxy/http2/http2_fields.h), so a
// field sent as a reference to an HPACK table entry costs a view, not a copy of the entry:
// 250 references to one 4,000-byte entry are 4 KB on the wire and 1 MB decoded, and Go's
// server, whose strings share the table's bytes, holds them in +22 KiB per stream.
//
// Plain code. A HeaderFields is used by one thread at a time: nghttp2 counts its buffers'
// references without atomics, and so does the owned list here.

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proxy {

// Header name/value pairs in wire order; names keep the sender's spelling.
using HeaderList = std::vector<std::pair<std::string, std::string>>;
using HeaderField = std::pair<std::string_view, std::string_view>;

// A counted reference on storage that fields point into, taken on construction and copy,
// given back on destruction. `Counting` says how that kind of storage counts.
class FieldStorage {
 public:
  struct Counting {
    void (*retain)(void*);
    void (*release)(void*);
  };

  FieldStorage() = default;
  FieldStorage(void* storage, const Counting& counting);
  FieldStorage(const FieldStorage& other);
  FieldStorage(FieldStorage&& other) noexcept;
  FieldStorage& operator=(FieldStorage other) noexcept;
  ~FieldStorage();

  const void* get() const { return storage_; }
  explicit operator bool() const { return storage_ != nullptr; }

 private:
  void* storage_ = nullptr;
  const Counting* counting_ = nullptr;
};

class HeaderFields {
 public:
  using value_type = HeaderField;
  using const_iterator = std::vector<HeaderField>::const_iterator;

  HeaderFields() = default;
  // Fields that own their strings (an HTTP/1.1 head, a test's list). Implicit, so the
  // request-header functions take a HeaderList as they did.
  HeaderFields(HeaderList owned);  // NOLINT(google-explicit-constructor)
  HeaderFields(std::initializer_list<HeaderList::value_type> owned) : HeaderFields(HeaderList(owned)) {}

  // A field whose bytes lie in `name_storage` and `value_storage` (either may be empty:
  // storage that outlives every request, such as nghttp2's static table).
  void add(std::string_view name, std::string_view value, const FieldStorage& name_storage,
           const FieldStorage& value_storage);
  // A field built here (HTTP/2's cookie fields joined into one), owned by the list.
  void add(std::string name, std::string value);

  const_iterator begin() const { return fields_.begin(); }
  const_iterator end() const { return fields_.end(); }
  size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  const HeaderField& operator[](size_t i) const { return fields_[i]; }
  // References held on distinct storage (what the views cost beyond themselves).
  size_t storageCount() const { return storage_.size() + (owned_ ? 1 : 0); }

 private:
  // Takes a reference on `storage` unless one of the last two taken is on it already:
  // a run of references to one table entry alternates its name and its value.
  void hold(const FieldStorage& storage);

  std::vector<HeaderField> fields_;
  FieldStorage owned_;  // the list a HeaderList became (one allocation per HTTP/1.1 head)
  std::vector<FieldStorage> storage_;
};

}  // namespace proxy
