#include "proxy/upstream/http_lister_watcher.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include <httplib.h>

#include "cache/protobuf/protobuf_list.h"

namespace proxy::upstream {
namespace {

// An error body is only kept for logs and reason matching; a misbehaving upstream must not
// make us buffer an unbounded one.
constexpr size_t kMaxErrorBody = 64 * 1024;

// Hands each whole frame of a protobuf watch (W2) in `pending` to `on_line` (its WatchEvent
// message) and drops it from `pending`. False when the callback cancels (`too_long` false)
// or a frame claims an impossible length (`too_long` set: the stream is broken, not ours
// to call canceled).
bool deliverFrames(std::string& pending, const watch::LineCallback& on_line, uint64_t& delivered, bool& too_long) {
  std::string_view rest = pending;
  while (const auto frame = cache::protobuf::takeFrame(rest, too_long)) {
    ++delivered;
    if (!on_line(*frame)) return false;
  }
  pending.erase(0, pending.size() - rest.size());
  return !too_long;
}

// The same for a JSON stream: each complete line (without its CR) to `on_line`; false when
// the callback cancels.
bool deliverLines(std::string& pending, const watch::LineCallback& on_line, uint64_t& delivered) {
  size_t start = 0;
  for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos; start = newline + 1) {
    std::string_view line(pending.data() + start, newline - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    ++delivered;
    if (!on_line(line)) return false;
  }
  pending.erase(0, start);
  return true;
}

void appendEncoded(std::string& out, std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
}

void appendParam(std::string& target, std::string_view name, std::string_view value) {
  target += target.find('?') == std::string::npos ? '?' : '&';
  target += name;
  target += '=';
  appendEncoded(target, value);
}

}  // namespace

HttpListerWatcher::HttpListerWatcher(UpstreamOptions upstream, std::string collection_path,
                                     HttpListerWatcherOptions options)
    : HttpListerWatcher(std::make_shared<UpstreamConnector>(std::move(upstream)), std::move(collection_path),
                        std::move(options)) {}

HttpListerWatcher::HttpListerWatcher(std::shared_ptr<UpstreamConnector> connector, std::string collection_path,
                                     HttpListerWatcherOptions options)
    : connector_(std::move(connector)),
      collection_path_(std::move(collection_path)),
      options_(std::move(options)),
      list_client_(connector_->makeClient()) {
  list_client_->set_keep_alive(true);  // pages of one list reuse the connection
}

HttpListerWatcher::~HttpListerWatcher() = default;

std::string HttpListerWatcher::requestTarget(const watch::ListOptions& opts, bool watch) const {
  // Parameters in the order client-go sends them (sorted by name), so upstream logs and
  // audit entries look familiar.
  std::string target = connector_->upstream().path_prefix + collection_path_;
  if (opts.allow_watch_bookmarks) appendParam(target, "allowWatchBookmarks", "true");
  if (!opts.continue_token.empty()) appendParam(target, "continue", opts.continue_token);
  if (!opts.field_selector.empty()) appendParam(target, "fieldSelector", opts.field_selector);
  if (!opts.label_selector.empty()) appendParam(target, "labelSelector", opts.label_selector);
  if (opts.limit > 0) appendParam(target, "limit", std::to_string(opts.limit));
  if (!opts.resource_version.empty()) appendParam(target, "resourceVersion", opts.resource_version);
  if (!opts.resource_version_match.empty()) {
    appendParam(target, "resourceVersionMatch", opts.resource_version_match);
  }
  if (opts.send_initial_events) appendParam(target, "sendInitialEvents", *opts.send_initial_events ? "true" : "false");
  if (opts.timeout_seconds > 0) appendParam(target, "timeoutSeconds", std::to_string(opts.timeout_seconds));
  if (watch) appendParam(target, "watch", "true");
  return target;
}

watch::ListResponse HttpListerWatcher::list(const watch::ListOptions& opts, std::stop_token stop) {
  if (stop.stop_requested()) return {0, "", "stopped"};
  httplib::Headers headers{{"Accept", opts.accept.empty() ? "application/json" : opts.accept},
                           {"User-Agent", options_.user_agent}};
  if (auto auth = connector_->authorization(); !auth.empty()) headers.emplace("Authorization", std::move(auth));
  list_client_->set_read_timeout(options_.list_read_timeout);
  std::stop_callback interrupt(stop, [this] { list_client_->stop(); });
  auto result = list_client_->Get(requestTarget(opts, false), headers);
  watch::UpstreamHealth* health = connector_->health();
  if (!result) {
    if (health && !stop.stop_requested()) {
      health->failed("list " + collection_path_ + ": no answer (" + httplib::to_string(result.error()) + ")");
    }
    return {0, "", httplib::to_string(result.error())};
  }
  if (health) health->answered();
  return {result->status, std::move(result->body), ""};
}

void HttpListerWatcher::endWithoutAnswer(watch::WatchResult& out, int status, const std::string& error) const {
  // No answer at all (refused, reset, timed out): the breaker counts it; a stream that
  // broke after its headers only ended.
  if (auto* health = connector_->health(); health && status == 0) {
    health->failed("watch " + collection_path_ + ": no answer (" + error + ")");
  }
  out.end = watch::WatchEnd::TransportError;
  out.status = status;
  out.transport_error = error;
}

watch::WatchResult HttpListerWatcher::watch(const watch::ListOptions& opts, const watch::LineCallback& on_line,
                                            std::stop_token stop) {
  watch::WatchResult out;
  if (stop.stop_requested()) {
    out.end = watch::WatchEnd::Stopped;
    return out;
  }
  httplib::Headers headers{{"Accept", opts.accept.empty() ? "application/json" : opts.accept},
                           {"User-Agent", options_.user_agent}};
  if (auto auth = connector_->authorization(); !auth.empty()) headers.emplace("Authorization", std::move(auth));

  // A fresh client per watch: its socket belongs to this stream alone, so stop() below
  // cannot touch anything else.
  std::unique_ptr<httplib::ClientImpl> client = connector_->makeClient();
  client->set_read_timeout(opts.timeout_seconds > 0
                               ? std::chrono::seconds(opts.timeout_seconds) + options_.watch_read_timeout_margin
                               : options_.watch_read_timeout_default);
  // Breaks a read blocked on an idle stream. A stop that lands while connecting is caught
  // by the response handler once headers arrive (the apiserver flushes them at once).
  std::stop_callback interrupt(stop, [&client] { client->stop(); });

  int status = 0;
  bool canceled = false;
  bool frames = false;  // a protobuf stream: length-prefixed frames instead of lines (W2)
  bool frame_too_long = false;
  std::string pending;  // bytes of the current, not yet complete line or frame
  std::string error_body;
  auto on_response = [&](const httplib::Response& response) {
    status = response.status;
    frames = response.get_header_value("Content-Type").starts_with(cache::protobuf::kMediaType);
    if (auto* health = connector_->health()) health->answered();
    return !stop.stop_requested();
  };
  auto on_data = [&](const char* data, size_t size) {
    if (stop.stop_requested()) return false;
    if (status != 200) {
      error_body.append(data, std::min(size, kMaxErrorBody - std::min(kMaxErrorBody, error_body.size())));
      return true;
    }
    pending.append(data, size);
    if (frames) {
      const bool go_on = deliverFrames(pending, on_line, out.lines, frame_too_long);
      canceled = !go_on && !frame_too_long;
      return go_on;
    }
    canceled = !deliverLines(pending, on_line, out.lines);
    return !canceled;
  };
  auto result = client->Get(requestTarget(opts, true), headers, on_response, on_data);
  if (stop.stop_requested()) {
    out.end = watch::WatchEnd::Stopped;
  } else if (canceled) {
    out.end = watch::WatchEnd::Canceled;
  } else if (frame_too_long) {
    out.end = watch::WatchEnd::TransportError;
    out.status = status;
    out.transport_error = "protobuf watch frame longer than " + std::to_string(cache::protobuf::kMaxFrameBytes) + " bytes";
  } else if (status != 0 && status != 200) {
    out.end = watch::WatchEnd::HttpError;
    out.status = status;
    out.body = std::move(error_body);
  } else if (!result) {
    endWithoutAnswer(out, status, httplib::to_string(result.error()));
  } else {
    out.end = watch::WatchEnd::Closed;
    out.status = status;
    // A final line without its newline is still a whole event on a clean close; a cut
    // protobuf frame is not (the re-watch from the last RV brings its event again).
    if (!frames && !pending.empty() && pending.find_first_not_of("\r") != std::string::npos) {
      ++out.lines;
      if (!on_line(pending)) out.end = watch::WatchEnd::Canceled;
    }
  }
  return out;
}

}  // namespace proxy::upstream
