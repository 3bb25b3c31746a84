#include "proxy/proxy_metrics.h"

#include <sstream>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace proxy {

struct ProxyMetrics::Impl {
  prometheus::Registry registry;
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter().Name("kube_cache_proxy_requests_total").Help("Requests answered, by verb, resource, code and origin.").Register(registry);
  prometheus::Family<prometheus::Histogram>& latency =
      prometheus::BuildHistogram()
          .Name("kube_cache_proxy_request_duration_seconds")
          .Help("Time to the end of the response for requests that are not long-running.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& upstream_errors =
      prometheus::BuildCounter().Name("kube_cache_proxy_upstream_errors_total").Help("Failures reaching the upstream apiserver.").Register(registry);
  prometheus::Gauge& open_connections = prometheus::BuildGauge()
                                             .Name("kube_cache_proxy_open_connections")
                                             .Help("Open downstream client connections.")
                                             .Register(registry)
                                             .Add({});
  prometheus::Gauge& open_streams = prometheus::BuildGauge()
                                         .Name("kube_cache_proxy_open_streams")
                                         .Help("Open long-running responses: watches, unbounded streams, upgrades.")
                                         .Register(registry)
                                         .Add({});
  prometheus::Family<prometheus::Gauge>& cached_watchers =
      prometheus::BuildGauge().Name("kube_cache_proxy_cached_watchers").Help("Open watches served from the cache.").Register(registry);
  prometheus::Family<prometheus::Counter>& cached_watch_events =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_cached_watch_events_sent_total")
          .Help("Events and bookmarks written to watches served from the cache.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& cached_watch_slow =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_cached_watchers_terminated_slow_total")
          .Help("Cached watches closed because their client did not keep up.")
          .Register(registry);
  prometheus::Counter& upstream_failed_fast =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_upstream_failed_fast_total")
          .Help("Requests answered 503 at once because the upstream apiserver was known to be unreachable.")
          .Register(registry)
          .Add({});
  prometheus::Family<prometheus::Counter>& write_sync_held =
      prometheus::BuildCounter()
          .Name("kube_cache_proxy_write_sync_held_total")
          .Help("Write answers held until the cache showed the write (outcome shown, timeout, skipped).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& write_sync_wait =
      prometheus::BuildHistogram()
          .Name("kube_cache_proxy_write_sync_wait_seconds")
          .Help("Time a held write answer waited for the cache to show the write.")
          .Register(registry);
  MetricsCollector collector;
};

namespace {
// A subset of apiserver_request_duration_seconds buckets: fine below 1 s where
// cache hits land, coarse up to the apiserver's 60 s request timeout.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                 0.25,  0.5,    1,     2.5,  5,     10,  30, 60};
// Read-your-writes waits: a watch event normally lands within milliseconds; the top
// buckets are the --write-sync-timeout range.
const prometheus::Histogram::BucketBoundaries kWriteSyncBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                                   0.05,   0.1,   0.25,   0.5,   1,    2.5, 5, 10};
}  // namespace

ProxyMetrics::ProxyMetrics() : impl_(std::make_unique<Impl>()) {}
ProxyMetrics::~ProxyMetrics() = default;

void ProxyMetrics::observeRequest(std::string_view verb, std::string_view resource, unsigned code,
                                  std::string_view served_by, double seconds, bool long_running) {
  impl_->requests
      .Add({{"verb", std::string(verb)},
            {"resource", std::string(resource)},
            {"code", std::to_string(code)},
            {"served_by", std::string(served_by)}})
      .Increment();
  if (!long_running) {
    impl_->latency.Add({{"verb", std::string(verb)}, {"served_by", std::string(served_by)}}, kLatencyBuckets)
        .Observe(seconds);
  }
}

void ProxyMetrics::upstreamError(std::string_view kind) {
  impl_->upstream_errors.Add({{"kind", std::string(kind)}}).Increment();
}

void ProxyMetrics::connectionOpened() { impl_->open_connections.Increment(); }
void ProxyMetrics::connectionClosed() { impl_->open_connections.Decrement(); }
void ProxyMetrics::streamOpened() { impl_->open_streams.Increment(); }
void ProxyMetrics::streamClosed() { impl_->open_streams.Decrement(); }

void ProxyMetrics::cachedWatchOpened(std::string_view resource) {
  impl_->cached_watchers.Add({{"resource", std::string(resource)}}).Increment();
}
void ProxyMetrics::cachedWatchClosed(std::string_view resource) {
  impl_->cached_watchers.Add({{"resource", std::string(resource)}}).Decrement();
}
void ProxyMetrics::cachedWatchEventsSent(std::string_view resource, uint64_t events) {
  if (events > 0) impl_->cached_watch_events.Add({{"resource", std::string(resource)}}).Increment(static_cast<double>(events));
}
void ProxyMetrics::cachedWatchTerminatedSlow(std::string_view resource) {
  impl_->cached_watch_slow.Add({{"resource", std::string(resource)}}).Increment();
}
void ProxyMetrics::upstreamFailedFast() { impl_->upstream_failed_fast.Increment(); }
void ProxyMetrics::writeSyncWaited(std::string_view resource, double seconds, bool shown) {
  impl_->write_sync_held.Add({{"resource", std::string(resource)}, {"outcome", shown ? "shown" : "timeout"}}).Increment();
  impl_->write_sync_wait.Add({{"resource", std::string(resource)}}, kWriteSyncBuckets).Observe(seconds);
}
void ProxyMetrics::writeSyncSkipped(std::string_view resource) {
  impl_->write_sync_held.Add({{"resource", std::string(resource)}, {"outcome", "skipped"}}).Increment();
}
void ProxyMetrics::setCollector(MetricsCollector collector) { impl_->collector = std::move(collector); }

std::string ProxyMetrics::renderText() const {
  std::vector<prometheus::MetricFamily> families = impl_->registry.Collect();
  if (impl_->collector) {
    for (CollectedFamily& collected : impl_->collector()) {
      prometheus::MetricFamily family;
      family.name = std::move(collected.name);
      family.help = std::move(collected.help);
      family.type = collected.counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
      for (CollectedFamily::Sample& sample : collected.samples) {
        prometheus::ClientMetric metric;
        for (auto& [name, value] : sample.labels) metric.label.push_back({std::move(name), std::move(value)});
        (collected.counter ? metric.counter.value : metric.gauge.value) = sample.value;
        family.metric.push_back(std::move(metric));
      }
      families.push_back(std::move(family));
    }
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace proxy
