#pragma once
// Request: one client request as every mechanism sees it, parsed once at the door by the
// protocol that carried it (an HTTP/1.1 head, an HTTP/2 HEADERS frame, the HTTP/1.1 head
// of a WebSocket handshake): its RequestInfo, its query values and its Accept header. Code
// further in asks the request; it never splits the target or reads Accept again. Go's
// *http.Request is the model; the answer goes to a ServerStream (proxy/stream.h).
//
// Plain code (no Asio). A request is touched by its stream's io thread only.

#include <string>
#include <string_view>

#include "cache/query/query_values.h"
#include "proxy/http/header_filter.h"
#include "proxy/media.h"
#include "proxy/request_info.h"

namespace proxy {

struct Request {
  std::string method;
  std::string target;  // the path and "?query" as received
  // End-to-end fields as received (HTTP/2: without pseudo-headers, :authority as Host when
  // no host field came, cookie fields joined), views into what the protocol keeps.
  HeaderFields headers;
  RequestInfo info;
  cache::QueryValues query;
  AcceptHeader accept;
  std::string client_ip;
  // The request asks to become a WebSocket (RFC 6455 handshake over HTTP/1.1).
  bool websocket = false;

  // Gateway mode (set by authentication): the authenticated user's name, the credential
  // a pass-through request carries upstream instead of the proxy's own ("" keeps the
  // proxy's), and the fields added for it (impersonation).
  std::string caller;
  std::string upstream_token;
  HeaderList upstream_identity_headers;
  // The caller authenticated with the WebSocket bearer subprotocol: a pass-through sends
  // the subprotocol on as it came (the apiserver authenticates it the same way) and no
  // Authorization.
  bool token_in_subprotocol = false;

  // Parses everything a request is asked about, once.
  static Request make(std::string method, std::string target, HeaderFields headers, std::string client_ip);

  std::string_view rawQuery() const;
  // The first value of a field ("" when absent), as Go's Header.Get.
  std::string_view header(std::string_view name) const { return findHeader(headers, name); }
  std::string_view userAgent() const { return header("User-Agent"); }
  bool isHead() const { return method == "HEAD"; }
};

}  // namespace proxy
