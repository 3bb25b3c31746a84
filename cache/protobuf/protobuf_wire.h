#pragma once
// Internal to cache/protobuf_*.cpp: the wire-level cursor and writer over libprotobuf-lite.
// Not part of the library's interface (no header of cache/ includes it).

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cache::protobuf {

using google::protobuf::io::CodedInputStream;
using WireFormatLite = google::protobuf::internal::WireFormatLite;

// A cursor over one message. Length-delimited values come back as views into the input;
// everything else is skipped by wire type.
class MessageReader {
 public:
  // CodedInputStream counts in int: a message of 2 GiB or more is refused (failed()).
  explicit MessageReader(std::string_view message)
      : message_(message.size() < kMaxMessage ? message : std::string_view{}),
        in_(reinterpret_cast<const uint8_t*>(message_.data()), static_cast<int>(message_.size())),
        failed_(message.size() >= kMaxMessage) {
    // The whole message is in memory: its size is the only limit (the default is 64 MiB,
    // which a LIST of many objects exceeds).
    in_.SetTotalBytesLimit(static_cast<int>(message_.size()));
  }

  // The next field's number, or 0 at the end of the message. A tag cut short or naming
  // field 0 sets failed() (and also gives 0).
  uint32_t next() {
    if (failed_ || in_.CurrentPosition() >= static_cast<int>(message_.size())) return 0;
    uint32_t tag = 0;
    if (!in_.ReadVarint32(&tag) || WireFormatLite::GetTagFieldNumber(tag) == 0) {
      failed_ = true;
      return 0;
    }
    tag_ = tag;
    wire_type_ = WireFormatLite::GetTagWireType(tag);
    return WireFormatLite::GetTagFieldNumber(tag);
  }

  // The current field's bytes; nullopt (and failed()) when it is not length-delimited or
  // runs past the end.
  std::optional<std::string_view> bytes() {
    if (wire_type_ != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return fail<std::string_view>();
    uint32_t length = 0;
    if (!in_.ReadVarint32(&length)) return fail<std::string_view>();
    const size_t offset = static_cast<size_t>(in_.CurrentPosition());
    if (length > message_.size() - offset || !in_.Skip(static_cast<int>(length))) return fail<std::string_view>();
    return message_.substr(offset, length);
  }

  std::optional<int64_t> varint() {
    uint64_t value = 0;
    if (wire_type_ != WireFormatLite::WIRETYPE_VARINT || !in_.ReadVarint64(&value)) return fail<int64_t>();
    return static_cast<int64_t>(value);
  }

  // Reads the current field into `out`; false when its wire type cannot hold one.
  bool read(std::string_view& out) {
    auto value = bytes();
    if (value) out = *value;
    return value.has_value();
  }
  bool read(int64_t& out) {
    auto value = varint();
    if (value) out = *value;
    return value.has_value();
  }

  // Skips a field this reader does not want; false when it runs past the end.
  bool skip() {
    if (!WireFormatLite::SkipField(&in_, tag_)) failed_ = true;
    return !failed_;
  }

  bool failed() const { return failed_; }
  // Where the next tag starts: before next(), the start of the field it reads; after a
  // read or skip, the end of that field.
  size_t position() const { return static_cast<size_t>(in_.CurrentPosition()); }
  size_t offsetOf(std::string_view inner) const { return static_cast<size_t>(inner.data() - message_.data()); }

 private:
  static constexpr size_t kMaxMessage = size_t{1} << 31;

  template <class T>
  std::optional<T> fail() {
    failed_ = true;
    return std::nullopt;
  }

  std::string_view message_;
  CodedInputStream in_;
  uint32_t tag_ = 0;
  WireFormatLite::WireType wire_type_ = WireFormatLite::WIRETYPE_VARINT;
  bool failed_ = false;
};


// Visits each field of `message` in wire order: on_field(number, reader) reads the field
// (read(), bytes(), varint()) or skips it, and returns false when it cannot use it. False
// when the message is malformed or a visit said so.
template <class OnField>
bool forEachField(std::string_view message, OnField&& on_field) {
  MessageReader reader(message);
  while (const uint32_t field = reader.next()) {
    if (!on_field(field, reader)) return false;
  }
  return !reader.failed();
}

// The bytes `value` takes as a varint.
inline size_t varintSize(uint64_t value) {
  return google::protobuf::io::CodedOutputStream::VarintSize64(value);
}

// Visits each field of `message` whole, as on_field(number, bytes) where `bytes` is the
// field as written (tag, length, value), for writers that copy most fields and change a
// few. False when the message is malformed.
template <class OnField>
bool forEachRawField(std::string_view message, OnField&& on_field) {
  MessageReader reader(message);
  while (true) {
    const size_t start = reader.position();
    const uint32_t field = reader.next();
    if (field == 0) break;
    if (!reader.skip()) return false;
    on_field(field, message.substr(start, reader.position() - start));
  }
  return !reader.failed();
}

// Appends `value` as a varint.
inline void appendVarint(std::string& out, uint64_t value) {
  uint8_t buffer[10];  // the longest varint of 64 bits
  const uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(value, buffer);
  out.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(end - buffer));
}

// Appends a length-delimited field: tag, length, bytes.
inline void appendBytesField(std::string& out, uint32_t field, std::string_view bytes) {
  appendVarint(out, WireFormatLite::MakeTag(static_cast<int>(field), WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  appendVarint(out, bytes.size());
  out.append(bytes);
}

inline void appendVarintField(std::string& out, uint32_t field, uint64_t value) {
  appendVarint(out, WireFormatLite::MakeTag(static_cast<int>(field), WireFormatLite::WIRETYPE_VARINT));
  appendVarint(out, value);
}

}  // namespace cache::protobuf
