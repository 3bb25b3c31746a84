#pragma once
// Parsing of the server URL and listen address forms the command line accepts.

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/upstream/upstream_options.h"

namespace proxy {

// Fills scheme, host, port and path_prefix of `out` from "https://10.0.0.1:6443",
// "http://[::1]:8080/prefix" or "https://kubernetes.default.svc" (port defaults
// to 443/80). Returns an error message, or "" on success.
std::string parseUpstreamUrl(std::string_view url, UpstreamOptions& out);

// Splits "HOST:PORT" or "[V6]:PORT". Returns an error message, or "" on success.
std::string parseHostPort(std::string_view text, std::string& host, uint16_t& port);

}  // namespace proxy
