#pragma once
// ListerWatcher: the reflector's only view of the upstream apiserver for one resource
// (client-go tools/cache ListerWatcher). watch/ declares it; proxy/upstream/ implements
// it over HTTP and cmd injects the implementation, so watch/ never depends on proxy/.
//
// Contract for implementations:
// - Both calls block the calling thread; one reflector calls them from one thread, never
//   concurrently.
// - Bodies and lines are the upstream bytes unchanged: JSON lines, or, when the upstream
//   answers a watch in protobuf (asked for with ListOptions::accept), each length-prefixed
//   frame's WatchEvent message (W2).
// - watch() must return promptly (well under a second) once `stop` is requested, even
//   when the stream is idle; list() should abandon its request the same way, so that
//   shutdown never waits for a large LIST to finish.

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

namespace watch {

// The query parameters of a LIST or WATCH request (metav1.ListOptions). An empty string
// means "not set": an unset resourceVersion is a consistent read, which is not "0".
struct ListOptions {
  std::string resource_version;
  std::string resource_version_match;  // "", "NotOlderThan" or "Exact"
  int64_t limit = 0;                   // 0: no limit
  std::string continue_token;
  std::string label_selector;
  std::string field_selector;
  bool allow_watch_bookmarks = false;
  std::optional<bool> send_initial_events;
  int64_t timeout_seconds = 0;  // 0: not set
  // The Accept header of a LIST or watch; empty means application/json. The drift check
  // asks for PartialObjectMetadataList (N4) so that only metadata crosses the wire.
  std::string accept;
};

// Result of list(). `status` is the HTTP status, or 0 when no response arrived, in which
// case `transport_error` says why (connection refused, TLS failure, timeout...).
struct ListResponse {
  int status = 0;
  std::string body;
  std::string transport_error;
};

enum class WatchEnd {
  Closed,          // the upstream ended a 200 stream (timeout, shutdown): re-watch
  Canceled,        // the line callback returned false
  Stopped,         // the stop token was triggered
  HttpError,       // a status other than 200 before streaming; see status and body
  TransportError,  // connect, TLS or read failure; see transport_error
};

struct WatchResult {
  WatchEnd end = WatchEnd::Closed;
  int status = 0;  // HTTP status when one was received
  std::string body;  // the error body for HttpError
  std::string transport_error;
  uint64_t lines = 0;  // lines delivered to the callback
};

// Receives one event line (without its newline). The view is only valid during the call.
// Returning false cancels the stream (WatchEnd::Canceled).
using LineCallback = std::function<bool(std::string_view line)>;

class ListerWatcher {
 public:
  virtual ~ListerWatcher() = default;

  virtual ListResponse list(const ListOptions& opts, std::stop_token stop) = 0;
  // Opens a watch (the implementation adds watch=true) and streams each line to
  // `on_line` until the stream ends, the callback cancels or `stop` is requested.
  virtual WatchResult watch(const ListOptions& opts, const LineCallback& on_line,
                            std::stop_token stop) = 0;
};

}  // namespace watch
