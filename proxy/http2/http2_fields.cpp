#include "proxy/http2/http2_fields.h"

#include <nghttp2/nghttp2.h>

#include <utility>

#include "proxy/http/header_filter.h"

namespace proxy::io {
namespace {

const FieldStorage::Counting kRcbufCounting{
    [](void* p) { nghttp2_rcbuf_incref(static_cast<nghttp2_rcbuf*>(p)); },
    [](void* p) { nghttp2_rcbuf_decref(static_cast<nghttp2_rcbuf*>(p)); }};

std::string_view viewOf(nghttp2_rcbuf* buffer) {
  const nghttp2_vec v = nghttp2_rcbuf_get_buf(buffer);
  return {reinterpret_cast<const char*>(v.base), v.len};
}

// Fields that describe one hop (the pass-through's list): HTTP/2 forbids the
// connection-specific ones (RFC 9113 8.2.2; nghttp2 refuses a request that has them), the
// rest would not cross the proxy either. Content-Length stays: it sizes the request body.
bool hopOnly(std::string_view name) { return isHopByHopHeader(name) && !headerNameEquals(name, "content-length"); }

}  // namespace

FieldStorage rcbufStorage(nghttp2_rcbuf* buffer) {
  if (nghttp2_rcbuf_is_static(buffer)) return {};
  return FieldStorage(buffer, kRcbufCounting);
}

void Http2RequestHead::add(nghttp2_rcbuf* name, nghttp2_rcbuf* value) {
  const std::string_view n = viewOf(name);
  const std::string_view v = viewOf(value);
  // No reference for a field past the limit: it is dropped.
  if (truncated_ || list_bytes_ + n.size() + v.size() + kFieldOverheadBytes > max_list_bytes_) {
    add(n, v, {}, {});
    return;
  }
  add(n, v, rcbufStorage(name), rcbufStorage(value));
}

void Http2RequestHead::add(std::string_view name, std::string_view value, const FieldStorage& name_storage,
                           const FieldStorage& value_storage) {
  if (truncated_) return;
  list_bytes_ += name.size() + value.size() + kFieldOverheadBytes;
  if (list_bytes_ > max_list_bytes_) {
    truncated_ = true;
    fields_ = HeaderFields();  // the request is refused: nothing of it is needed
    cookies_.clear();
    cookie_storage_.clear();
    return;
  }
  if (name.empty() || name[0] != ':') return addRegular(name, value, name_storage, value_storage);
  if (name == ":method") {
    method_ = value;
  } else if (name == ":path") {
    path_ = value;
  } else if (name == ":authority") {
    authority_ = value;
    authority_storage_ = value_storage;
  }
}

void Http2RequestHead::addRegular(std::string_view name, std::string_view value, const FieldStorage& name_storage,
                                  const FieldStorage& value_storage) {
  if (hopOnly(name)) return;
  if (name == "cookie") {
    cookies_.push_back(value);
    cookie_storage_.push_back(value_storage);
    return;
  }
  has_host_ = has_host_ || name == "host";
  fields_.add(name, value, name_storage, value_storage);
}

std::optional<Request> Http2RequestHead::take(std::string client_ip) {
  if (method_.empty() || path_.empty() || method_ == "CONNECT") return std::nullopt;
  if (cookies_.size() == 1) {
    fields_.add("cookie", cookies_[0], {}, cookie_storage_[0]);
  } else if (cookies_.size() > 1) {
    std::string joined;
    for (std::string_view cookie : cookies_) joined.append(joined.empty() ? "" : "; ").append(cookie);
    fields_.add("cookie", std::move(joined));
  }
  if (!has_host_ && !authority_.empty()) fields_.add("host", authority_, {}, authority_storage_);
  Request req = Request::make(std::move(method_), std::move(path_), std::move(fields_), std::move(client_ip));
  fields_ = HeaderFields();
  cookies_.clear();
  cookie_storage_.clear();
  authority_storage_ = FieldStorage();
  return req;
}

HeaderList responseFields(unsigned status, const HeaderList& headers, std::optional<uint64_t> content_length) {
  HeaderList out;
  out.reserve(headers.size() + 2);
  out.emplace_back(":status", std::to_string(status));
  for (const auto& [name, value] : headers) {
    // Content-Length among them: the answer's own size below says it (the framing is the
    // stream's, as on HTTP/1.1).
    if (isHopByHopHeader(name)) continue;
    out.emplace_back(asciiLower(name), value);
  }
  if (content_length) out.emplace_back("content-length", std::to_string(*content_length));
  return out;
}

}  // namespace proxy::io
