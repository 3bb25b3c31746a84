#include "proxy/upstream/upstream_url.h"

#include <charconv>

namespace proxy {

std::string parseHostPort(std::string_view text, std::string& host, uint16_t& port) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return "missing port in address \"" + std::string(text) + "\"";
  std::string_view h = text.substr(0, colon);
  std::string_view p = text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (ec != std::errc() || ptr != p.data() + p.size() || value > 65535) {
    return "invalid port in address \"" + std::string(text) + "\"";
  }
  host = std::string(h);
  port = static_cast<uint16_t>(value);
  return "";
}

std::string parseUpstreamUrl(std::string_view url, UpstreamOptions& out) {
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return "upstream URL needs a scheme: " + std::string(url);
  std::string scheme(url.substr(0, sep));
  if (scheme != "http" && scheme != "https") return "unsupported upstream scheme " + scheme;
  std::string_view rest = url.substr(sep + 3);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::string host;
  uint16_t port = scheme == "https" ? 443 : 80;
  const bool has_port = authority.rfind(':') != std::string_view::npos &&
                        (authority.front() != '[' || authority.rfind(']') < authority.rfind(':'));
  if (has_port) {
    if (auto err = parseHostPort(authority, host, port); !err.empty()) return err;
  } else {
    host = std::string(authority);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return "upstream URL has no host: " + std::string(url);
  out.scheme = std::move(scheme);
  out.host = std::move(host);
  out.port = port;
  out.path_prefix = std::move(prefix);
  return "";
}

}  // namespace proxy
