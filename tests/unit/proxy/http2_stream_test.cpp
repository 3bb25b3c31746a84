// Http2Stream: an HTTP/2 stream as the request code's HTTP/1.1 connection (issue 18).
#include "proxy/http2_stream.h"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <string>
#include <vector>

using proxy::HeaderList;
using proxy::io::error_code;
using proxy::io::Http2Stream;
using proxy::io::Http2StreamOwner;
namespace asio = boost::asio;

namespace {

struct RecordingOwner : Http2StreamOwner {
  int responses = 0;
  unsigned status = 0;
  HeaderList headers;
  bool has_body = false;
  int resumed = 0;
  size_t consumed_bytes = 0;
  int resets = 0;
  void submitResponse(int32_t, unsigned s, const HeaderList& h, bool body) override {
    ++responses;
    status = s;
    headers = h;
    has_body = body;
  }
  void resumeData(int32_t) override { ++resumed; }
  void consumed(int32_t, size_t n) override { consumed_bytes += n; }
  void resetStream(int32_t) override { ++resets; }
  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers) {
      if (n == name) return v;
    }
    return "<absent>";
  }
};

struct Fixture {
  asio::io_context io;
  RecordingOwner owner;
  std::shared_ptr<Http2Stream> stream = std::make_shared<Http2Stream>(io.get_executor(), &owner, 1);

  // A request of `method` and `path` whose HEADERS frame arrived (with END_STREAM when
  // `end_stream`).
  bool start(const char* method, const char* path, bool end_stream) {
    stream->addRequestHeader(":method", method);
    stream->addRequestHeader(":path", path);
    return stream->requestHeadersDone(end_stream);
  }

  std::string readAll() {
    std::string out;
    while (true) {
      char buf[64];
      bool done = false;
      size_t got = 0;
      error_code result;
      stream->asyncRead(asio::buffer(buf), [&](error_code ec, size_t n) {
        done = true;
        got = n;
        result = ec;
      });
      io.restart();
      io.poll();
      if (!done) {  // nothing more until the client resets the stream
        stream->cancel();
        io.restart();
        io.poll();
        return out;
      }
      out.append(buf, got);
    }
  }
  // The last write's outcome: it may complete after write() returned.
  struct WriteResult {
    size_t taken = 0;
    bool done = false;
    error_code ec;
  };
  std::shared_ptr<WriteResult> last = std::make_shared<WriteResult>();
  // Writes `text` (which must outlive a write that waits) as the request code would;
  // returns the bytes the write took.
  size_t write(const std::string& text, error_code* ec_out = nullptr, bool* completed = nullptr) {
    last = std::make_shared<WriteResult>();
    stream->asyncWrite({asio::buffer(text)}, [result = last](error_code ec, size_t n) {
      result->taken = n;
      result->done = true;
      result->ec = ec;
    });
    io.restart();
    io.poll();
    if (completed) *completed = last->done;
    if (ec_out) *ec_out = last->ec;
    return last->taken;
  }
  std::string body() {
    std::string out;
    uint8_t buf[4096];
    while (true) {
      bool eof = false;
      auto n = stream->readBody(buf, sizeof buf, eof);
      if (!n) break;
      out.append(reinterpret_cast<char*>(buf), *n);
      if (eof || *n == 0) break;
    }
    return out;
  }
};

}  // namespace

TEST_CASE("a request's HEADERS and DATA read as one HTTP/1.1 request, chunked without content-length") {
  Fixture f;
  f.stream->addRequestHeader(":method", "POST");
  f.stream->addRequestHeader(":scheme", "https");
  f.stream->addRequestHeader(":authority", "apiserver:6443");
  f.stream->addRequestHeader(":path", "/api/v1/namespaces/default/configmaps");
  f.stream->addRequestHeader("content-type", "application/json");
  f.stream->addRequestHeader("cookie", "a=1");
  f.stream->addRequestHeader("cookie", "b=2");
  REQUIRE(f.stream->requestHeadersDone(false));
  const std::string body = "{\"kind\":\"ConfigMap\"}";
  f.stream->addRequestData(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  f.stream->requestEnded();
  CHECK(f.readAll() ==
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\ncontent-type: application/json\r\n"
        "cookie: a=1; b=2\r\nhost: apiserver:6443\r\ntransfer-encoding: chunked\r\n\r\n"
        "14\r\n{\"kind\":\"ConfigMap\"}\r\n0\r\n\r\n");
  // The request code took the DATA: the client's window opens by as much.
  CHECK(f.owner.consumed_bytes == body.size());
}

TEST_CASE("a request without :path or with CONNECT is refused") {
  Fixture f;
  f.stream->addRequestHeader(":method", "GET");
  CHECK_FALSE(f.stream->requestHeadersDone(true));
  Fixture g;
  g.stream->addRequestHeader(":method", "CONNECT");
  g.stream->addRequestHeader(":path", "/");
  CHECK_FALSE(g.stream->requestHeadersDone(true));
}

TEST_CASE("a chunked HTTP/1.1 response becomes HEADERS without connection fields, then its de-chunked body") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods?watch=1", true));
  f.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
          "Connection: keep-alive\r\nAudit-Id: x\r\n\r\n");
  CHECK(f.owner.responses == 1);
  CHECK(f.owner.status == 200);
  CHECK(f.owner.has_body);
  CHECK(f.owner.header("content-type") == "application/json");
  CHECK(f.owner.header("audit-id") == "x");
  CHECK(f.owner.header("transfer-encoding") == "<absent>");
  CHECK(f.owner.header("connection") == "<absent>");
  // A chunk split across writes, its size line too.
  f.write("1");
  f.write("0\r\n{\"type\":\"ADDED\"}\r\n");
  f.write("0\r\n\r\n");
  bool eof = false;
  uint8_t buf[64];
  auto n = f.stream->readBody(buf, sizeof buf, eof);
  REQUIRE(n);
  CHECK(std::string(reinterpret_cast<char*>(buf), *n) == "{\"type\":\"ADDED\"}");
  CHECK(eof);
}

TEST_CASE("a body-less answer is one HEADERS frame; HEAD answers keep their content-length") {
  Fixture f;
  REQUIRE(f.start("HEAD", "/api/v1/pods", true));
  f.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1234\r\n\r\n");
  CHECK(f.owner.responses == 1);
  CHECK_FALSE(f.owner.has_body);
  CHECK(f.owner.header("content-length") == "1234");
}

TEST_CASE("an interim 100 Continue is dropped; an upgrade cannot be served on a stream") {
  Fixture f;
  REQUIRE(f.start("PUT", "/x", false));
  f.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
  CHECK(f.owner.status == 201);
  CHECK(f.body() == "ok");

  Fixture g;
  REQUIRE(g.start("GET", "/api/v1/namespaces/a/pods/p/exec", true));
  error_code ec;
  g.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\n\r\n", &ec);
  CHECK(ec);
  CHECK(g.owner.responses == 0);
  CHECK(g.owner.resets == 1);
}

TEST_CASE("a write waits while the stream's send buffer is full, and goes on once DATA frames take bytes") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods", true));
  const std::string big(3 * Http2Stream::kSendBufferBytes, 'x');
  f.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n");
  // One write takes at most the buffer's room (a write_some), not the whole list.
  CHECK(f.write(big) <= Http2Stream::kSendBufferBytes);
  bool completed = true;
  f.write(big, nullptr, &completed);
  CHECK_FALSE(completed);  // full: waits for the client's window
  uint8_t buf[16384];
  bool eof = false;
  REQUIRE(f.stream->readBody(buf, sizeof buf, eof));
  f.io.restart();
  f.io.poll();  // the waiting write is served once room is made
  CHECK(f.last->done);
  CHECK(f.last->taken == sizeof buf);
}

TEST_CASE("a reset stream fails the waiting read as a closed connection does") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods?watch=1", true));
  f.readAll();
  error_code result;
  bool done = false;
  char buf[16];
  f.stream->asyncRead(asio::buffer(buf), [&](error_code ec, size_t) {
    done = true;
    result = ec;
  });
  f.io.restart();
  f.io.poll();
  CHECK_FALSE(done);  // the client is still there: the read waits
  f.stream->closed();
  f.io.restart();
  f.io.poll();
  CHECK(done);
  CHECK(result == asio::error::connection_reset);
}

TEST_CASE("a response left incomplete resets the stream; a body ended by the connection's end completes") {
  Fixture f;
  REQUIRE(f.start("GET", "/logs", true));
  f.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  f.stream->finish();
  CHECK(f.owner.resets == 1);

  Fixture g;
  REQUIRE(g.start("GET", "/logs", true));
  g.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nline one\n");
  g.stream->finish();
  CHECK(g.owner.resets == 0);
  CHECK(g.body() == "line one\n");
}
