#pragma once
// Complete answers the proxy writes itself, to any ServerStream: a Status worded and
// encoded as the apiserver writes it for the request (contract E1-E3), and the plain-text
// answers Go's http.Error gives (the max-in-flight 429, kubectl proxy's 403, the local
// endpoints). Every such answer goes through here.

#include <string_view>

#include "proxy/api_status.h"
#include "proxy/asio_beast.h"
#include "proxy/http/header_filter.h"
#include "proxy/request.h"
#include "proxy/stream.h"

namespace proxy {

// The head of `answer` (a Status as an HTTP answer) with `extra` fields after the
// apiserver's own.
io::ResponseHead statusHead(const HttpAnswer& answer, HeaderList extra = {});

// kube-apiserver's max-in-flight (and priority-and-fairness) rejection, where the proxy
// answers with a Status (gateway admission): apierrors.NewTooManyRequests.
Status tooManyRequestsStatus();

}  // namespace proxy

namespace proxy::io {

// `status` for `req`: its code and Retry-After, the body encoded as req's Accept asks
// (statusEncodingFor). Returns the code.
asio::awaitable<unsigned> writeStatus(ServerStream& out, const Request& req, const Status& status,
                                      HeaderList extra = {});
// `answer` as it is (a Status already encoded).
asio::awaitable<unsigned> writeAnswer(ServerStream& out, const Request& req, const HttpAnswer& answer,
                                      HeaderList extra = {});
// Go's http.Error and the apiserver's plain endpoints: `body` as `content_type`, never
// cached; only the head for a HEAD request.
asio::awaitable<unsigned> writePlainText(ServerStream& out, const Request& req, unsigned code,
                                         std::string_view content_type, std::string_view body);
// kube-apiserver's max-in-flight rejection (filters/maxinflight.go, tooManyRequests):
// Go's http.Error, plain text with Retry-After: 1.
asio::awaitable<unsigned> writeTooManyRequests(ServerStream& out, const Request& req);
// kubectl proxy's refusal of a filtered request: http.Error(w, "Forbidden", 403).
asio::awaitable<unsigned> writeFilterRefusal(ServerStream& out, const Request& req);

}  // namespace proxy::io
