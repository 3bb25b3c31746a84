#pragma once
// HttpListerWatcher: the watch::ListerWatcher of one resource collection on the upstream
// apiserver, over cpp-httplib (HTTP/1.1, TLS with OpenSSL).
//
// - Clients, TLS trust and the bearer token come from an UpstreamConnector, which many
//   lister-watchers (one per cached resource) may share.
// - list() and watch() are meant for one reflector thread; each uses its own client, so
//   a long watch never waits for a list. A stop request interrupts a blocked watch
//   by shutting down its socket (httplib::ClientImpl::stop()).
//
// Construction throws std::invalid_argument for unusable TLS material.

#include <chrono>
#include <memory>
#include <string>

#include "proxy/upstream/upstream_connector.h"
#include "proxy/upstream/upstream_options.h"
#include "watch/reflector/lister_watcher.h"

namespace httplib {
class ClientImpl;
}  // namespace httplib

namespace proxy::upstream {

struct HttpListerWatcherOptions {
  // How long a LIST page may take to arrive: pages of 500 large objects from a busy
  // apiserver take seconds; the apiserver's own request timeout is 60 s.
  std::chrono::seconds list_read_timeout{90};
  // A watch is idle for at most its timeoutSeconds (the server then closes it), so the
  // read timeout is that plus this margin; httplib's default 5 s would kill idle watches.
  std::chrono::seconds watch_read_timeout_margin{60};
  // Read timeout of a watch without timeoutSeconds (the apiserver then picks up to 1 h).
  std::chrono::seconds watch_read_timeout_default{3660};
  std::string user_agent = "kube-cache-proxy";
};

class HttpListerWatcher final : public watch::ListerWatcher {
 public:
  // `collection_path` is the resource's collection URL path, e.g. "/api/v1/pods" or
  // "/apis/apps/v1/deployments"; the upstream's path_prefix is prepended.
  HttpListerWatcher(UpstreamOptions upstream, std::string collection_path,
                    HttpListerWatcherOptions options = {});
  HttpListerWatcher(std::shared_ptr<UpstreamConnector> connector, std::string collection_path,
                    HttpListerWatcherOptions options = {});
  ~HttpListerWatcher() override;
  HttpListerWatcher(const HttpListerWatcher&) = delete;
  HttpListerWatcher& operator=(const HttpListerWatcher&) = delete;

  // watch::ListerWatcher
  watch::ListResponse list(const watch::ListOptions& opts, std::stop_token stop) override;
  watch::WatchResult watch(const watch::ListOptions& opts, const watch::LineCallback& on_line,
                           std::stop_token stop) override;

  // The request target (path and query) for `opts`; exposed for tests.
  std::string requestTargetForTest(const watch::ListOptions& opts, bool watch) const {
    return requestTarget(opts, watch);
  }

 private:
  std::string requestTarget(const watch::ListOptions& opts, bool watch) const;
  // A watch that got no answer (`status` 0) or broke: the transport error, counted by the
  // breaker when nothing answered.
  void endWithoutAnswer(watch::WatchResult& out, int status, const std::string& error) const;

  std::shared_ptr<UpstreamConnector> connector_;
  std::string collection_path_;
  HttpListerWatcherOptions options_;
  std::unique_ptr<httplib::ClientImpl> list_client_;
};

}  // namespace proxy::upstream
