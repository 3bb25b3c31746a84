#pragma once
// The fields of HTTP/2 HEADERS both ways, as plain code (no Asio): a request's, kept as
// nghttp2 decodes them, as references on its buffers (no copy: proxy/http/header_fields.h
// says why), and made into a Request; a response head's, as the lower-case fields nghttp2
// submits.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http/header_fields.h"
#include "proxy/request.h"

struct nghttp2_rcbuf;

namespace proxy::io {

// Go's http2 server counts a header list as RFC 9113 6.5.2 does: every field's name and
// value plus 32 bytes of overhead, pseudo-fields included.
inline constexpr size_t kFieldOverheadBytes = 32;

// The reference on an nghttp2 buffer that a field's view needs; empty for nghttp2's
// static table, which outlives every session.
FieldStorage rcbufStorage(nghttp2_rcbuf* buffer);

// One stream's request fields as HEADERS (and CONTINUATION) frames bring them.
class Http2RequestHead {
 public:
  // `max_list_bytes`: the SETTINGS_MAX_HEADER_LIST_SIZE the connection advertised.
  explicit Http2RequestHead(size_t max_list_bytes) : max_list_bytes_(max_list_bytes) {}

  // One decoded field (nghttp2's on_header_callback2).
  void add(nghttp2_rcbuf* name, nghttp2_rcbuf* value);
  // The same for fields whose bytes lie in `name_storage` and `value_storage`.
  void add(std::string_view name, std::string_view value, const FieldStorage& name_storage,
           const FieldStorage& value_storage);
  // The list went over max_list_bytes: the fields after the limit were dropped as they
  // came (Go's MetaHeadersFrame.Truncated), so a stream holds at most the limit's worth,
  // and the request is answered 431.
  bool tooLarge() const { return truncated_; }
  size_t listBytes() const { return list_bytes_; }
  // Regular fields kept so far (cookies and :authority are added by take()).
  size_t keptFields() const { return fields_.size(); }

  // The request (RFC 9113 8.3.1): :method, :path as its target, :authority as Host when
  // no host field came, cookie fields joined with "; " (8.2.3), fields of one hop left out.
  // nullopt for a request this server does not take (no :method or :path, or CONNECT):
  // the connection resets the stream. Leaves the head empty.
  std::optional<Request> take(std::string client_ip);

 private:
  void addRegular(std::string_view name, std::string_view value, const FieldStorage& name_storage,
                  const FieldStorage& value_storage);

  const size_t max_list_bytes_;
  size_t list_bytes_ = 0;
  bool truncated_ = false;
  bool has_host_ = false;
  std::string method_;
  std::string path_;
  std::string_view authority_;
  FieldStorage authority_storage_;
  std::vector<std::string_view> cookies_;
  std::vector<FieldStorage> cookie_storage_;
  HeaderFields fields_;
};

// A response's HEADERS fields (RFC 9113 8.3.2): ":status" first, then `headers` with names
// in lower case (8.2.1) and fields of one hop left out (8.2.2), then content-length when
// the answer is sized (its DATA, or for HEAD the entity a GET would get).
HeaderList responseFields(unsigned status, const HeaderList& headers, std::optional<uint64_t> content_length);

}  // namespace proxy::io
