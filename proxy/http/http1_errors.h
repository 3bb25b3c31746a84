#pragma once
// How Go's net/http answers an HTTP/1.1 request head it cannot parse, before any handler
// runs: plain text, then the connection closes. Plain code (no Asio).

#include <string>

namespace proxy {

// A malformed request head: 400.
const std::string& badRequestAnswer();
// A request head larger than the header limit: 431.
const std::string& headerTooLargeAnswer();

}  // namespace proxy
