#pragma once
// Complete responses the proxy writes itself, head and body, ready to go on the wire:
// Status answers, Go's plain-text refusals, and local endpoints' text. Plain code (no
// Asio); the session and the relays only write them.

#include <string>

#include "proxy/api_status.h"

namespace proxy {

// A complete response carrying a Status body (or plain text), ready to write.
std::string formatAnswer(const HttpAnswer& answer, bool keep_alive);

// How Go's net/http answers a request it cannot parse: plain text, then close.
const std::string& badRequestAnswer();
// The same for a request head larger than the header limit (431).
const std::string& headerTooLargeAnswer();

// kube-apiserver's max-in-flight (and priority-and-fairness) rejection: Go's
// http.Error, so plain text rather than a Status, with Retry-After: 1
// (filters/maxinflight.go, tooManyRequests).
std::string tooManyRequestsAnswer(bool keep_alive);

// The same refusal where the proxy answers with a Status (gateway admission):
// apierrors.NewTooManyRequests, as the apiserver's authentication paths word it.
Status tooManyRequestsStatus();

// kubectl proxy's refusal of a filtered request: Go's http.Error(w, "Forbidden", 403),
// plain text rather than a Status, so a client sees the same answer from either proxy.
std::string filterRefusalAnswer(bool keep_alive, bool head_only);

// A local endpoint's answer (/healthz, /readyz, /metrics...): `body` as `content_type`,
// never cached; only the head for a HEAD request.
std::string plainAnswer(unsigned code, const std::string& content_type, const std::string& body, bool keep_alive,
                        bool head_only);

}  // namespace proxy
