#pragma once
// The HTTP surface handlers see: a decoded request and the connection to answer on.
// Keeps Boost.Beast out of every file except http_server.cpp.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/apiserver/semantics.h"

namespace testapi {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", ...
  std::string target;  // raw request target
  std::string path;    // percent-decoded path without the query
  Query query;         // decoded query parameters
  std::map<std::string, std::string> headers;  // lower-case names; repeated headers joined with ","
  std::map<std::string, std::string> first_headers;  // the first value of each header
  std::string body;

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  // Go's Header.Get: the first value of a header sent more than once.
  std::string firstHeader(const std::string& lower_name) const {
    auto it = first_headers.find(lower_name);
    return it == first_headers.end() ? header(lower_name) : it->second;
  }
  const std::string* param(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? nullptr : &it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  Headers headers;
  std::string body;
  bool allow_gzip = true;  // N1: gzip when the client accepts it and body > 128 KiB
};

// A WebSocket after the upgrade (pods/exec). Messages are binary frames.
class WebSocketChannel {
 public:
  virtual ~WebSocketChannel() = default;
  virtual bool write(std::string_view message) = 0;
  // Reads one message; false when the peer closed or failed.
  virtual bool read(std::string& message) = 0;
  virtual void close() = 0;
};

// One client connection as a handler sees it. Exactly one of send() or the
// startChunked()/writeChunk()/finishChunked() sequence or acceptWebSocket() per request.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  virtual bool send(HttpResponse&& response) = 0;
  // Writes the status line and headers of a chunked response and flushes them (W2).
  virtual bool startChunked(int status, const std::string& content_type, const Headers& headers) = 0;
  virtual bool writeChunk(std::string_view data) = 0;
  virtual bool finishChunked() = 0;
  // True once the peer has closed its side (cheap, non-blocking).
  virtual bool peerClosed() = 0;
  // Drops the connection without answering (control/refuse).
  virtual void abort() = 0;
  virtual bool acceptWebSocket(const std::string& subprotocol, const std::function<void(WebSocketChannel&)>& session) = 0;
  // Raw bytes both ways, for an answer the handler frames itself (the watch WebSocket:
  // Go's handshake and frames, websocket_protocol.h). The connection serves no further
  // request once writeRaw was called.
  virtual bool writeRaw(std::string_view bytes) = 0;
  // Appends what the peer has sent so far, without waiting; false once it closed or failed.
  virtual bool readAvailable(std::string& into) = 0;
};

using HttpHandler = std::function<void(const HttpRequest&, ResponseStream&)>;

std::string percentDecode(std::string_view s, bool plus_is_space);
Query parseQuery(std::string_view raw);

}  // namespace testapi
