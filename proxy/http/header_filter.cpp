#include "proxy/http/header_filter.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

namespace proxy {
namespace {

constexpr std::array<std::string_view, 10> kHopByHop = {
    "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
    "Te",         "Trailer",          "Transfer-Encoding", "Upgrade",      "Content-Length"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool namedInConnection(std::string_view name, const std::vector<std::string>& tokens) {
  return std::any_of(tokens.begin(), tokens.end(), [&](const std::string& t) { return headerNameEquals(t, name); });
}

void appendHeaders(std::string& out, const HeaderList& headers) {
  for (const auto& [name, value] : headers) {
    out.append(name).append(": ").append(value).append("\r\n");
  }
}

void appendFraming(std::string& out, BodyFraming framing, uint64_t content_length) {
  if (framing == BodyFraming::ContentLength) out.append(fmt::format("Content-Length: {}\r\n", content_length));
  if (framing == BodyFraming::Chunked) out.append("Transfer-Encoding: chunked\r\n");
}

// Over a HeaderList (a response's fields) or a HeaderFields (a request's).
template <class Fields>
std::vector<std::string> allConnectionTokens(const Fields& headers) {
  std::vector<std::string> tokens;
  for (const auto& [name, value] : headers) {
    if (!headerNameEquals(name, "Connection")) continue;
    auto t = connectionTokens(value);
    tokens.insert(tokens.end(), t.begin(), t.end());
  }
  return tokens;
}

template <class Fields>
std::string_view findIn(const Fields& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (headerNameEquals(n, name)) return v;
  }
  return {};
}

}  // namespace

bool headerNameEquals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

// Content-Length is in kHopByHop because each hop re-derives framing, not
// because RFC 9110 calls it hop-by-hop.
std::string asciiLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool isHopByHopHeader(std::string_view name) {
  return std::any_of(kHopByHop.begin(), kHopByHop.end(), [&](std::string_view h) { return headerNameEquals(h, name); });
}

std::vector<std::string> connectionTokens(std::string_view value) {
  std::vector<std::string> tokens;
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view token = trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    if (token.empty()) continue;
    tokens.push_back(asciiLower(token));
  }
  return tokens;
}

std::string_view findHeader(const HeaderList& headers, std::string_view name) { return findIn(headers, name); }
std::string_view findHeader(const HeaderFields& headers, std::string_view name) { return findIn(headers, name); }

bool requestsImpersonation(const HeaderFields& headers) {
  constexpr std::string_view kPrefix = "impersonate-";
  return std::any_of(headers.begin(), headers.end(), [&](const HeaderField& h) {
    return h.first.size() >= kPrefix.size() && headerNameEquals(h.first.substr(0, kPrefix.size()), kPrefix);
  });
}

bool isUpgradeRequest(const HeaderFields& headers) {
  auto tokens = allConnectionTokens(headers);
  bool connection_upgrade = std::find(tokens.begin(), tokens.end(), "upgrade") != tokens.end();
  return connection_upgrade && !findHeader(headers, "Upgrade").empty();
}

HeaderList filterRequestHeaders(const HeaderFields& in, const ForwardedRequestContext& ctx) {
  const auto tokens = allConnectionTokens(in);
  const bool upgrade = isUpgradeRequest(in);
  HeaderList out;
  out.emplace_back("Host", ctx.upstream_host_header);
  std::string forwarded_for;
  for (const auto& [name, value] : in) {
    if (isHopByHopHeader(name) || namedInConnection(name, tokens)) continue;
    // The proxy answers Expect: 100-continue itself before streaming the body.
    if (headerNameEquals(name, "Host") || headerNameEquals(name, "Authorization") ||
        headerNameEquals(name, "Expect")) {
      continue;
    }
    if (headerNameEquals(name, "X-Forwarded-For")) {
      forwarded_for.append(forwarded_for.empty() ? "" : ", ").append(value);
      continue;
    }
    out.emplace_back(std::string(name), std::string(value));
  }
  if (!ctx.client_ip.empty()) {
    forwarded_for = forwarded_for.empty() ? ctx.client_ip : forwarded_for + ", " + ctx.client_ip;
  }
  if (!forwarded_for.empty()) out.emplace_back("X-Forwarded-For", std::move(forwarded_for));
  if (!ctx.bearer_token.empty()) out.emplace_back("Authorization", "Bearer " + ctx.bearer_token);
  if (upgrade) {
    out.emplace_back("Connection", "Upgrade");
    out.emplace_back("Upgrade", std::string(findHeader(in, "Upgrade")));
  }
  return out;
}

HeaderList filterResponseHeaders(const HeaderList& in, bool upgraded) {
  const auto tokens = allConnectionTokens(in);
  HeaderList out;
  for (const auto& [name, value] : in) {
    if (isHopByHopHeader(name) || namedInConnection(name, tokens)) continue;
    if (headerNameEquals(name, "X-Kube-Cache-Proxy")) continue;  // the upstream proxy's hop
    out.emplace_back(name, value);
  }
  if (upgraded) {
    out.emplace_back("Connection", "Upgrade");
    out.emplace_back("Upgrade", std::string(findHeader(in, "Upgrade")));
  }
  return out;
}

std::string formatRequestHead(std::string_view method, std::string_view target, const HeaderList& headers,
                              BodyFraming framing, uint64_t content_length) {
  std::string out = fmt::format("{} {} HTTP/1.1\r\n", method, target);
  appendHeaders(out, headers);
  appendFraming(out, framing, content_length);
  out.append("\r\n");
  return out;
}

std::string formatResponseHead(unsigned status, std::string_view reason, const HeaderList& headers,
                               BodyFraming framing, uint64_t content_length, bool keep_alive) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", status, reason.empty() ? reasonPhrase(status) : reason);
  appendHeaders(out, headers);
  appendFraming(out, framing, content_length);
  if (!keep_alive && status != 101) out.append("Connection: close\r\n");
  out.append("\r\n");
  return out;
}

std::string_view reasonPhrase(unsigned status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

}  // namespace proxy
