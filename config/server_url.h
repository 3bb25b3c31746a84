#pragma once
// The apiserver address as written in --upstream or a kubeconfig `server`:
// scheme://host[:port][/path-prefix].

#include <cstdint>
#include <string>
#include <string_view>

namespace config {

struct ServerUrl {
  std::string scheme;       // "http" or "https", lower case
  std::string host;         // IPv6 literals without their brackets
  uint16_t port = 0;        // defaulted from the scheme: 80 or 443
  std::string path_prefix;  // "" or "/prefix", never ending in '/'
};

// Throws std::invalid_argument with the reason, e.g.
// `unsupported scheme "ftp" (want http or https)`.
ServerUrl parseServerUrl(std::string_view url);

// "host:port" or "[v6]:port" as in a Host header or a listen address.
std::string joinHostPort(const std::string& host, uint16_t port);

// Parses a port number "1".."65535" ("0" too when `allow_zero`).
uint16_t parsePort(std::string_view text, bool allow_zero);

}  // namespace config
