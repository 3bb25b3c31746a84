// HTTP/2 request fields as nghttp2 decodes them (issue 18): kept as references on its
// buffers, so a header list's memory follows its wire size, and bounded by the list size
// the connection advertises.
#include "proxy/http2/http2_fields.h"

#include <doctest/doctest.h>
#include <nghttp2/nghttp2.h>

#include <string>

using proxy::io::Http2RequestHead;

namespace {

// HPACK (RFC 7541 5.1): an integer with an `prefix`-bit prefix after `flags`.
void appendInteger(std::string& out, uint8_t flags, int prefix, size_t value) {
  const size_t max = (1u << prefix) - 1;
  if (value < max) {
    out += static_cast<char>(flags | value);
    return;
  }
  out += static_cast<char>(flags | max);
  for (value -= max; value >= 128; value >>= 7) out += static_cast<char>(0x80 | (value & 0x7f));
  out += static_cast<char>(value);
}

void appendString(std::string& out, const std::string& s) {
  appendInteger(out, 0, 7, s.size());  // no Huffman coding
  out += s;
}

// One HEADERS frame of stream 1 (END_STREAM, END_HEADERS): GET / from the static table,
// then `value` under `name` once as a literal added to the dynamic table (index 62) and
// `references - 1` times as that index: a few bytes each on the wire, the whole value each
// once decoded.
std::string headersFrame(const std::string& name, const std::string& value, int references) {
  std::string block = "\x82\x86\x84";  // :method GET, :scheme http, :path /
  block += '\x01';                      // :authority, literal without indexing, static name
  appendString(block, "example");
  block += '\x40';  // literal with incremental indexing, new name
  appendString(block, name);
  appendString(block, value);
  for (int i = 1; i < references; ++i) block += static_cast<char>(0x80 | 62);
  std::string frame;
  frame += static_cast<char>(block.size() >> 16);
  frame += static_cast<char>(block.size() >> 8);
  frame += static_cast<char>(block.size());
  frame += "\x01\x05";          // HEADERS, END_STREAM | END_HEADERS
  frame += std::string("\x00\x00\x00\x01", 4);
  return frame + block;
}

// A server session of nghttp2's own, whose decoded fields go to `head`.
void decode(const std::string& frame, Http2RequestHead& head) {
  nghttp2_session_callbacks* callbacks = nullptr;
  REQUIRE(nghttp2_session_callbacks_new(&callbacks) == 0);
  nghttp2_session_callbacks_set_on_header_callback2(
      callbacks, [](nghttp2_session*, const nghttp2_frame*, nghttp2_rcbuf* name, nghttp2_rcbuf* value, uint8_t,
                    void* user) {
        static_cast<Http2RequestHead*>(user)->add(name, value);
        return 0;
      });
  nghttp2_session* session = nullptr;
  REQUIRE(nghttp2_session_server_new(&session, callbacks, &head) == 0);
  const std::string input = std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9) + frame;
  CHECK(nghttp2_session_mem_recv(session, reinterpret_cast<const uint8_t*>(input.data()), input.size()) ==
        static_cast<ssize_t>(input.size()));
  // The session (and its HPACK table) goes first: the head's references keep the bytes.
  nghttp2_session_del(session);
  nghttp2_session_callbacks_del(callbacks);
}

}  // namespace

TEST_CASE("250 references to one 4,000-byte HPACK entry are 250 views of one buffer, not 1 MB of copies") {
  const std::string value(4000, 'v');
  const std::string frame = headersFrame("x-filler", value, 250);
  CHECK(frame.size() < 4500);  // 4 KB on the wire
  Http2RequestHead head(1 << 20);
  decode(frame, head);
  REQUIRE_FALSE(head.tooLarge());
  auto req = head.take("10.0.0.1");
  REQUIRE(req);
  CHECK(req->target == "/");
  CHECK(req->header("host") == "example");
  size_t fillers = 0;
  const char* shared = nullptr;
  for (const auto& [name, v] : req->headers) {
    if (name != "x-filler") continue;
    ++fillers;
    CHECK(v == value);
    if (!shared) shared = v.data();
    CHECK(v.data() == shared);  // the table entry's bytes, referenced
  }
  CHECK(fillers == 250);
  // A reference per distinct buffer (the entry's name and value, the authority's), not per field.
  CHECK(req->headers.storageCount() <= 4);
}

TEST_CASE("a header list over the advertised size keeps nothing past the limit and is refused") {
  const std::string value(4000, 'v');
  Http2RequestHead head(100 * 1000);
  decode(headersFrame("x-filler", value, 250), head);
  CHECK(head.tooLarge());
  CHECK(head.keptFields() == 0);  // a refused request needs none of them
  // Every field counts as Go counts it: name, value and 32 bytes.
  CHECK(head.listBytes() <= 100 * 1000 + 4000 + 8 + proxy::io::kFieldOverheadBytes);
}

TEST_CASE("a list just under the limit is kept whole") {
  const std::string value(4000, 'v');
  constexpr size_t kOverhead = proxy::io::kFieldOverheadBytes;
  const size_t pseudo = (7 + 3 + kOverhead) + (7 + 4 + kOverhead) + (5 + 1 + kOverhead) + (10 + 7 + kOverhead);
  const size_t list = pseudo + 10 * (8 + 4000 + kOverhead);
  Http2RequestHead head(list);
  decode(headersFrame("x-filler", value, 10), head);
  CHECK_FALSE(head.tooLarge());
  CHECK(head.keptFields() == 10);
}
