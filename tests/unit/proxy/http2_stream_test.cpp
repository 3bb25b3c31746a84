// Http2Stream: one HTTP/2 stream's request and answer on nghttp2's terms (issue 18), with
// a recording connection in place of nghttp2.
#include "proxy/http2/http2_stream.h"

#include <doctest/doctest.h>
#include <nghttp2/nghttp2.h>

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <list>
#include <string>
#include <vector>

#include "proxy/http/client_watch.h"
#include "proxy/http/gzip_writer.h"
#include "proxy/server/server_context.h"
#include "tests/unit/proxy/gunzip.h"

using proxy::HeaderList;
using proxy::io::error_code;
using proxy::io::EventStreamOptions;
using proxy::io::EventWriter;
using proxy::io::Http2Stream;
using proxy::io::Http2StreamOwner;
using proxy::io::ResponseHead;
namespace asio = boost::asio;

namespace {

struct RecordingOwner : Http2StreamOwner {
  int heads = 0;
  ResponseHead head;
  bool end_stream = false;
  int resumed = 0;
  size_t consumed_bytes = 0;
  std::vector<uint32_t> resets;
  void submitHead(int32_t, const ResponseHead& h, bool end) override {
    ++heads;
    head = h;
    end_stream = end;
  }
  void resumeData(int32_t) override { ++resumed; }
  void consumed(int32_t, size_t n) override { consumed_bytes += n; }
  void resetStream(int32_t, uint32_t code) override { resets.push_back(code); }
  void writeNow() override {}
};

// The outcome of a coroutine run on the fixture's io_context.
struct Outcome {
  bool done = false;
  std::exception_ptr error;
  bool failedWith(proxy::io::error_code want) const {
    if (!error) return false;
    try {
      std::rethrow_exception(error);
    } catch (const boost::system::system_error& e) {
      return e.code() == want;
    } catch (...) {
    }
    return false;
  }
};

struct Fixture {
  asio::io_context io;
  RecordingOwner owner;
  asio::ip::tcp::socket socket{io};
  proxy::io::Session connection{std::move(socket), nullptr};
  std::shared_ptr<Http2Stream> stream = std::make_shared<Http2Stream>(
      io.get_executor(), owner, 1, std::make_shared<proxy::io::Session>(proxy::io::Session::Http2StreamOf{connection}),
      proxy::io::Http2Timeouts{}, 1 << 20);

  // The fields a request was started with: the head holds views of them without owners
  // (nghttp2's buffers own them in the server), so they must outlive the stream's use.
  std::list<HeaderList> kept_fields;

  // A request whose HEADERS arrived: `fields` after the pseudo-fields.
  bool start(const char* method, const char* path, bool end_stream, HeaderList given = {}) {
    const HeaderList& fields = kept_fields.emplace_back(std::move(given));
    stream->requestHead().add(":method", method, {}, {});
    stream->requestHead().add(":scheme", "http", {}, {});
    stream->requestHead().add(":authority", "apiserver:6443", {}, {});
    stream->requestHead().add(":path", path, {}, {});
    for (const auto& [name, value] : fields) stream->requestHead().add(name, value, {}, {});
    return stream->start("10.0.0.1", end_stream);
  }
  std::shared_ptr<Outcome> spawn(asio::awaitable<void> work) {
    auto outcome = std::make_shared<Outcome>();
    asio::co_spawn(io, std::move(work), [outcome](std::exception_ptr e) {
      outcome->done = true;
      outcome->error = e;
    });
    poll();
    return outcome;
  }
  void poll() {
    io.restart();
    io.poll();
  }
  // What nghttp2 would send as DATA now, frame by frame of at most `frame` bytes, into a
  // copying batch as a TLS connection takes them; `eof` once END_STREAM would go with the
  // last.
  std::string drain(bool& eof, size_t frame = 16384) {
    proxy::io::WriteBatch batch(true);
    eof = false;
    while (!eof) {
      uint32_t flags = 0;
      const ssize_t n = stream->nextData(frame, &flags);
      if (n == NGHTTP2_ERR_DEFERRED) break;
      REQUIRE(n >= 0);
      CHECK((flags & NGHTTP2_DATA_FLAG_NO_COPY) != 0);
      stream->sent(stream->takeData(static_cast<size_t>(n), batch));
      eof = (flags & NGHTTP2_DATA_FLAG_EOF) != 0;
    }
    poll();
    return std::string(batch.contiguous());
  }
};

asio::awaitable<void> writeWhole(Http2Stream& s, unsigned status, std::string body) {
  ResponseHead head;
  head.status = status;
  head.headers = {{"Content-Type", "application/json"}};
  co_await s.writeWhole(std::move(head), body);
}

asio::awaitable<void> startEvents(Http2Stream& s, bool gzip, std::unique_ptr<EventWriter>& out) {
  ResponseHead head;
  EventStreamOptions options;
  options.gzip = gzip;
  out = co_await s.startEvents(std::move(head), options);
}

asio::awaitable<void> flush(EventWriter& w) { co_await w.flush(); }

asio::awaitable<void> readBody(Http2Stream& s, std::string& out) {
  char buf[7];
  while (const size_t n = co_await s.readRequestBody(buf, sizeof buf)) out.append(buf, n);
}

asio::awaitable<void> writeLarge(Http2Stream& s, const std::string& body) {
  ResponseHead head;
  head.content_length = body.size();
  co_await s.writeHead(std::move(head));
  const std::string_view halves[] = {std::string_view(body).substr(0, body.size() / 2),
                                     std::string_view(body).substr(body.size() / 2)};
  co_await s.writeBody(halves);
}

}  // namespace

TEST_CASE("a stream's request is made of its fields: :authority as Host, cookies joined, no pseudo-fields") {
  Fixture f;
  REQUIRE(f.start("POST", "/api/v1/namespaces/default/configmaps?dryRun=All", false,
                  {{"content-type", "application/json"}, {"cookie", "a=1"}, {"content-length", "20"}, {"cookie", "b=2"}}));
  const proxy::Request& req = f.stream->request();
  CHECK(req.method == "POST");
  CHECK(req.target == "/api/v1/namespaces/default/configmaps?dryRun=All");
  CHECK(req.info.resource == "configmaps");
  CHECK(req.header("Host") == "apiserver:6443");
  CHECK(req.header("Cookie") == "a=1; b=2");
  CHECK(req.client_ip == "10.0.0.1");
  for (const auto& [name, value] : req.headers) CHECK(name[0] != ':');
  CHECK(f.stream->requestBodyLength() == 20u);
  CHECK(f.stream->requestBodyPending());

  const std::string body = "{\"kind\":\"ConfigMap\"}";
  f.stream->addRequestData(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  f.stream->requestEnded();
  std::string read;
  auto done = f.spawn(readBody(*f.stream, read));
  CHECK(done->done);
  CHECK(read == body);
  // The request code took the DATA: the client's window opens by as much.
  CHECK(f.owner.consumed_bytes == body.size());
  CHECK_FALSE(f.stream->requestBodyPending());
}

TEST_CASE("a request without :path or with CONNECT is refused") {
  Fixture f;
  f.stream->requestHead().add(":method", "GET", {}, {});
  CHECK_FALSE(f.stream->start("", true));
  Fixture g;
  CHECK_FALSE(g.start("CONNECT", "/", true));
}

TEST_CASE("a whole answer is HEADERS with its content-length, then its body as DATA with END_STREAM") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods", true));
  auto done = f.spawn(writeWhole(*f.stream, 200, "{\"items\":[]}"));
  CHECK(done->done);  // small: queued at once
  CHECK(f.owner.heads == 1);
  CHECK_FALSE(f.owner.end_stream);
  CHECK(f.owner.head.content_length == 12u);
  bool eof = false;
  CHECK(f.drain(eof) == "{\"items\":[]}");
  CHECK(eof);
}

TEST_CASE("HEAD, and an empty body, end the stream on HEADERS; HEAD keeps the entity's content-length") {
  Fixture f;
  REQUIRE(f.start("HEAD", "/api/v1/pods", true));
  f.spawn(writeWhole(*f.stream, 200, "1234567890"));
  CHECK(f.owner.end_stream);
  CHECK(f.owner.head.content_length == 10u);
  Fixture g;
  REQUIRE(g.start("GET", "/x", true));
  g.spawn(writeWhole(g.stream.operator*(), 204, ""));
  CHECK(g.owner.end_stream);
}

TEST_CASE("response fields: :status first, names in lower case, fields of one hop dropped, content-length added") {
  const HeaderList fields = proxy::io::responseFields(
      200, {{"Content-Type", "application/json"}, {"Connection", "keep-alive"}, {"Transfer-Encoding", "chunked"},
            {"Content-Length", "99"}, {"Audit-Id", "x"}},
      12);
  CHECK(fields == HeaderList{{":status", "200"}, {"content-type", "application/json"}, {"audit-id", "x"},
                             {"content-length", "12"}});
}

TEST_CASE("a large write's bytes are read where they lie, and it returns once their socket write has ended") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods", true));
  const std::string body(5 * Http2Stream::kSendBufferBytes, 'x');
  auto done = f.spawn(writeLarge(*f.stream, body));
  CHECK_FALSE(done->done);
  proxy::io::WriteBatch gathered(false);  // a plain TCP connection's
  uint32_t flags = 0;
  ssize_t n = f.stream->nextData(body.size(), &flags);
  REQUIRE(n == static_cast<ssize_t>(body.size()));
  CHECK((flags & NGHTTP2_DATA_FLAG_EOF) != 0);
  const uint64_t mark = f.stream->takeData(static_cast<size_t>(n), gathered);
  f.poll();
  CHECK(gathered.bytes() == body.size());
  CHECK_FALSE(done->done);  // taken, and still being written from the writer's memory
  f.stream->sent(mark);
  f.poll();
  CHECK(done->done);
  CHECK_FALSE(done->error);
}

TEST_CASE("a large write that fails returns only once no write reads its bytes any more") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods", true));
  const std::string body(5 * Http2Stream::kSendBufferBytes, 'x');
  auto done = f.spawn(writeLarge(*f.stream, body));
  proxy::io::WriteBatch gathered(false);
  uint32_t flags = 0;
  const ssize_t n = f.stream->nextData(body.size() / 2, &flags);
  const uint64_t mark = f.stream->takeData(static_cast<size_t>(n), gathered);
  f.stream->closed();  // the client reset the stream while the half is being written
  f.poll();
  CHECK_FALSE(done->done);
  f.stream->sent(mark);
  f.poll();
  CHECK(done->failedWith(boost::asio::error::connection_reset));
}

TEST_CASE("events are queued as the shared frames they are, and a full queue makes flush wait") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods?watch=1", true));
  std::unique_ptr<EventWriter> events;
  f.spawn(startEvents(*f.stream, false, events));
  REQUIRE(events);
  CHECK_FALSE(f.owner.end_stream);
  auto frame = watch::makeFrame(std::string(Http2Stream::kSendBufferBytes / 2, 'e'));
  events->add(frame);
  error_code ec;
  CHECK(events->trySend(ec));
  CHECK(frame.use_count() == 2);  // referenced by the queue, not copied
  events->add(frame);
  events->add(frame);
  CHECK_FALSE(events->trySend(ec));  // one fits, the third waits
  CHECK_FALSE(ec);
  CHECK(events->bytes() == frame->size());
  auto flushed = f.spawn(flush(*events));
  CHECK_FALSE(flushed->done);
  bool eof = false;
  CHECK(f.drain(eof, 16384).size() == 2 * frame->size());
  f.poll();
  CHECK(flushed->done);
  CHECK(events->empty());
}

TEST_CASE("a flush whose next frame does not fit waits for room for it, without spinning") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods?watch=1", true));
  std::unique_ptr<EventWriter> events;
  f.spawn(startEvents(*f.stream, false, events));
  events->add(watch::makeFrame(std::string(Http2Stream::kSendBufferBytes - 100, 'e')));
  events->add(watch::makeFrame(std::string(200, 'f')));
  error_code ec;
  CHECK_FALSE(events->trySend(ec));
  auto outcome = std::make_shared<Outcome>();
  asio::co_spawn(f.io, flush(*events), [outcome](std::exception_ptr e) {
    outcome->done = true;
    outcome->error = e;
  });
  f.io.restart();
  int handlers = 0;
  while (handlers < 100 && f.io.poll_one() > 0) ++handlers;
  CHECK(handlers < 100);  // parked on its timer, not looping
  CHECK_FALSE(outcome->done);
  bool eof = false;
  const size_t first = f.drain(eof).size();  // room made: the flush queues the rest
  CHECK(outcome->done);
  CHECK(first + f.drain(eof).size() == Http2Stream::kSendBufferBytes + 100);
}

TEST_CASE("W9: a gzip'd watch sends whole gzip members, a shared event's compressed once for every watcher") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods?watch=1", true));
  std::unique_ptr<EventWriter> events;
  f.spawn(startEvents(*f.stream, true, events));
  const auto added = watch::makeSharedFrame("{\"type\":\"ADDED\"}\n");  // the dispatcher's
  events->add(added);
  events->add(std::string("{\"type\":\"MODIFIED\"}\n"));  // this watch's own: its replay, its bookmarks
  events->add(std::string("{\"type\":\"BOOKMARK\"}\n"));
  error_code ec;
  CHECK(events->trySend(ec));
  bool eof = false;
  // Each send ends with a whole member, as kube-apiserver's per-flush writer ends its.
  const std::string sent = f.drain(eof);
  CHECK(proxy::testing::gunzipMembers(sent) ==
        std::vector<std::string>{"{\"type\":\"ADDED\"}\n", "{\"type\":\"MODIFIED\"}\n{\"type\":\"BOOKMARK\"}\n"});
  events->add(std::string("{\"type\":\"DELETED\"}\n"));
  CHECK(events->trySend(ec));
  CHECK(proxy::testing::gunzip(f.drain(eof)) == "{\"type\":\"DELETED\"}\n");
  // The shared event's member is the frame's, built on first use: every watcher sends it.
  const std::string& member = proxy::gzipMemberOf(*added);
  CHECK(&member == &proxy::gzipMemberOf(*added));
  CHECK(sent.starts_with(member));
}

TEST_CASE("a reset stream tells the client watch, and fails a waiting flush; cancel fails it at once") {
  Fixture f;
  REQUIRE(f.start("GET", "/api/v1/pods?watch=1", true));
  std::unique_ptr<EventWriter> events;
  f.spawn(startEvents(*f.stream, false, events));
  int gone = 0;
  auto client = f.stream->watchClient([&] { ++gone; });
  events->add(watch::makeFrame(std::string(Http2Stream::kSendBufferBytes, 'e')));
  events->add(watch::makeFrame(std::string(10, 'e')));
  auto cancelled = f.spawn(flush(*events));
  CHECK_FALSE(cancelled->done);
  events->cancel();
  f.poll();
  CHECK(cancelled->failedWith(boost::asio::error::operation_aborted));

  auto flushed = f.spawn(flush(*events));
  CHECK_FALSE(flushed->done);
  f.stream->closed();
  f.poll();
  CHECK(flushed->failedWith(boost::asio::error::connection_reset));
  CHECK(client->gone);
  CHECK(gone == 1);
}

TEST_CASE("an answer left short resets the stream; a complete one does not") {
  Fixture f;
  REQUIRE(f.start("GET", "/logs", true));
  ResponseHead head;
  head.content_length = 10;
  f.spawn(f.stream->writeHead(std::move(head)));
  f.stream->finish();
  CHECK(f.owner.resets == std::vector<uint32_t>{NGHTTP2_INTERNAL_ERROR});

  Fixture g;
  REQUIRE(g.start("GET", "/logs", true));
  g.spawn(writeWhole(*g.stream, 200, "done"));
  g.stream->finish();
  CHECK(g.owner.resets.empty());

  Fixture h;
  REQUIRE(h.start("GET", "/x", true));
  h.stream->finish();  // nothing answered
  CHECK(h.owner.resets == std::vector<uint32_t>{NGHTTP2_INTERNAL_ERROR});
}

TEST_CASE("a refused body is not read: what arrives opens the window at once") {
  Fixture f;
  REQUIRE(f.start("POST", "/api/v1/namespaces/default/configmaps", false));
  const std::string part(100, 'b');
  f.stream->addRequestData(reinterpret_cast<const uint8_t*>(part.data()), part.size());
  f.spawn(f.stream->refuseRequestBody());
  CHECK(f.owner.consumed_bytes == 100);
  f.stream->addRequestData(reinterpret_cast<const uint8_t*>(part.data()), part.size());
  CHECK(f.owner.consumed_bytes == 200);
  CHECK(f.stream->unconsumedPayload() == 0);
}
