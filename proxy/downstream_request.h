#pragma once
// DownstreamRequest: a client request whose head has been read.

#include <string>

#include "proxy/asio_beast.h"
#include "proxy/downstream_stream.h"
#include "proxy/header_filter.h"
#include "proxy/raw_parser.h"
#include "proxy/request_info.h"

namespace proxy::io {

// The body (if any) is still in `parser`/`buffer`/`stream`. `method`, `target` and
// `headers` are moved out of the parser.
struct DownstreamRequest {
  DownstreamStream& stream;
  beast::flat_buffer& buffer;
  DownstreamParser& parser;
  std::string method;
  std::string target;
  HeaderList headers;
  RequestInfo info;
  std::string client_ip;
  bool keep_alive = true;
  bool http10 = false;
  // Gateway mode: the authenticated user's name ("" before authentication or in a sidecar),
  // the credential a pass-through request carries upstream instead of the
  // proxy's own ("" keeps the proxy's), and headers added for it (impersonation).
  std::string caller;
  std::string upstream_token;
  HeaderList upstream_identity_headers;
};

}  // namespace proxy::io
