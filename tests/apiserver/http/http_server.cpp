#include "tests/apiserver/http/http_server.h"

#include <sys/socket.h>

#include <list>
#include <mutex>
#include <map>
#include <stdexcept>
#include <thread>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "tests/apiserver/http/go_gzip.h"

namespace testapi {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

namespace {

// N1: the apiserver gzips responses of more than 128 KiB when the client accepts it
// (deferredResponseWriter: len(p) > defaultGzipThresholdBytes).
constexpr size_t kGzipThreshold = 128 * 1024;
constexpr size_t kBodyLimit = 512u * 1024 * 1024;

bool acceptsGzip(const http::request<http::string_body>& req) {
  auto it = req.find(http::field::accept_encoding);  // the first value, as Header.Get
  return it != req.end() && testapi::acceptsGzip(std::string_view(it->value()));
}

HttpRequest convert(const http::request<http::string_body>& r) {
  HttpRequest out;
  out.method = std::string(r.method_string());
  out.target = std::string(r.target());
  auto q = out.target.find('?');
  out.path = percentDecode(std::string_view(out.target).substr(0, q), false);
  if (q != std::string::npos) out.query = parseQuery(std::string_view(out.target).substr(q + 1));
  for (const auto& f : r) {
    std::string name(f.name_string());
    for (auto& c : name) c = static_cast<char>(::tolower(static_cast<unsigned char>(c)));
    out.first_headers.try_emplace(name, std::string(f.value()));
    auto& slot = out.headers[name];
    if (!slot.empty()) slot += ",";
    slot += std::string(f.value());
  }
  out.body = r.body();
  return out;
}

template <class Stream>
class WsChannel final : public WebSocketChannel {
 public:
  explicit WsChannel(websocket::stream<Stream&>& ws) : ws_(ws) {}
  bool write(std::string_view m) override {
    beast::error_code ec;
    ws_.binary(true);
    ws_.write(net::buffer(m.data(), m.size()), ec);
    return !ec;
  }
  bool read(std::string& m) override {
    beast::flat_buffer b;
    beast::error_code ec;
    ws_.read(b, ec);
    if (ec) return false;
    m = beast::buffers_to_string(b.data());
    return true;
  }
  void close() override {
    beast::error_code ec;
    ws_.close(websocket::close_code::normal, ec);
  }

 private:
  websocket::stream<Stream&>& ws_;
};

template <class Stream>
class Connection final : public ResponseStream {
 public:
  Connection(Stream& stream, tcp::socket& sock, beast::flat_buffer& buf, http::request<http::string_body>& req)
      : stream_(stream), sock_(sock), buf_(buf), req_(req) {}

  bool send(HttpResponse&& r) override {
    http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
    if (!r.content_type.empty()) res.set(http::field::content_type, r.content_type);  // none on a 304
    for (auto& [k, v] : r.headers) res.set(k, v);
    if (r.allow_gzip && r.body.size() > kGzipThreshold && acceptsGzip(req_)) {
      res.body() = gzipMember(r.body);
      res.set(http::field::content_encoding, "gzip");
      res.set(http::field::vary, "Accept-Encoding");
    } else {
      res.body() = std::move(r.body);
    }
    res.keep_alive(req_.keep_alive());
    res.prepare_payload();
    beast::error_code ec;
    http::write(stream_, res, ec);
    if (ec) keep_alive_ = false;
    return !ec;
  }

  bool startChunked(int status, const std::string& content_type, const Headers& headers) override {
    http::response<http::empty_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, content_type);
    for (auto& [k, v] : headers) res.set(k, v);
    res.keep_alive(req_.keep_alive());
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    beast::error_code ec;
    http::write_header(stream_, sr, ec);
    if (ec) keep_alive_ = false;
    return !ec;
  }

  bool writeChunk(std::string_view data) override {
    if (data.empty()) return true;
    beast::error_code ec;
    net::write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())), ec);
    if (ec) keep_alive_ = false;
    return !ec;
  }

  bool finishChunked() override {
    beast::error_code ec;
    net::write(stream_, http::make_chunk_last(), ec);
    if (ec) keep_alive_ = false;
    return !ec;
  }

  bool peerClosed() override {
    char c;
    ssize_t n = ::recv(sock_.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    return false;
  }

  void abort() override {
    keep_alive_ = false;
    beast::error_code ec;
    sock_.shutdown(tcp::socket::shutdown_both, ec);
  }

  bool acceptWebSocket(const std::string& subprotocol,
                       const std::function<void(WebSocketChannel&)>& session) override {
    keep_alive_ = false;
    websocket::stream<Stream&> ws(stream_);
    ws.set_option(websocket::stream_base::decorator([subprotocol](websocket::response_type& res) {
      if (!subprotocol.empty()) res.set(http::field::sec_websocket_protocol, subprotocol);
    }));
    beast::error_code ec;
    ws.accept(req_, ec);
    if (ec) return false;
    WsChannel<Stream> ch(ws);
    session(ch);
    return true;
  }

  bool writeRaw(std::string_view bytes) override {
    keep_alive_ = false;
    beast::error_code ec;
    net::write(stream_, net::const_buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }

  bool readAvailable(std::string& into) override {
    // Bytes the request parser read past the request: a client that did not wait for the 101.
    into += beast::buffers_to_string(buf_.data());
    buf_.consume(buf_.size());
    // Non-blocking for this read only, so that writes stay whole. Through TLS too: asio's
    // engine keeps a partial record and returns would_block until the rest arrives.
    beast::error_code ec;
    sock_.non_blocking(true, ec);
    bool open = true;
    char chunk[4096];
    while (true) {
      const size_t n = stream_.read_some(net::buffer(chunk), ec);
      into.append(chunk, n);
      if (ec == net::error::would_block) break;
      if (ec) {
        open = false;
        break;
      }
    }
    sock_.non_blocking(false, ec);
    return open;
  }

  bool keepAlive() const { return keep_alive_ && req_.keep_alive(); }

 private:
  Stream& stream_;
  tcp::socket& sock_;
  beast::flat_buffer& buf_;
  http::request<http::string_body>& req_;
  bool keep_alive_ = true;
};

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions opts;
  HttpHandler handler;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::unique_ptr<net::ssl::context> ssl;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> refuse_until_ns{0};

  std::mutex mu;
  std::map<tcp::socket*, uint64_t> sockets;  // open connections and their order, for stop()
  uint64_t accepted = 0;
  std::condition_variable all_done;
  size_t active = 0;

  template <class Stream>
  void serve(Stream& stream, tcp::socket& sock) {
    beast::flat_buffer buf;
    while (!stopping) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(kBodyLimit);
      beast::error_code ec;
      http::read(stream, buf, parser, ec);
      if (ec) return;
      if (refusingNow()) return;
      auto& req = parser.get();
      HttpRequest hreq = convert(req);
      Connection<Stream> conn(stream, sock, buf, req);
      try {
        handler(hreq, conn);
      } catch (const std::exception& e) {
        HttpResponse r;
        r.status = 500;
        // json.Encoder's newline, as every Status body.
        r.body = ApiError{500, "InternalError", std::string("Internal error occurred: ") + e.what()}.toJson() + "\n";
        conn.send(std::move(r));
        return;
      }
      if (!conn.keepAlive()) return;
    }
  }

  bool refusingNow() const {
    auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return now < refuse_until_ns.load();
  }

  void connectionMain(tcp::socket sock) {
    {
      std::lock_guard lk(mu);
      sockets.emplace(&sock, ++accepted);
    }
    beast::error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
    if (!refusingNow()) {
      if (ssl) {
        net::ssl::stream<tcp::socket&> tls(sock, *ssl);
        tls.handshake(net::ssl::stream_base::server, ec);
        if (!ec) {
          serve(tls, sock);
          tls.shutdown(ec);
        }
      } else {
        serve(sock, sock);
      }
    }
    sock.shutdown(tcp::socket::shutdown_both, ec);
    sock.close(ec);
    std::lock_guard lk(mu);
    sockets.erase(&sock);
    --active;
    all_done.notify_all();
  }
};

HttpServer::HttpServer(HttpServerOptions opts, HttpHandler handler) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  impl_->handler = std::move(handler);
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::start() {
  auto& im = *impl_;
  if (!im.opts.tls_cert_file.empty()) {
    im.ssl = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    im.ssl->use_certificate_chain_file(im.opts.tls_cert_file);
    im.ssl->use_private_key_file(im.opts.tls_key_file, net::ssl::context::pem);
    if (!im.opts.client_ca_file.empty()) {
      im.ssl->load_verify_file(im.opts.client_ca_file);
      im.ssl->set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert);
    }
  }
  tcp::endpoint ep(net::ip::make_address(im.opts.address), im.opts.port);
  im.acceptor.open(ep.protocol());
  im.acceptor.set_option(net::socket_base::reuse_address(true));
  im.acceptor.bind(ep);
  // A deep backlog so 1,000 watch clients connecting at once are not dropped into SYN retries.
  im.acceptor.listen(4096);
  return im.acceptor.local_endpoint().port();
}

void HttpServer::run() {
  auto& im = *impl_;
  while (!im.stopping) {
    tcp::socket sock(im.ioc);
    beast::error_code ec;
    im.acceptor.accept(sock, ec);
    if (ec) {
      if (im.stopping) break;
      continue;
    }
    if (im.refusingNow()) {
      sock.close(ec);
      continue;
    }
    std::lock_guard lk(im.mu);
    ++im.active;
    // Detached on purpose: a connection thread's lifetime is tracked by `active`, and
    // stop() shuts every socket down and waits for it to reach zero.
    std::thread([&im, s = std::move(sock)]() mutable { im.connectionMain(std::move(s)); }).detach();
  }
}

void HttpServer::stop() {
  auto& im = *impl_;
  if (im.stopping.exchange(true)) return;
  beast::error_code ec;
  im.acceptor.cancel(ec);
  ::shutdown(im.acceptor.native_handle(), SHUT_RDWR);
  im.acceptor.close(ec);
  std::unique_lock lk(im.mu);
  for (const auto& [s, order] : im.sockets) ::shutdown(s->native_handle(), SHUT_RDWR);
  im.all_done.wait_for(lk, std::chrono::seconds(5), [&] { return im.active == 0; });
}

void HttpServer::refuseUntil(std::chrono::steady_clock::time_point until) {
  refuseNewUntil(until);
  closeConnections();
}

void HttpServer::refuseNewUntil(std::chrono::steady_clock::time_point until) {
  impl_->refuse_until_ns = until.time_since_epoch().count();
}

void HttpServer::closeConnections(uint64_t last) {
  std::lock_guard lk(impl_->mu);
  for (const auto& [s, order] : impl_->sockets) {
    if (order <= last) ::shutdown(s->native_handle(), SHUT_RDWR);
  }
}

uint64_t HttpServer::lastConnection() const {
  std::lock_guard lk(impl_->mu);
  return impl_->accepted;
}

bool HttpServer::refusing() const { return impl_->refusingNow(); }

}  // namespace testapi
