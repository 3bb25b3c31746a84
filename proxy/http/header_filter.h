#pragma once
// Which headers cross the proxy, and how message heads are written on the wire.
//
// Hop-by-hop headers (RFC 9110 §7.6.1, the same list as Go's httputil.ReverseProxy)
// and every header named in Connection describe one connection, so they are
// dropped in both directions. Framing (Content-Length / Transfer-Encoding) is
// re-derived by the forwarder for each hop. Authorization is always replaced:
// the upstream sees the proxy's own identity, never a client's credential.
// An Upgrade request (exec, attach, port-forward) keeps Connection: Upgrade and
// Upgrade, which are what make it one.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/http/header_fields.h"

namespace proxy {

bool headerNameEquals(std::string_view a, std::string_view b);
bool isHopByHopHeader(std::string_view name);
// `s` in ASCII lower case (header names for HTTP/2, tokens).
std::string asciiLower(std::string_view s);

// The comma-separated tokens of a Connection header value, lower-cased.
std::vector<std::string> connectionTokens(std::string_view value);

// True when the request asks to switch protocols (Connection lists "upgrade"
// and an Upgrade header is present).
bool isUpgradeRequest(const HeaderFields& headers);

// True when the request asks the apiserver to act as someone else (Impersonate-User,
// -Group, -Uid, -Extra-*). The cache answers with the proxy's (or the gateway caller's)
// view, never the narrower one of the impersonated user: such requests pass through.
bool requestsImpersonation(const HeaderFields& headers);

// The first value of `name`, or "" when absent.
std::string_view findHeader(const HeaderList& headers, std::string_view name);
std::string_view findHeader(const HeaderFields& headers, std::string_view name);

struct ForwardedRequestContext {
  std::string upstream_host_header;  // Host sent upstream, e.g. "10.0.0.1:6443"
  std::string bearer_token;          // "" sends no Authorization
  std::string client_ip;             // appended to X-Forwarded-For
};

// Headers to send upstream for a client request, without framing headers.
HeaderList filterRequestHeaders(const HeaderFields& in, const ForwardedRequestContext& ctx);

// Headers to send to the client for an upstream response, without framing
// headers. `upgraded` keeps Connection/Upgrade of a 101. An upstream
// kube-cache-proxy's X-Kube-Cache-Proxy is dropped too: in a chain each proxy
// reports how it served the request itself, once.
HeaderList filterResponseHeaders(const HeaderList& in, bool upgraded);

// How a body is framed on one hop.
enum class BodyFraming { None, ContentLength, Chunked };

std::string formatRequestHead(std::string_view method, std::string_view target, const HeaderList& headers,
                              BodyFraming framing, uint64_t content_length);
std::string formatResponseHead(unsigned status, std::string_view reason, const HeaderList& headers,
                               BodyFraming framing, uint64_t content_length, bool keep_alive);

// The standard reason phrase for a status code ("" when unknown), as Go writes it.
std::string_view reasonPhrase(unsigned status);

}  // namespace proxy
