#pragma once
// Failures the proxy answers itself as HTTP answers: the status code and Status body of
// cache/status.h, the Retry-After header, and the encoding the client's Accept asks
// for (contract E1/E2/E3).

#include <string>
#include <vector>

#include "cache/status.h"
#include "proxy/status_negotiation.h"

namespace proxy {

// The proxy speaks the cache's one failure vocabulary (cache/status.h), by its own names.
using cache::Reason;
using cache::Status;
using cache::StatusCause;

struct HttpAnswer {
  unsigned code = 500;
  std::string content_type = "application/json";
  std::string body;
  int retry_after_seconds = 0;  // sent as Retry-After when > 0
};

// The Status as an HTTP answer (cache::statusJson plus its newline). `encoding` comes from
// statusEncodingFor(the request's Accept): the apiserver writes an error as raw indented
// JSON when the client accepts no plain media type (status_negotiation.h).
HttpAnswer toHttpAnswer(const Status& status, StatusEncoding encoding = StatusEncoding::Negotiated);

// Re-encodes `answer`, whose body is a Status in the serializer's compact form (with
// its trailing newline), for `encoding`. For Status bodies built elsewhere; such a body
// stays JSON where protobuf was negotiated (only toHttpAnswer writes protobuf).
void encodeStatus(HttpAnswer& answer, StatusEncoding encoding);


}  // namespace proxy
