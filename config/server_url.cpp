#include "config/server_url.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace config {

namespace {

std::string inQuotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string toLower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool isIpv6Literal(const std::string& text) {
  in6_addr address{};
  return inet_pton(AF_INET6, text.c_str(), &address) == 1;
}

// Letters, digits, '-', '.', '_' cover DNS names (including the '_' that
// some internal resolvers allow) and IPv4 literals.
bool isHostName(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_';
  });
}

}  // namespace

uint16_t parsePort(std::string_view text, bool allow_zero) {
  if (text.empty() || text.size() > 5 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw std::invalid_argument("invalid port " + inQuotes(text));
  }
  const unsigned long value = std::stoul(std::string(text));
  if (value > 65535 || (value == 0 && !allow_zero)) {
    throw std::invalid_argument("port " + inQuotes(text) + " is out of range");
  }
  return static_cast<uint16_t>(value);
}

std::string joinHostPort(const std::string& host, uint16_t port) {
  const bool needs_brackets = host.find(':') != std::string::npos;
  return (needs_brackets ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

ServerUrl parseServerUrl(std::string_view url) {
  ServerUrl out;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    throw std::invalid_argument("URL needs a scheme (http:// or https://)");
  }
  out.scheme = toLower(url.substr(0, scheme_end));
  if (out.scheme != "http" && out.scheme != "https") {
    throw std::invalid_argument("unsupported scheme " + inQuotes(out.scheme) + " (want http or https)");
  }
  std::string_view rest = url.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    throw std::invalid_argument("URL must not have a query or fragment");
  }
  const size_t path_start = rest.find('/');
  std::string_view authority = rest.substr(0, path_start);
  std::string_view path = path_start == std::string_view::npos ? std::string_view{} : rest.substr(path_start);
  if (authority.find('@') != std::string_view::npos) {
    throw std::invalid_argument("credentials in the URL are not supported");
  }

  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("unterminated IPv6 literal");
    out.host = std::string(authority.substr(1, close - 1));
    if (!isIpv6Literal(out.host)) throw std::invalid_argument("invalid IPv6 literal " + inQuotes(out.host));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw std::invalid_argument("unexpected text after IPv6 literal");
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos) {
      throw std::invalid_argument("IPv6 literal must be in brackets, e.g. https://[::1]:6443");
    }
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (out.host.empty()) throw std::invalid_argument("URL has no host");
    if (!isHostName(out.host)) throw std::invalid_argument("invalid host " + inQuotes(out.host));
  }
  // Go's net/url accepts "host:" and means the default port.
  out.port = port_text.empty() ? (out.scheme == "https" ? 443 : 80) : parsePort(port_text, false);

  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.path_prefix = std::string(path);
  return out;
}

}  // namespace config
