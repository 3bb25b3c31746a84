#pragma once
// The proxy's Prometheus metrics, rendered in the text exposition format for
// GET /metrics. Only this file pair knows prometheus-cpp. Thread-safe.
//
//   kube_cache_proxy_requests_total{verb,resource,code,served_by}      counter
//   kube_cache_proxy_request_duration_seconds{verb,served_by}          histogram; excludes
//       watch and connection upgrades, which are long-running by design
//   kube_cache_proxy_upstream_errors_total{kind}                       counter; kind is one of
//       connect, timeout, tls, io
//   kube_cache_proxy_open_connections                                  gauge (downstream)
//   kube_cache_proxy_open_streams                                      gauge (watches, chunked
//       responses without a length, upgraded connections)
//   plus whatever the collector set with setCollector() reports at each scrape (the
//   per-resource cache metrics, which cmd gathers from the informer manager).

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proxy {

// Metrics computed by someone else at scrape time, one family at a time.
struct CollectedFamily {
  struct Sample {
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;
  };
  std::string name;  // the full name, kube_cache_proxy_...
  std::string help;
  bool counter = false;  // else a gauge
  std::vector<Sample> samples;
};
using MetricsCollector = std::function<std::vector<CollectedFamily>()>;

class ProxyMetrics {
 public:
  ProxyMetrics();
  ~ProxyMetrics();
  ProxyMetrics(const ProxyMetrics&) = delete;
  ProxyMetrics& operator=(const ProxyMetrics&) = delete;

  void observeRequest(std::string_view verb, std::string_view resource, unsigned code, std::string_view served_by,
                      double seconds, bool long_running);
  void upstreamError(std::string_view kind);
  void connectionOpened();
  void connectionClosed();
  void streamOpened();
  void streamClosed();

  // Called on every renderText(), from the thread that renders. Set it before the
  // server starts.
  void setCollector(MetricsCollector collector);

  std::string renderText() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace proxy
